// Package quiz parses the quiz blocks of kvlab lessons and checks a
// student's answer against real measurements.
//
// A quiz never holds its answer. It holds an expression that computes the
// answer from results measured on this server: either the student's latest
// results of a named lab cell (which the browser keeps and sends with the
// answer) or the results of its own run: lines, measured through the same
// queue as every other run when the answer is checked.
//
// The block is key: value lines; '#' starts a comment line:
//
//	id: tail-ratio
//	question: From your run, how many times larger is p99 than p50?
//	cell: always-run
//	answer: $0.latency.put.p99_ns / $0.latency.put.p50_ns
//	tolerance: 30%
//	unit: x
//	show: p50 = $0.latency.put.p50_ns ns; p99 = $0.latency.put.p99_ns ns
//	explain: The slow path is an fdatasync; it sets the tail.
//
// Keys: id (required; letters, digits, '-'), question (required), cell or
// run (exactly one kind; run may repeat, one run-spec line each, read as
// $0, $1, ...), answer (required expression), tolerance (numeric quizzes:
// "N%" relative or an absolute number), unit, choices ("a | b | c"; the
// answer then evaluates to a 1-based index), show (text in which each
// $path and each {expression} is replaced by its measured value), explain,
// predict (yes or no; default no), edit (the flags a reader may change
// in the cell and still be graded: see "Which runs grade a quiz" in
// edit.go), repeat (the number of runs a cell: quiz is graded on: see
// "Graded on several runs" in repeat.go).
//
// # Predict, then measure
//
// A quiz is a prediction when the reader answers before the number
// exists: a run: quiz always is (it measures only when checked), and a
// cell: quiz is when it says "predict: yes". For such a cell: quiz the page
// keeps the cell's Run button locked until the reader has entered a
// prediction in every predicting quiz on that cell, which the server
// stores (POST /api/predict); when the cell's results arrive the page
// sends the prediction as the answer. The server, not the page, decides
// that it came first (by the archive's times) and grades it once, against
// the first run after it (internal/server, quizpredict.go).
//
// Every reply says how far the answer was from the measurement, so a
// prediction is graded by distance as well as by tolerance (additions to
// [Feedback], documented in docs/api.md):
//
//	"predicted":   true when the answer was a prediction the server
//	               stored before the graded runs started (set by the
//	               server; Check sets it for run: quizzes)
//	"off":         the distance in words: "2.4× the measured value",
//	               "15% below the measured value", "exactly the measured
//	               value"; for a choice quiz "right" or "wrong"
//	"off_factor":  answer ÷ measured (numeric quizzes, both positive)
//	"off_percent": (answer − measured) ÷ |measured| × 100 (numeric, measured ≠ 0)
//
// The measured value itself is "want" / "want_value", as for every quiz;
// the explanation follows in "explain".
//
// Expressions are described on [Expr].
//
// # Why the package has its own evaluator
//
// expr.go (about 700 lines) could be replaced by github.com/expr-lang/expr
// v1.17.8, whose syntax reads the same ($ is a letter there, so
// "$1.ops_per_sec / max($0.ops_per_sec, 1)" parses as written). It is
// kept, for what lesson authors and students would lose, measured by
// evaluating this package's expression tests with expr-lang:
//
//   - Errors stop naming the field. "$0.nope * 2" gives expr-lang's
//     "invalid operation: <nil> * int (1:9)"; here it is
//     `$0.nope: $0 has no field "nope"`, and Check puts the quiz id in
//     front ("quiz tail: computing the answer from the results: ...").
//     Getting that back means walking expr-lang's tree before each run.
//   - The quiz semantics differ: here comparisons and logic give 1 or 0
//     and JSON booleans read as 1 and 0 (choice answers are built from
//     them); expr-lang has typed booleans, so "0 || 2", "!0" and
//     arithmetic on $0.latency.put.exact are type errors there. "1 / 0"
//     and "log10(0)" give infinities instead of an error that says why;
//     "if(c, a, b)" needs the if operator switched off and a function of
//     our own; an undefined $N reads as nil.
//   - refs.go and internal/lesson read the parsed tree (which $paths an
//     answer reads, how many result lines it needs) to check that every
//     quiz depends on a measurement; that would have to be rewritten
//     against expr-lang's AST.
//   - The labserver binary grows by 1.14 MB (50.16 to 51.31 MB; stripped
//     with -s -w, 34.67 to 35.52 MB, +2.4%), measured with go1.26.8
//     linux/amd64 by building it with and without a use of expr.Compile
//     and expr.Run. The in-browser wasm worker is unaffected either way:
//     it does not import this package.
//   - Both are deterministic. FuzzExpr fuzzes this evaluator directly;
//     after a switch it would fuzz our wrapper and someone else's parser.
package quiz

import (
	"errors"
	"fmt"
	"kvlab/harness/calc"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Quiz is one parsed quiz block. It is immutable after Parse and safe for
// concurrent use.
type Quiz struct {
	ID       string
	Question string
	Cell     string   // name of the lab cell whose results the answer reads; "" when Run is used
	Run      []string // run-spec lines the quiz measures itself; nil when Cell is used
	Answer   *Expr
	Tol      Tolerance // zero for choice quizzes
	Unit     string
	Choices  []string // non-nil makes this a choice quiz
	Show     string   // template; see ShowText
	Explain  string
	// Predict is "predict: yes": the page locks Cell's Run button until
	// the reader has entered a prediction here. See IsPrediction.
	Predict bool
	// Reason is "predict: reason": a quiz asked before the run and graded
	// against it like a prediction, whose answer is the same on every
	// disk (it follows from how the engine or the schedule works). The
	// page shows it as "Reason it out", never as a prediction of the
	// reader's disk; the lessons' disk check (a predict: yes quiz must
	// come out differently on a fast and a slow simulated disk) skips it.
	Reason bool
	// Edit names the flags a reader may change in Cell's lines and still
	// have the run grade this quiz ("edit: -rate, -ops"); see LineGrades.
	Edit []string
	// Repeat is "repeat: K": the quiz is graded on K runs of Cell, against
	// their median, or not at all when they spread wider than the band
	// (too noisy); 0 for one run. See CheckRepeated.
	Repeat int

	show []showPart
}

// Tolerance is how far a numeric answer may be from the measured one.
type Tolerance struct {
	Value    float64
	Relative bool // Value is a fraction of the measured answer (30% -> 0.3)
	// Factor: Value is a factor (×2 -> 2), and the band runs from the
	// measured answer divided by it to the measured answer times it. A
	// ratio of tail latencies moves from run to run by a factor, not by
	// a fixed share: 2.0 and 5.3 on one disk are as far apart as 20 and
	// 53 on another, and a percent band around one of them is lopsided
	// (±60 % of 3.3 is 1.3 to 5.3: three times too low is graded right
	// and three times too high wrong).
	Factor bool
}

func (t Tolerance) String() string {
	switch {
	case t.Factor:
		return "×" + FormatNumber(t.Value)
	case t.Relative:
		return FormatNumber(t.Value*100) + "%"
	}
	return FormatNumber(t.Value)
}

// Lines returns how many results the answer needs: the highest $N used, plus one.
func (q *Quiz) Lines() int {
	m := q.Answer.maxLine()
	for _, p := range q.show {
		if p.expr != nil {
			m = max(m, p.expr.maxLine())
		}
	}
	return m + 1
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9-]+$`)

var knownKeys = "id, question, cell, run, answer, tolerance, unit, choices, show, explain, predict, edit, repeat"

// IsPrediction reports whether the reader answers before the measurement
// exists: a run: quiz (it measures when checked) or a cell: quiz with
// predict: yes (its cell is locked until the prediction is entered).
func (q *Quiz) IsPrediction() bool { return q.Predict || q.Run != nil }

// Parse parses the text of one quiz block: it reads the key: value lines,
// checks that the keys a quiz needs are there and agree, and compiles the
// answer, tolerance and show template.
func Parse(text string) (*Quiz, error) {
	q := &Quiz{}
	b, err := q.readLines(text)
	if err != nil {
		return nil, err
	}
	if err := q.checkKeys(b); err != nil {
		return nil, err
	}
	if err := q.compile(b); err != nil {
		return nil, err
	}
	return q, nil
}

// block holds the values Parse compiles only once every line is read.
type block struct {
	answer, tol string
}

// readLines reads the block's key: value lines into q, and the answer and
// tolerance into the returned block. Errors name the line.
func (q *Quiz) readLines(text string) (block, error) {
	var b block
	seen := map[string]bool{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		key = strings.TrimSpace(key)
		val = strings.TrimSpace(val)
		if !ok || key == "" || strings.ContainsAny(key, " \t") {
			return b, fmt.Errorf("quiz line %d: %q is not key: value (keys: %s)", n+1, line, knownKeys)
		}
		if seen[key] && key != "run" {
			return b, fmt.Errorf("quiz line %d: %s given twice", n+1, key)
		}
		seen[key] = true
		if err := q.set(&b, key, val); err != nil {
			return b, fmt.Errorf("quiz line %d: %w", n+1, err)
		}
	}
	return b, nil
}

// set stores one key's value, in q or, for answer and tolerance, in b.
func (q *Quiz) set(b *block, key, val string) error {
	switch key {
	case "id":
		if !idRE.MatchString(val) {
			return fmt.Errorf("id %q: use letters, digits and '-'", val)
		}
		q.ID = val
	case "question":
		q.Question = val
	case "cell":
		if !idRE.MatchString(val) {
			return fmt.Errorf("cell %q: a cell name has letters, digits and '-'", val)
		}
		q.Cell = val
	case "run":
		if val == "" {
			return errors.New("run: needs a run-spec line (e.g. bench -engine kv -ops 2000)")
		}
		q.Run = append(q.Run, val)
	case "answer":
		b.answer = val
	case "tolerance":
		b.tol = val
	case "unit":
		q.Unit = val
	case "choices":
		return q.setChoices(val)
	case "show":
		q.Show = val
	case "explain":
		q.Explain = val
	case "edit":
		return q.setEdit(val)
	case "repeat":
		return q.setRepeat(val)
	case "predict":
		switch val {
		case "yes":
			q.Predict = true
		case "reason":
			q.Predict, q.Reason = true, true
		case "no":
		default:
			return fmt.Errorf("predict: %q: want yes, reason or no", val)
		}
	default:
		return fmt.Errorf("unknown key %q (keys: %s)", key, knownKeys)
	}
	return nil
}

// setChoices reads "a | b | c" into q.Choices.
func (q *Quiz) setChoices(val string) error {
	for c := range strings.SplitSeq(val, "|") {
		c = strings.TrimSpace(c)
		if c == "" {
			return fmt.Errorf("choices: empty choice in %q (separate choices with |)", val)
		}
		q.Choices = append(q.Choices, c)
	}
	if len(q.Choices) < 2 {
		return fmt.Errorf("choices: want at least 2 choices separated by |, got %d", len(q.Choices))
	}
	return nil
}

// name is how errors name the quiz: "quiz ID", or "quiz" before the id is known.
func (q *Quiz) name() string {
	if q.ID == "" {
		return "quiz"
	}
	return "quiz " + q.ID
}

// checkKeys checks that the keys every quiz needs are there and that it
// reads exactly one kind of results (cell: or run:).
func (q *Quiz) checkKeys(b block) error {
	name := q.name()
	switch {
	case q.ID == "":
		return errors.New("quiz: id: is required")
	case q.Question == "":
		return fmt.Errorf("%s: question: is required", name)
	case b.answer == "":
		return fmt.Errorf("%s: answer: is required (an expression over the results, e.g. $0.latency.put.p99_ns)", name)
	case q.Cell == "" && q.Run == nil:
		return fmt.Errorf("%s: needs cell: NAME (the student's results of that lab cell) or run: LINE (measured when checked)", name)
	case q.Cell != "" && q.Run != nil:
		return fmt.Errorf("%s: has both cell: and run:; use one", name)
	case q.Edit != nil && q.Cell == "":
		return fmt.Errorf("%s: edit: applies to a cell: quiz (a run: quiz measures its own lines)", name)
	case q.Repeat > 0 && (q.Cell == "" || q.Choices != nil):
		return fmt.Errorf("%s: repeat: applies to a numeric cell: quiz", name)
	}
	return nil
}

// compile parses the answer expression, the tolerance (numeric quizzes
// only) and the show template, and checks that a run: quiz has a line
// for every $N it reads.
func (q *Quiz) compile(b block) error {
	name := q.name()
	var err error
	if q.Answer, err = ParseExpr(b.answer); err != nil {
		return fmt.Errorf("%s: answer: %v", name, err)
	}
	switch {
	case q.Choices != nil && b.tol != "":
		return fmt.Errorf("%s: tolerance: does not apply to a choice quiz (its answer is a 1-based choice index)", name)
	case q.Choices == nil && b.tol == "":
		return fmt.Errorf("%s: tolerance: is required for a numeric quiz (e.g. 30%% or 0.5)", name)
	case q.Choices == nil:
		if q.Tol, err = parseTolerance(b.tol); err != nil {
			return fmt.Errorf("%s: tolerance: %v", name, err)
		}
	}
	if q.show, err = parseShow(q.Show); err != nil {
		return fmt.Errorf("%s: show: %v", name, err)
	}
	if q.Run != nil && q.Lines() > len(q.Run) {
		return fmt.Errorf("%s: uses $%d but has only %d run: lines", name, q.Lines()-1, len(q.Run))
	}
	return nil
}

func parseTolerance(s string) (Tolerance, error) {
	if num, ok := strings.CutPrefix(s, "×"); ok || strings.HasPrefix(s, "x") {
		if !ok {
			num = s[1:]
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || !(f > 1) || f > 1000 {
			return Tolerance{}, fmt.Errorf("%q: a factor tolerance is ×F with F above 1 and at most 1000 (×2 accepts half to twice the measured answer)", s)
		}
		return Tolerance{Value: f, Factor: true}, nil
	}
	rel := strings.HasSuffix(s, "%")
	num := strings.TrimSpace(strings.TrimSuffix(s, "%"))
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return Tolerance{}, fmt.Errorf("%q: want a relative N%% (e.g. 30%%), a factor ×F (e.g. ×2) or an absolute number >= 0", s)
	}
	if rel {
		if f > 1000 {
			return Tolerance{}, fmt.Errorf("%q: a relative tolerance must be between 0%% and 1000%%", s)
		}
		return Tolerance{Value: f / 100, Relative: true}, nil
	}
	return Tolerance{Value: f}, nil
}

type showPart struct {
	text string
	expr *Expr
}

var showPathRE = regexp.MustCompile(`\$[0-9]+(?:\.[A-Za-z0-9_]+|\[-?[0-9]+\])*`)

// parseShow splits a show template into literal text, $paths and {expressions}.
func parseShow(s string) ([]showPart, error) {
	var parts []showPart
	for s != "" {
		brace := strings.IndexByte(s, '{')
		loc := showPathRE.FindStringIndex(s)
		switch {
		case brace >= 0 && (loc == nil || brace < loc[0]):
			end := strings.IndexByte(s[brace:], '}')
			if end < 0 {
				return nil, fmt.Errorf("missing } after %q", s[brace:])
			}
			e, err := ParseExpr(s[brace+1 : brace+end])
			if err != nil {
				return nil, err
			}
			parts = append(parts, showPart{text: s[:brace]}, showPart{expr: e})
			s = s[brace+end+1:]
		case loc != nil:
			e, err := ParseExpr(s[loc[0]:loc[1]])
			if err != nil {
				return nil, err
			}
			parts = append(parts, showPart{text: s[:loc[0]]}, showPart{expr: e})
			s = s[loc[1]:]
		default:
			parts = append(parts, showPart{text: s})
			s = ""
		}
	}
	return parts, nil
}

// ShowText renders the show template against results. A value written
// in nanoseconds ("$0.latency.put.p99_ns ns") is shown the way the
// result table shows it ("6.68 ms"), so the student can find it there.
func (q *Quiz) ShowText(results []any) (string, error) {
	var b strings.Builder
	skipNs := false
	for i, p := range q.show {
		if p.expr == nil {
			if skipNs {
				b.WriteString(p.text[len(" ns"):])
				skipNs = false
				continue
			}
			b.WriteString(p.text)
			continue
		}
		v, err := p.expr.Eval(results)
		if err != nil {
			return "", err
		}
		if !v.IsStr && i+1 < len(q.show) && nsSuffix(q.show[i+1]) {
			b.WriteString(calc.FormatNs(v.Num))
			skipNs = true
			continue
		}
		b.WriteString(v.String())
	}
	return b.String(), nil
}

// nsSuffix reports whether p is literal text that starts with the unit
// " ns" as a whole word.
func nsSuffix(p showPart) bool {
	if p.expr != nil || !strings.HasPrefix(p.text, " ns") {
		return false
	}
	rest := p.text[len(" ns"):]
	return rest == "" || !unicode.IsLetter(rune(rest[0])) && rest[0] != '_'
}

// Feedback is the outcome of checking one answer.
type Feedback struct {
	ID      string   `json:"id"`
	Correct bool     `json:"correct"`
	Answer  string   `json:"answer"`         // the student's answer as given (choice quizzes: the choice text)
	Want    string   `json:"want"`           // the measured answer, formatted (choice quizzes: the right choice)
	WantNum float64  `json:"want_value"`     // the measured answer as a number (choice quizzes: 1-based index)
	Low     *float64 `json:"low,omitempty"`  // accepted range for numeric quizzes; absent for choices
	High    *float64 `json:"high,omitempty"` //
	Range   string   `json:"range,omitempty"`
	Unit    string   `json:"unit,omitempty"`
	Shown   string   `json:"shown,omitempty"` // the show template filled with measured values
	Explain string   `json:"explain,omitempty"`

	// How far the answer was from the measurement; see the package doc.
	Predicted  bool     `json:"predicted,omitempty"`
	Off        string   `json:"off,omitempty"`
	OffFactor  *float64 `json:"off_factor,omitempty"`
	OffPercent *float64 `json:"off_percent,omitempty"`

	// Spread is what the runs of a repeat: quiz gave (CheckRepeated).
	Spread *Spread `json:"spread,omitempty"`
	// TooNoisy is set when the rounds of a repeat: quiz spread wider than
	// its band allows around their median: the machine was too noisy to
	// grade the answer, so it is neither right nor wrong (Correct is
	// false); Spread.Text says so.
	TooNoisy bool `json:"too_noisy,omitempty"`
	// Busy says, for a prediction whose runs were measured on a busy
	// machine (busy.go), what the runs' conditions showed; TooNoisy is
	// then set, and the prediction neither right nor wrong.
	Busy string `json:"busy,omitempty"`
}

// ErrBadAnswer wraps errors about the student's answer itself (not a
// number, not one of the choices). It is not a wrong answer: the student
// should fix the input and try again.
var ErrBadAnswer = errors.New("quiz: bad answer")

// Check compares the student's answer with the one computed from results,
// where results[N] is the decoded JSON (encoding/json into any) of line N
// of the cell or of the quiz's run: lines.
func Check(q *Quiz, results []any, answer string) (Feedback, error) {
	fb := Feedback{ID: q.ID, Unit: q.Unit, Explain: q.Explain, Predicted: q.Run != nil}
	want, err := q.Evaluate(results)
	if err != nil {
		return fb, err
	}
	if fb.Shown, err = q.ShowText(results); err != nil {
		return fb, fmt.Errorf("quiz %s: show: %v", q.ID, err)
	}
	fb.WantNum = want
	answer = strings.TrimSpace(answer)
	if q.Choices != nil {
		return q.checkChoice(fb, want, answer)
	}
	low, high := q.band(want)
	return q.checkNumber(fb, want, low, high, answer)
}

// DeclineIfBusy turns the verdict on a prediction (an answer given
// before its runs: the caller knows) into no verdict when those runs
// were measured on a busy machine (busy.go), saying why; fb is returned
// as it was when they were not.
func DeclineIfBusy(fb Feedback, rounds ...[]any) Feedback {
	if why := Busy(rounds...); why != "" {
		fb.TooNoisy, fb.Correct, fb.Busy = true, false, why
	}
	return fb
}

// band is the range of answers the tolerance accepts around want: want
// plus and minus the tolerance (or that fraction of want when it is
// relative), or want divided and multiplied by it when it is a factor.
// A factor band around a measured answer of zero or below is that answer
// alone: no factor reaches it from a positive guess.
func (q *Quiz) band(want float64) (low, high float64) {
	switch {
	case q.Tol.Factor:
		if want <= 0 {
			return want, want
		}
		return want / q.Tol.Value, want * q.Tol.Value
	case q.Tol.Relative:
		d := math.Abs(want) * q.Tol.Value
		return want - d, want + d
	}
	return want - q.Tol.Value, want + q.Tol.Value
}

// Evaluate computes the quiz's answer from one set of results, where
// results[N] is the decoded JSON of line N: a finite number, or an error
// that says why not. It is the one computation of a quiz's answer:
// Check and CheckRepeated grade a reader's answer against it, and a
// room's poll is measured by it.
func (q *Quiz) Evaluate(results []any) (float64, error) {
	if need := q.Lines(); len(results) < need {
		if q.Cell != "" {
			return 0, fmt.Errorf("quiz %s needs the results of %d line(s) of cell %s, got %d: run the cell first", q.ID, need, q.Cell, len(results))
		}
		return 0, fmt.Errorf("quiz %s needs %d result(s), got %d", q.ID, need, len(results))
	}
	want, err := q.Answer.Eval(results)
	if err != nil {
		return 0, fmt.Errorf("quiz %s: computing the answer from the results: %v", q.ID, err)
	}
	if want.IsStr {
		return 0, fmt.Errorf("quiz %s: the answer expression gave the string %q, want a number", q.ID, want.Str)
	}
	if math.IsNaN(want.Num) || math.IsInf(want.Num, 0) {
		return 0, fmt.Errorf("quiz %s: the answer expression gave %s, not a finite number: the results hold values too large to compute with", q.ID, FormatNumber(want.Num))
	}
	return want.Num, nil
}

// checkChoice grades a choice answer against the measured choice index.
func (q *Quiz) checkChoice(fb Feedback, want float64, answer string) (Feedback, error) {
	idx := int(want)
	if float64(idx) != want || idx < 1 || idx > len(q.Choices) {
		return fb, fmt.Errorf("quiz %s: the answer expression gave %s, want a choice index 1..%d", q.ID, FormatNumber(want), len(q.Choices))
	}
	fb.Want = q.Choices[idx-1]
	got, err := q.choiceIndex(answer)
	if err != nil {
		return fb, err
	}
	fb.Answer = q.Choices[got-1]
	fb.Correct = got == idx
	fb.Off = "wrong"
	if fb.Correct {
		fb.Off = "right"
	}
	return fb, nil
}

// checkNumber grades a numeric answer against want, accepting low to high.
func (q *Quiz) checkNumber(fb Feedback, want, low, high float64, answer string) (Feedback, error) {
	got, err := ParseNumber(answer, q.Unit)
	if err != nil {
		return fb, err
	}
	fb.Answer = answer
	fb.Want = FormatNumber(want)
	if math.IsInf(low, 0) || math.IsInf(high, 0) {
		return fb, fmt.Errorf("quiz %s: the accepted range around %s is not a finite number: the results hold values too large to compute with", q.ID, FormatNumber(want))
	}
	fb.Low, fb.High = &low, &high
	fb.Range = FormatNumber(low) + " to " + FormatNumber(high)
	fb.Correct = got >= low && got <= high
	fb.Off, fb.OffFactor, fb.OffPercent = distance(got, want)
	return fb, nil
}

func (q *Quiz) choiceIndex(answer string) (int, error) {
	if n, err := strconv.Atoi(answer); err == nil {
		if n < 1 || n > len(q.Choices) {
			return 0, fmt.Errorf("%w: choice %d: pick 1 to %d", ErrBadAnswer, n, len(q.Choices))
		}
		return n, nil
	}
	for i, c := range q.Choices {
		if strings.EqualFold(c, answer) {
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("%w: %q is not one of the choices: %s", ErrBadAnswer, answer, strings.Join(q.Choices, " | "))
}
