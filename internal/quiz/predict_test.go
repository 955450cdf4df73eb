package quiz

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParsePredictKey: predict: takes yes or no, and a run: quiz is always
// a prediction.
func TestParsePredictKey(t *testing.T) {
	base := "id: p\nquestion: ?\ncell: c\nanswer: $0.ops_per_sec\ntolerance: 20%\n"
	for _, tt := range []struct {
		extra      string
		predict    bool
		prediction bool
		wantErr    string
	}{
		{"", false, false, ""},
		{"predict: yes", true, true, ""},
		{"predict: no", false, false, ""},
		{"predict: maybe", false, false, `predict: "maybe": want yes, reason or no`},
	} {
		q, err := Parse(base + tt.extra)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: got error %v, want one containing %q", tt.extra, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.extra, err)
		}
		if q.Predict != tt.predict || q.IsPrediction() != tt.prediction {
			t.Errorf("%q: Predict %v IsPrediction %v, want %v %v", tt.extra, q.Predict, q.IsPrediction(), tt.predict, tt.prediction)
		}
	}
	q, err := Parse("id: r\nquestion: ?\nrun: bench -engine kv -ops 100\nanswer: $0.ops_per_sec\ntolerance: 20%")
	if err != nil {
		t.Fatal(err)
	}
	if !q.IsPrediction() {
		t.Error("a run: quiz: IsPrediction false, want true (it measures only when checked)")
	}
}

// Every reply says how far the answer was from the measurement.
func TestCheckSaysHowFarOff(t *testing.T) {
	var res any
	if err := json.Unmarshal([]byte(`{"ops_per_sec": 1000, "zero": 0}`), &res); err != nil {
		t.Fatal(err)
	}
	num, _ := Parse("id: n\nquestion: ?\ncell: c\npredict: yes\nanswer: $0.ops_per_sec\ntolerance: 20%")
	zero, _ := Parse("id: z\nquestion: ?\ncell: c\nanswer: $0.zero\ntolerance: 1")
	for _, tt := range []struct {
		q              *Quiz
		answer         string
		off            string
		factor, percnt float64 // NaN-free; -1 means absent
	}{
		{num, "1000", "exactly the measured value", 1, 0},
		{num, "1150", "15% above the measured value", 1.15, 15},
		{num, "800", "20% below the measured value", 0.8, -20},
		{num, "3200", "3.2× the measured value", 3.2, 220},
		{num, "100", "0.1× the measured value", 0.1, -90},
		{num, "-50", "105% below the measured value", -1, -105},
		{zero, "0.5", "0.5 from the measured value", -1, -1},
	} {
		fb, err := Check(tt.q, []any{res}, tt.answer)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.q.ID, tt.answer, err)
		}
		if fb.Off != tt.off {
			t.Errorf("%s %s: off %q, want %q", tt.q.ID, tt.answer, fb.Off, tt.off)
		}
		check := func(name string, got *float64, want float64) {
			switch {
			case want == -1 && got != nil:
				t.Errorf("%s %s: %s %v, want absent", tt.q.ID, tt.answer, name, *got)
			case want != -1 && (got == nil || abs(*got-want) > 1e-9):
				t.Errorf("%s %s: %s %v, want %v", tt.q.ID, tt.answer, name, got, want)
			}
		}
		check("off_factor", fb.OffFactor, tt.factor)
		check("off_percent", fb.OffPercent, tt.percnt)
	}
	choice, _ := Parse("id: c\nquestion: ?\ncell: c\npredict: yes\nchoices: slow | fast\nanswer: if($0.ops_per_sec > 500, 2, 1)")
	for answer, want := range map[string]string{"fast": "right", "slow": "wrong"} {
		fb, err := Check(choice, []any{res}, answer)
		if err != nil {
			t.Fatal(err)
		}
		if fb.Off != want || fb.OffFactor != nil || fb.OffPercent != nil {
			t.Errorf("choice %s: off %q factor %v percent %v, want %q and no numbers", answer, fb.Off, fb.OffFactor, fb.OffPercent, want)
		}
	}
	run, _ := Parse("id: r\nquestion: ?\nrun: bench -engine kv -ops 100\nanswer: $0.ops_per_sec\ntolerance: 20%")
	if fb, _ := Check(run, []any{res}, "900"); !fb.Predicted {
		t.Error("run: quiz: predicted false, want true")
	}
	if fb, _ := Check(num, []any{res}, "900"); fb.Predicted {
		t.Error("cell: quiz checked without a claim of prediction: predicted true, want false (the server sets it from the request)")
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestRefsListEveryResultPath: Refs gives each $path an expression reads,
// in order, with the field it ends in and whether len() reads it.
func TestRefsListEveryResultPath(t *testing.T) {
	e, err := ParseExpr(`$1.lost_acked / max(len($1.per_trial), 1) + $0[2].latency.put.p99_ns + $0.timeline[-1].ops`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range e.Refs() {
		s := r.Text + " field=" + r.Field()
		if r.Len {
			s += " len"
		}
		got = append(got, s)
	}
	want := []string{"$1.lost_acked field=lost_acked", "$1.per_trial field=per_trial len", "$0[2].latency.put.p99_ns field=p99_ns", "$0.timeline[-1].ops field=ops"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("Refs:\n got %q\nwant %q", got, want)
	}
}
