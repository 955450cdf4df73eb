package grader

import (
	"strings"
	"testing"
)

// TestTornTailStubFailsEveryCheck: the starting code passes the workload
// and the empty disk, and nothing that needs the tail handled.
func TestTornTailStubFailsEveryCheck(t *testing.T) {
	r := mustRun(t, "torn-tail", tornTailExercise.Stub)
	for _, c := range r.Cases[3:] {
		if c.Pass {
			t.Errorf("stub passes %q: %s", c.Input, c.Got)
		}
	}
}

// oldScan is the rule torn-tail taught before: a bad record with bytes
// after it is damage, one cut short or ending the file a torn tail.
const oldScan = `	for off < len(data) {
		if off+8 > len(data) {
			return off, nil
		}
		klen := int(data[off+4]) | int(data[off+5])<<8
		vlen := int(data[off+6]) | int(data[off+7])<<8
		end := off + 8 + klen + vlen
		if end > len(data) {
			return off, nil
		}
		if intact(data[off:]) == 0 {
			if end == len(data) {
				return off, nil
			}
			return off, errDamaged
		}
		put(string(data[off+8:off+8+klen]), string(data[off+8+klen:end]))
		off = end
	}
	return off, nil
}
`

// TestTornTailOldRuleFails: the rule "bytes after a bad record make it
// damage" refuses to open after an ordinary reorder cut (a torn record's
// later sector reached the disk), and takes a middle record whose value
// length was garbled for a tail cut short, dropping the Puts after it.
func TestTornTailOldRuleFails(t *testing.T) {
	sol := tornTailExercise.Solution
	start := strings.Index(sol, "\tfor off < len(data) {\n\t\tn := intact(data[off:])")
	end := strings.Index(sol, "// intact returns")
	if start < 0 || end < 0 {
		t.Fatal("the solution's scan loop is not where this test looks for it")
	}
	src := sol[:start] + oldScan + "\n" + sol[end:]
	r := mustRun(t, "torn-tail", seeded(src, 4))
	reorder := rowOf(t, r, "power cut after each operation, reorder")
	if reorder.Pass || !strings.Contains(reorder.Got, "Open failed: log: damaged record") || !strings.Contains(reorder.Hint, "those bytes prove nothing") {
		t.Errorf("reorder row %+v, want Open refusing a torn record with bytes after it", reorder)
	}
	mid := rowOf(t, r, "one byte of record")
	if mid.Pass || !strings.Contains(mid.Got, "(its value length) flipped: Open succeeded") || !strings.Contains(mid.Got, "Puts after it are gone") {
		t.Errorf("middle row %+v, want the garbled value length taken for a torn tail and the Puts after it gone", mid)
	}
	if c := rowOf(t, r, "power cut after each operation, prefix"); !c.Pass {
		t.Errorf("prefix row %+v: the old rule holds in prefix mode", c)
	}
}
