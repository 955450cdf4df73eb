package quiz

import (
	"strings"
	"testing"
)

func TestCheckRepeated(t *testing.T) {
	q, err := Parse("id: q\nquestion: ?\ncell: c\nrepeat: 3\nanswer: $0.ratio\ntolerance: 15%\nunit: x\nshow: ratio $0.ratio")
	if err != nil {
		t.Fatal(err)
	}
	rounds := [][]any{{map[string]any{"ratio": 852.0}}, {map[string]any{"ratio": 104.0}}, {map[string]any{"ratio": 300.0}}}
	for _, tt := range []struct {
		answer  string
		correct bool
	}{
		{"300", true}, {"104", true}, {"852", true}, {"90", false}, {"1000", false},
	} {
		fb, err := CheckRepeated(q, rounds, tt.answer)
		if err != nil {
			t.Fatal(err)
		}
		if fb.Correct != tt.correct {
			t.Errorf("answer %s: correct %v, want %v (range %s)", tt.answer, fb.Correct, tt.correct, fb.Range)
		}
		if fb.Want != "300" || fb.Shown != "ratio 300" || *fb.Low != 104 || *fb.High != 852 {
			t.Errorf("answer %s: want %s shown %q range %v to %v; want the median 300 shown from its run, 104 to 852", tt.answer, fb.Want, fb.Shown, *fb.Low, *fb.High)
		}
		if fb.Spread == nil || fb.Spread.Text != "your disk gave 104–852× over 3 runs" {
			t.Errorf("spread %+v, want the text \"your disk gave 104–852× over 3 runs\"", fb.Spread)
		}
	}
	// Runs that agree keep the tolerance around their median.
	tight := [][]any{{map[string]any{"ratio": 100.0}}, {map[string]any{"ratio": 101.0}}, {map[string]any{"ratio": 99.0}}}
	fb, err := CheckRepeated(q, tight, "114")
	if err != nil || !fb.Correct || *fb.Low != 85 || *fb.High != 115 {
		t.Errorf("agreeing runs: %+v %v, want 114 right within 85 to 115", fb, err)
	}
	// A factor band divides and multiplies the median (widened to the
	// runs as any band is), and a zero median accepts only zero.
	qf, err := Parse("id: q\nquestion: ?\ncell: c\nrepeat: 3\nanswer: $0.ratio\ntolerance: ×2\nunit: x")
	if err != nil {
		t.Fatal(err)
	}
	fb, err = CheckRepeated(qf, tight, "50")
	if err != nil || !fb.Correct || *fb.Low != 50 || *fb.High != 200 {
		t.Errorf("factor band: %+v %v, want 50 right within 50 to 200", fb, err)
	}
	zero := [][]any{{map[string]any{"ratio": 0.0}}, {map[string]any{"ratio": 0.0}}, {map[string]any{"ratio": 0.0}}}
	for answer, correct := range map[string]bool{"0": true, "0.001": false} {
		fb, err = CheckRepeated(qf, zero, answer)
		if err != nil || fb.Correct != correct {
			t.Errorf("factor band around 0, answer %s: %+v %v, want correct %v", answer, fb, err, correct)
		}
	}
}

func TestRepeatKeyErrors(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"id: q\nquestion: ?\ncell: c\nanswer: 1\ntolerance: 1\nrepeat: 1", "want the number of runs the quiz is graded on, 2 to 5"},
		{"id: q\nquestion: ?\ncell: c\nanswer: 1\ntolerance: 1\nrepeat: 6", "2 to 5"},
		{"id: q\nquestion: ?\ncell: c\nanswer: 1\nchoices: a | b\nrepeat: 3", "repeat: applies to a numeric cell: quiz"},
		{"id: q\nquestion: ?\nrun: bench -ops 10\nanswer: 1\ntolerance: 1\nrepeat: 3", "repeat: applies to a numeric cell: quiz"},
	} {
		_, err := Parse(tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error with %q", tt.src, err, tt.want)
		}
	}
}
