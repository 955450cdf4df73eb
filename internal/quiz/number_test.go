package quiz

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// numberCase is one row of testdata/numbers.json, the table the page's
// parseNumber (static/dom.js) is held to as well
// (static/testdata/numbers.test.mjs).
type numberCase struct {
	In    string   `json:"in"`
	Unit  string   `json:"unit"`
	Want  *float64 `json:"want"`
	Error string   `json:"error"` // a part of the message, when the answer is refused
	Why   string   `json:"why"`
}

func TestParseNumberTable(t *testing.T) {
	b, err := os.ReadFile("testdata/numbers.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []numberCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 30 {
		t.Fatalf("numbers.json has %d cases, want its table", len(cases))
	}
	for _, c := range cases {
		got, err := ParseNumber(c.In, c.Unit)
		switch {
		case c.Want == nil && c.Error == "":
			t.Errorf("%q: the case has neither want nor error", c.In)
		case c.Want != nil && (err != nil || got != *c.Want):
			t.Errorf("ParseNumber(%q, %q) = %v, %v; want %v (%s)", c.In, c.Unit, got, err, *c.Want, c.Why)
		case c.Error != "" && (err == nil || !strings.Contains(err.Error(), c.Error) || !errors.Is(err, ErrBadAnswer)):
			t.Errorf("ParseNumber(%q, %q) = %v, %v; want an ErrBadAnswer with %q", c.In, c.Unit, got, err, c.Error)
		}
	}
}
