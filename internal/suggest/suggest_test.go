package suggest

import (
	"flag"
	"io"
	"testing"
)

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"sweep", "sweep", 0},
		{"swep", "sweep", 1},
		{"", "abc", 3},
		{"comapre", "compare", 1}, // a swap is one edit
		{"kitten", "sitting", 3},
		{"adr", "addr", 1},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q): got %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q): got %d, want %d", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	commands := []string{"serve", "bench", "sweep", "probe", "model", "crash", "runs", "compare", "version", "help"}
	tests := []struct {
		word, want string
	}{
		{"swep", "sweep"},
		{"bech", "bench"},
		{"comapre", "compare"},
		{"modle", "model"},
		{"verison", "version"},
		{"run", "runs"},
		{"frobnicate", ""}, // nothing near: no guess
		{"xyz", ""},
		{"sweep", ""}, // the word itself is not a suggestion
	}
	for _, tt := range tests {
		if got := Closest(tt.word, commands); got != tt.want {
			t.Errorf("Closest(%q): got %q, want %q", tt.word, got, tt.want)
		}
	}
}

func TestFlagError(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("addr", "", "")
	fs.Int("limit", 0, "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-adr", "x"}, "flag provided but not defined: -adr (did you mean `-addr`?)"},
		{[]string{"--limt=3"}, "flag provided but not defined: -limt (did you mean `-limit`?)"},
		{[]string{"-frobnicate"}, "flag provided but not defined: -frobnicate"},
		{[]string{"-limit", "x"}, `invalid value "x" for flag -limit: parse error`},
	}
	for _, tt := range tests {
		err := FlagError(fs, fs.Parse(tt.args))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%v: got %v, want %q", tt.args, err, tt.want)
		}
	}
}
