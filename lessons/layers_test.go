package lessons_test

import (
	"testing"

	"kvlab/harness"
	"kvlab/internal/server"
)

// TestLayersCell runs lesson 7's "layers" cell and checks what its text
// says the two lines show: the kill loses nothing the store had handed to
// the OS (lost_page_cache 0, only buffered writes may go), the power cut
// may lose both, and neither loses a write acknowledged as durable.
func TestLayersCell(t *testing.T) {
	var lines []string
	for _, l := range load(t) {
		for _, c := range l.Cells {
			if l.Slug == "07-crash-consistency" && c.ID == "layers" {
				lines = c.Lines
			}
		}
	}
	if len(lines) != 2 {
		t.Fatalf("lesson 7's layers cell: got %d lines, want 2 (a kill, then a power cut)", len(lines))
	}
	rs, err := execLines(t, lines, 1, server.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	num := func(i int, field string) float64 {
		m, _ := rs[i].(map[string]any)
		f, _ := m[field].(float64)
		return f
	}
	kill, power := 0, 1
	if m, _ := rs[power].(map[string]any); m["power"] != true {
		t.Fatalf("the second line is not a power cut: %v", m["spec"])
	}
	if got := num(kill, "lost_page_cache"); got != 0 {
		t.Errorf("kill: lost_page_cache = %v, want 0: the page cache outlives the process", got)
	}
	for i, name := range []string{"kill", "power cut"} {
		if got := num(i, "lost"); got != 0 {
			t.Errorf("%s: lost = %v, want 0", name, got)
		}
		if got, want := num(i, "lost_acked"), num(i, "lost_buffered")+num(i, "lost_page_cache"); got != want {
			t.Errorf("%s: lost_acked = %v, want lost_buffered + lost_page_cache = %v", name, got, want)
		}
	}
	t.Logf("kill: lost_buffered %v, lost_page_cache %v; power cut: lost_buffered %v, lost_page_cache %v (invariant: %s)",
		num(kill, "lost_buffered"), num(kill, "lost_page_cache"), num(power, "lost_buffered"), num(power, "lost_page_cache"), harness.Invariant)
}
