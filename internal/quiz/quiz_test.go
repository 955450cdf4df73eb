package quiz

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

const benchJSON = `{"kind":"bench","engine":"kv","sync":"batch:64","ops":8000,"ops_per_sec":15000,
 "latency":{"put":{"count":8000,"p50_ns":2000,"p99_ns":150000,"exact":true}},
 "model":{"p99_path":"slow","predicted_ops_per_sec":14000}}`

const sweepJSON = `[{"threads":1,"ops_per_sec":1000},{"threads":2,"ops_per_sec":1900},{"threads":4,"ops_per_sec":3500}]`

func decode(t *testing.T, docs ...string) []any {
	t.Helper()
	var out []any
	for _, d := range docs {
		var v any
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestExprEvaluatesResults: operators with their precedence, paths into
// objects and arrays (negative indexes count from the end), comparisons and
// logic as 1 or 0, strings, and every function, on decoded results.
func TestExprEvaluatesResults(t *testing.T) {
	res := decode(t, benchJSON, sweepJSON)
	tests := []struct {
		expr string
		want string
	}{
		{"1 + 2 * 3", "7"},
		{"(1 + 2) * 3", "9"},
		{"-2 + 5", "3"},
		{"10 / 4", "2.5"},
		{"10 - 4 - 3", "3"},          // left to right, not 10 - (4 - 3)
		{"24 / 4 / 2", "3"},          // left to right, not 24 / (4 / 2)
		{"1 || 0 && 0", "1"},         // && binds tighter than ||
		{"1 + 1 == 2 && 3 > 2", "1"}, // sums, then comparisons, then &&
		{"$0.latency.put.p99_ns / $0.latency.put.p50_ns", "75"},
		{"$0.latency.put.exact", "1"},
		{"$1[2].ops_per_sec", "3500"},
		{"$1[-1].threads", "4"},
		{"len($1)", "3"},
		{"$0.ops > 1000 && $0.ops < 9000", "1"},
		{"$0.ops > 1000 && $0.ops > 9000", "0"},
		{"0 || 2", "1"},
		{"!0", "1"},
		{"3 <= 3", "1"},
		{"3 != 3", "0"},
		{`if($0.model.p99_path == "slow", 2, 1)`, "2"},
		{`$0.model.p99_path != 'fast'`, "1"},
		{"min(3, 4) + max(3, 4)", "7"},
		{"min(5, 2, 9) + max(5, 2, 9) + min(4)", "15"},
		{"median(9, 1, 5)", "5"},
		{"median(4, 1, 3, 2)", "2.5"},
		{"median(7)", "7"},
		{"abs(-2) + log10(1000) + sqrt(16)", "9"},
		{"1e3 + 1_000", "2000"},
		{"$0.ops_per_sec / $0.model.predicted_ops_per_sec", "1.071"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			e, err := ParseExpr(tt.expr)
			if err != nil {
				t.Fatalf("ParseExpr: %v", err)
			}
			v, err := e.Eval(res)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if got := v.String(); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestExprErrorsNameTheProblem: each parse or evaluation error says what
// was wrong (the field, the index, the function and its arity).
func TestExprErrorsNameTheProblem(t *testing.T) {
	res := decode(t, benchJSON, sweepJSON)
	tests := []struct {
		expr string
		want string // substring of the error
	}{
		{"", "empty"},
		{"1 +", "unexpected"},
		{"foo(1)", `unknown name "foo"`},
		{"min()", `unexpected ")"`},
		{"abs(1, 2)", "abs takes 1 arguments, got 2"},
		{"1 ? 2", "unexpected character"},
		{"(1 + 2", "want )"},
		{"$x", "want a line number"},
		{"$0.latency", "is a object, not a number"},
		{"$0.nope", `has no field "nope"`},
		{"$2.ops", "no result for line 2"},
		{"$1[5].ops", "out of range"},
		{"$1.ops", "is an array of 3"},
		{"1 / 0", "division by zero"},
		{`"a" < "b"`, "strings only compare"},
		{"log10(0)", "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			e, err := ParseExpr(tt.expr)
			if err == nil {
				_, err = e.Eval(res)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestParseErrorsNameTheKey: a malformed quiz block is refused with an
// error that names the key or line at fault.
func TestParseErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"no id", "question: q\ncell: a\nanswer: 1\ntolerance: 1", "id: is required"},
		{"no source", "id: a\nquestion: q\nanswer: 1\ntolerance: 1", "needs cell: NAME"},
		{"both", "id: a\nquestion: q\ncell: c\nrun: probe\nanswer: 1\ntolerance: 1", "both cell: and run:"},
		{"no tolerance", "id: a\nquestion: q\ncell: c\nanswer: 1", "tolerance: is required"},
		{"bad tolerance", "id: a\nquestion: q\ncell: c\nanswer: 1\ntolerance: lots", "want a relative N%"},
		{"factor below 1", "id: a\nquestion: q\ncell: c\nanswer: 1\ntolerance: ×0.5", "F above 1"},
		{"factor of 1", "id: a\nquestion: q\ncell: c\nanswer: 1\ntolerance: x1", "F above 1"},
		{"factor word", "id: a\nquestion: q\ncell: c\nanswer: 1\ntolerance: ×two", "a factor tolerance is ×F"},
		{"unknown key", "id: a\nquestion: q\ncell: c\nanswer: 1\ntolerance: 1\nhint: x", `unknown key "hint"`},
		{"not kv", "id: a\nthis is prose", "is not key: value"},
		{"choice tolerance", "id: a\nquestion: q\ncell: c\nanswer: 1\nchoices: x | y\ntolerance: 1", "does not apply"},
		{"one choice", "id: a\nquestion: q\ncell: c\nanswer: 1\nchoices: x", "at least 2"},
		{"run lines", "id: a\nquestion: q\nrun: probe\nanswer: $1.write_ns\ntolerance: 1", "only 1 run: lines"},
		{"bad answer", "id: a\nquestion: q\ncell: c\nanswer: $0 +\ntolerance: 1", "answer:"},
		{"dup key", "id: a\nid: b", "id given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestCheckGradesAgainstTolerance: numeric answers inside the tolerance
// (relative or absolute, with units and separators) are right and just
// outside it wrong; choice answers by index or text; and the feedback
// shows the measured values and the accepted range.
func TestCheckGradesAgainstTolerance(t *testing.T) {
	numeric := `
id: tail-ratio
question: How many times larger is p99 than p50?
cell: c
# the answer is never written down: it is computed
answer: $0.latency.put.p99_ns / $0.latency.put.p50_ns
tolerance: 20%
unit: x
show: p50 = $0.latency.put.p50_ns ns; p99 = $0.latency.put.p99_ns ns; ratio {$0.latency.put.p99_ns / $0.latency.put.p50_ns}
explain: The tail is the fsync.`
	choice := `
id: path
question: Which path does p99 land on?
run: bench -engine kv -sync batch:64 -ops 2000
answer: if($0.model.p99_path == "slow", 2, 1)
choices: the fast path | the slow path`
	absolute := `
id: abs
question: ops?
cell: c
answer: $0.ops
tolerance: 10`
	factor := `
id: factor
question: How many times larger is p99 than p50?
cell: c
answer: $0.latency.put.p99_ns / $0.latency.put.p50_ns
tolerance: ×2
unit: x`
	res := decode(t, benchJSON)
	tests := []struct {
		quiz, answer string
		correct      bool
		want         string
	}{
		{numeric, "75", true, "75"},
		{numeric, "62x", true, "75"},
		{numeric, "89.9 x", true, "75"},
		{numeric, "59", false, "75"},
		{numeric, "91", false, "75"},
		{choice, "2", true, "the slow path"},
		{choice, "the slow path", true, "the slow path"},
		{choice, "1", false, "the slow path"},
		{absolute, "8,009.0", true, "8000"},
		{absolute, "8011", false, "8000"},
		// ×2 around 75: half to twice, symmetric on a log scale, where
		// ±50 % would accept 37.5 (half) and refuse 150 (twice).
		{factor, "37.5", true, "75"},
		{factor, "150", true, "75"},
		{factor, "37", false, "75"},
		{factor, "151", false, "75"},
	}
	for _, tt := range tests {
		q, err := Parse(tt.quiz)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(q.ID+"/"+tt.answer, func(t *testing.T) {
			fb, err := Check(q, res, tt.answer)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if fb.Correct != tt.correct || fb.Want != tt.want {
				t.Errorf("got correct=%v want=%q, want correct=%v want=%q", fb.Correct, fb.Want, tt.correct, tt.want)
			}
		})
	}
	q, _ := Parse(numeric)
	fb, _ := Check(q, res, "75")
	if want := "p50 = 2.0 µs; p99 = 150.0 µs; ratio 75"; fb.Shown != want {
		t.Errorf("got shown %q, want %q", fb.Shown, want)
	}
	if fb.Range != "60 to 90" {
		t.Errorf("got range %q, want %q", fb.Range, "60 to 90")
	}
}

// TestFeedbackRangeJSON: a numeric quiz's reply always carries its
// accepted range, even when an end of it is 0 (a script reads low and
// high); a choice quiz's reply has none.
func TestFeedbackRangeJSON(t *testing.T) {
	res := decode(t, benchJSON)
	for _, tt := range []struct {
		quiz string
		want []string
		not  []string
	}{
		{"id: zero\nquestion: q?\ncell: c\nanswer: $0.ops - $0.ops\ntolerance: 5", []string{`"low":-5`, `"high":5`}, nil},
		{"id: from-zero\nquestion: q?\ncell: c\nanswer: $0.ops / $0.ops\ntolerance: 100%", []string{`"low":0`, `"high":2`}, nil},
		{"id: pick\nquestion: q?\ncell: c\nchoices: a | b\nanswer: 2", nil, []string{`"low"`, `"high"`}},
	} {
		q, err := Parse(tt.quiz)
		if err != nil {
			t.Fatal(err)
		}
		fb, err := Check(q, res, "1")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(fb)
		for _, w := range tt.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: got %s, want it to contain %s", q.ID, b, w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(string(b), w) {
				t.Errorf("%s: got %s, want no %s", q.ID, b, w)
			}
		}
	}
}

func TestCheckBadInput(t *testing.T) {
	q, err := Parse("id: a\nquestion: q\ncell: c\nanswer: $1.ops\ntolerance: 1\nchoices:")
	if err == nil {
		t.Fatal("empty choices: got no error")
	}
	q, err = Parse("id: a\nquestion: q\ncell: c\nanswer: $1.ops\ntolerance: 1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(q, decode(t, benchJSON), "1"); err == nil || !strings.Contains(err.Error(), "run the cell first") {
		t.Errorf("too few results: got %v, want an error saying to run the cell", err)
	}
	if _, err := Check(q, decode(t, benchJSON, benchJSON), "lots"); !errors.Is(err, ErrBadAnswer) {
		t.Errorf("non-numeric answer: got %v, want ErrBadAnswer", err)
	}
}

func TestShowTextUnits(t *testing.T) {
	res := []any{map[string]any{"a_ns": 6677921.0, "n": 5000.0}}
	tests := []struct {
		show, want string
	}{
		{"p99 = $0.a_ns ns", "p99 = 6.68 ms"},
		{"p99 = $0.a_ns ns, n = $0.n", "p99 = 6.68 ms, n = 5000"},
		{"{$0.a_ns / 1000} ns.", "6.7 µs."},
		{"$0.a_ns nsec", "6677921 nsec"},
		{"$0.n samples", "5000 samples"},
		{"$0.a_ns", "6677921"},
	}
	for _, tt := range tests {
		q, err := Parse("id: u\nquestion: q\ncell: c\nanswer: 1\ntolerance: 1\nshow: " + tt.show + "\n")
		if err != nil {
			t.Fatalf("%q: %v", tt.show, err)
		}
		got, err := q.ShowText(res)
		if err != nil {
			t.Fatalf("%q: %v", tt.show, err)
		}
		if got != tt.want {
			t.Errorf("show %q: got %q, want %q", tt.show, got, tt.want)
		}
	}
}

// Results near the float64 limit must give an error, never an infinite
// answer that JSON cannot carry.
func TestCheckNonFinite(t *testing.T) {
	res := []any{map[string]any{"big": 1e300, "tiny": 1e-300, "max": math.MaxFloat64}}
	tests := []struct {
		answer, tol string
	}{
		{"$0.big / $0.tiny", "1"},
		{"$0.big * $0.big", "1"},
		{"$0.max", "50%"},
	}
	for _, tt := range tests {
		q, err := Parse("id: inf\nquestion: q\ncell: c\nanswer: " + tt.answer + "\ntolerance: " + tt.tol + "\n")
		if err != nil {
			t.Fatal(err)
		}
		fb, err := Check(q, res, "1")
		if err == nil || !strings.Contains(err.Error(), "not a finite number") {
			t.Errorf("%s ± %s: got %+v, %v, want an error saying it is not a finite number", tt.answer, tt.tol, fb, err)
		}
	}
}
