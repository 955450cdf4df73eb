package quiz

import (
	"strings"
	"testing"
)

func TestLineGrades(t *testing.T) {
	const own = "bench -engine kv -sync none -rate 1200 -ops 5000"
	tests := []struct {
		edit string // the quiz's edit: value, "" for none
		line string
		want bool
	}{
		{"", own, true},
		{"", strings.Replace(own, "1200", "200", 1), false},
		{"", own + " -threads 4", false},
		{"-rate", strings.Replace(own, "1200", "200", 1), true},
		{"-rate", strings.Replace(own, "-rate 1200", "-rate=2400", 1), true},
		{"-rate", strings.Replace(own, "-rate 1200", "--rate 2400", 1), true},
		{"-rate", strings.Replace(own, " -rate 1200", "", 1), true},
		{"-rate", strings.Replace(own, "-sync none", "-sync always", 1), false},
		{"-rate", strings.Replace(own, "5000", "6000", 1), false},
		{"-rate, -ops", strings.Replace(strings.Replace(own, "5000", "6000", 1), "1200", "10", 1), true},
		{"-rate", own + " -threads 4", false},
	}
	for _, tt := range tests {
		src := "id: q\nquestion: ?\ncell: c\nanswer: $0.ops_per_sec\ntolerance: 10%\n"
		if tt.edit != "" {
			src += "edit: " + tt.edit + "\n"
		}
		q, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.LineGrades(own, tt.line); got != tt.want {
			t.Errorf("edit %q, line %q: got %v, want %v", tt.edit, tt.line, got, tt.want)
		}
	}
}

func TestEditKeyErrors(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"id: q\nquestion: ?\ncell: c\nanswer: 1\ntolerance: 1\nedit: rate", `edit: "rate": name the flags a reader may change`},
		{"id: q\nquestion: ?\ncell: c\nanswer: 1\ntolerance: 1\nedit: ,", "edit: needs the flags"},
		{"id: q\nquestion: ?\nrun: bench -ops 10\nanswer: 1\ntolerance: 1\nedit: -ops", "edit: applies to a cell: quiz"},
	} {
		_, err := Parse(tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error with %q", tt.src, err, tt.want)
		}
	}
}
