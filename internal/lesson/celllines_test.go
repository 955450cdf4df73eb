package lesson

import (
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/celllines.json from CellLines")

// cellLinesFile is shared with the page: static/testdata/celllines.test.mjs
// feeds the same cells to the page's splitter (splitCellLines in
// static/cells.js), which numbers the lines of the server's messages the
// way CellLines does.
const cellLinesFile = "testdata/celllines.json"

// cellLinesCase is one row of the file: a cell's text and its lines.
type cellLinesCase struct {
	Name  string   `json:"name"`
	Cell  string   `json:"cell"`
	Lines []string `json:"lines"`
}

// trickyCells are cells whose splitting is easy to get subtly wrong.
// Go's TrimSpace and JavaScript's trim() disagree on two characters:
// U+0085 (NEL; Go trims it) and U+FEFF (BOM; Go keeps it).
var trickyCells = []struct{ name, cell string }{
	{"one line", "bench -engine kv -sync always -workload fillrandom -ops 8000"},
	{"empty", ""},
	{"comments and blank lines", "# the textbook fsync-per-write\nbench -engine kv -sync always -ops 100\n\n  # an indented comment\n\nprobe\n"},
	{"only comments and blanks", "# a\n#b\n   \n\t\n#"},
	{"CRLF", "bench -engine kv -ops 10\r\nprobe\r\n\r\n# c\r\n"},
	{"lone CR stays inside a line", "probe\rmodel -sync batch:64"},
	{"trailing spaces and tabs", "\tbench -engine kv -ops 10   \t\n  probe  \t"},
	{"hash inside a line", "bench -dir /tmp/a#b -ops 10 # not a comment\nmodel -sync batch:8#x"},
	{"comment after indentation", " \t# indented\n\t\tprobe"},
	{"vertical tab and form feed", "\vprobe\f\n\f# c\v"},
	{"no-break and ideographic spaces", "\u00a0probe\u3000\n\u2003model -sync batch:64\u2002"},
	{"line and paragraph separators", "\u2028probe\u2029"},
	{"NEL is space to Go", "\u0085bench -engine kv -ops 10\u0085\n\u0085# comment"},
	{"BOM is not space to Go", "\ufeff# not a comment once a BOM precedes it\nprobe"},
	{"zero-width space is kept", "\u200bprobe"},
	{"very long line", "bench -engine kv -sync always" + strings.Repeat(" -ops 10", 500)},
	{"many lines", strings.Repeat("probe\n# c\n\n", 40)},
}

// TestCellLinesFile checks testdata/celllines.json against CellLines
// (go test -run CellLinesFile -update rewrites it).
func TestCellLinesFile(t *testing.T) {
	want := make([]cellLinesCase, len(trickyCells))
	for i, c := range trickyCells {
		want[i] = cellLinesCase{Name: c.name, Cell: c.cell, Lines: CellLines(c.cell)}
		if want[i].Lines == nil {
			want[i].Lines = []string{}
		}
	}
	if *update {
		b, err := json.MarshalIndent(want, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cellLinesFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(cellLinesFile)
	if err != nil {
		t.Fatalf("%v (go test -run CellLinesFile -update writes it)", err)
	}
	var got []cellLinesCase
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", cellLinesFile, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s has %d cells, want %d (go test -run CellLinesFile -update)", cellLinesFile, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s cell %d: got %q, want %q (go test -run CellLinesFile -update)", cellLinesFile, i, got[i], want[i])
		}
	}
}
