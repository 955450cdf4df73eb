package lesson

import (
	"strings"
	"testing"
	"testing/fstest"
)

const good = "---\ntitle: Why fsync is slow\nsummary: One write, one fdatasync.\norder: 2\n---\n\n# Intro\n\n" +
	"```lab always-run\n# the textbook\nbench -engine kv -sync always -ops 100\n\nbench -engine kv -sync none -ops 100\n```\n\n" +
	"```lab\nprobe\n```\n\n" +
	"```quiz\nid: ratio\nquestion: How much slower?\ncell: always-run\nanswer: $1.ops_per_sec / $0.ops_per_sec\ntolerance: 50%\n```\n\n" +
	"```exercise percentile\n```\n\n```go\nfunc main() {}\n```\n"

func TestParse(t *testing.T) {
	l, err := Parse("02-why-fsync.md", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"slug", l.Slug, "02-why-fsync"},
		{"title", l.Title, "Why fsync is slow"},
		{"summary", l.Summary, "One write, one fdatasync."},
		{"order", l.Order, 2},
		{"cells", len(l.Cells), 2},
		{"cell 0 id", l.Cells[0].ID, "always-run"},
		{"cell 0 lines", strings.Join(l.Cells[0].Lines, "|"), "bench -engine kv -sync always -ops 100|bench -engine kv -sync none -ops 100"},
		{"cell 0 text", l.Cells[0].Text, "# the textbook\nbench -engine kv -sync always -ops 100\n\nbench -engine kv -sync none -ops 100\n"},
		{"cell 1 id", l.Cells[1].ID, "cell-2"},
		{"cell 1 name", l.Cells[1].Name, ""},
		{"quizzes", len(l.Quizzes), 1},
		{"quiz cell", l.Quiz("ratio").Cell, "always-run"},
		{"exercises", strings.Join(l.Exercises, ","), "percentile"},
		{"body starts", strings.HasPrefix(string(l.Body), "\n# Intro"), true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	fm := "---\ntitle: T\norder: 1\n---\n"
	tests := []struct {
		name, file, src, want string
	}{
		{"file name", "Bad Name.md", fm, "NN-slug.md"},
		{"no front matter", "01-a.md", "# hi\n", "missing front matter"},
		{"unclosed", "01-a.md", "---\ntitle: x\n", "not closed"},
		{"no title", "01-a.md", "---\norder: 1\n---\n", "title: is required"},
		{"bad order", "01-a.md", "---\ntitle: x\norder: one\n---\n", `order "one"`},
		{"no order no prefix", "a.md", "---\ntitle: x\n---\n", "order: is required"},
		{"dup cell", "01-a.md", fm + "```lab x\nprobe\n```\n```lab x\nprobe\n```\n", `"x" is used twice`},
		{"bad cell name", "01-a.md", fm + "```lab a_b\nprobe\n```\n", "use letters, digits"},
		{"unclosed cell", "01-a.md", fm + "```lab x\nprobe\n\n## Next\n\nmore prose\n", "line 5: the ```lab x block is never closed"},
		{"unclosed cell at eof", "01-a.md", fm + "```lab x\nprobe", "never closed"},
		{"unclosed empty quiz", "01-a.md", fm + "```quiz\n", "```quiz block is never closed"},
		{"unclosed exercise", "01-a.md", fm + "text\n\n```exercise percentile\n", "never closed"},
		{"empty cell", "01-a.md", fm + "```lab x\n# nothing\n```\n", "no run-spec lines"},
		{"bad exercise", "01-a.md", fm + "```exercise sorting\n```\n", "one of percentile"},
		{"quiz unknown cell", "01-a.md", fm + "```quiz\nid: q\nquestion: q\ncell: nope\nanswer: 1\ntolerance: 1\n```\n", `cell "nope" is not a lab cell`},
		{"quiz too many lines", "01-a.md", fm + "```lab c\nprobe\n```\n```quiz\nid: q\nquestion: q\ncell: c\nanswer: $1.ops\ntolerance: 1\n```\n", "reads $1 but cell c has 1 line"},
		{"quiz dup", "01-a.md", fm + "```lab c\nprobe\n```\n" + strings.Repeat("```quiz\nid: q\nquestion: q\ncell: c\nanswer: 1\ntolerance: 1\n```\n", 2), `quiz id "q" is used twice`},
		{"quiz syntax", "01-a.md", fm + "```quiz\nid: q\n```\n", "line 5: quiz q: question: is required"},
		{"script mine, no block", "01-a.md", fm + "```lab c\nbench -script mine -engine kv\n```\n", "no ```lua mine block comes before it"},
		{"lua mine, no cell", "01-a.md", fm + "```lua mine\nreturn {}\n```\n", "line 5: the ```lua mine block has no lab cell after it"},
		{"two lua mine", "01-a.md", fm + strings.Repeat("```lua mine\nreturn {}\n```\n", 2) + "```lab c\nbench -script mine\n```\n", "follows the one on line 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.file, []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"02-b.md":   {Data: []byte("---\ntitle: B\norder: 2\n---\n")},
		"01-a.md":   {Data: []byte("---\ntitle: A\n---\n")},
		"README.md": {Data: []byte("not a lesson")},
		"notes.txt": {Data: []byte("ignored")},
	}
	ls, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls {
		got = append(got, l.Slug)
	}
	if strings.Join(got, ",") != "01-a,02-b" {
		t.Errorf("got %v, want [01-a 02-b]", got)
	}
	fsys["03-c.md"] = &fstest.MapFile{Data: []byte("---\ntitle: C\norder: 2\n---\n")}
	if _, err := Load(fsys); err == nil || !strings.Contains(err.Error(), "order 2 is also used") {
		t.Errorf("duplicate order: got %v, want an error", err)
	}
}

// A ```lua mine block's text is the script of the lab cell after it, and
// of that cell only.
func TestCellScript(t *testing.T) {
	src := "---\ntitle: T\norder: 1\n---\n```lua mine\nreturn { run = function() end }\n```\n\n```lab a\nbench -script mine -engine kv\n```\n```lab b\nprobe\n```\n"
	l, err := Parse("01-a.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Cells[0].Script, "return { run = function() end }\n"; got != want {
		t.Errorf("cell a's script %q, want %q", got, want)
	}
	if l.Cells[1].Script != "" {
		t.Errorf("cell b's script %q, want none", l.Cells[1].Script)
	}
}
