package grader

import (
	"slices"
	"strings"
	"testing"
)

// TestTimelineBlamesTheLine grades wrong stores and reads the timeline of
// the failing row: the operations up to the power cut, what the cut kept
// of them, and the operation whose promise broke with the line of the
// student's code that issued it.
func TestTimelineBlamesTheLine(t *testing.T) {
	ack := durableAckExercise.Solution
	rep := atomicReplaceExercise.Solution
	for _, tt := range []struct {
		name, exercise, src, row string
		kind                     string // the blamed operation's
		line                     string // what the blamed line holds
		fate                     string // a fate some step before the cut has
	}{
		{"no fdatasync", "durable-ack", variant(t, ack, ackSync, ""), "power cut after each operation, prefix", "write", "s.log.Write(encode(key, value))", "lost"},
		{"no directory fsync after Create", "durable-ack", variant(t, ack, openSyncDir, ""), "power cut after each operation, prefix", "create", `fs.Create("log")`, "lost"},
		{"Save without a directory fsync", "atomic-replace", variant(t, rep, replaceSyncDir, "\treturn nil\n"), "power cut after each operation, dirent", "rename", "fs.Rename(tmp, name)", "undone"},
		{"Save renames before the fdatasync", "atomic-replace", variant(t, rep, "\t// The data must be durable before the rename can be.\n\tif err := f.Sync(); err != nil {\n\t\tf.Close()\n\t\treturn err\n\t}\n", ""), "power cut after each operation", "rename", "fs.Rename(tmp, name)", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Run(tt.exercise, tt.src)
			i := slices.IndexFunc(r.Cases, func(c Case) bool { return !c.Pass })
			if i < 0 || !strings.HasPrefix(r.Cases[i].Input, tt.row) {
				t.Fatalf("first failing row %d, want %q: %+v", i, tt.row, r.Cases)
			}
			tl := r.Cases[i].Timeline
			if tl == nil {
				t.Fatalf("row %q has no timeline", r.Cases[i].Input)
			}
			lines := strings.Split(tt.src, "\n")
			if tl.Line < 1 || tl.Line > len(lines) || !strings.Contains(lines[tl.Line-1], tt.line) {
				t.Errorf("blamed line %d (operation %d, %s), want the line of %s", tl.Line, tl.Blame, tl.BlameOp, tt.line)
			}
			cut := slices.IndexFunc(tl.Steps, func(s TimelineStep) bool { return s.Kind == "cut" })
			blamed := slices.IndexFunc(tl.Steps, func(s TimelineStep) bool { return s.Blame })
			if cut < 0 || blamed < 0 || blamed > cut {
				t.Fatalf("cut at step %d, blamed step %d: %+v", cut, blamed, tl.Steps)
			}
			if s := tl.Steps[blamed]; s.Kind != tt.kind || s.N != tl.Blame || s.Line != tl.Line {
				t.Errorf("blamed step %+v, want a %s, operation %d at line %d", s, tt.kind, tl.Blame, tl.Line)
			}
			ops := 0
			for _, s := range tl.Steps[:cut] {
				if s.N > 0 {
					ops++
					if s.N != ops || s.Line < 1 {
						t.Errorf("step %+v: want operation %d with a line", s, ops)
					}
				}
			}
			if ops != tl.Cut {
				t.Errorf("%d operations before the cut, want %d", ops, tl.Cut)
			}
			if tt.fate != "" && !slices.ContainsFunc(tl.Steps[:cut], func(s TimelineStep) bool { return s.Fate == tt.fate }) {
				t.Errorf("no step before the cut was %s: %+v", tt.fate, tl.Steps[:cut])
			}
			if last := tl.Steps[len(tl.Steps)-1]; last.Kind != "result" || !strings.Contains(r.Cases[i].Got, strings.TrimPrefix(last.Text, "after the reboot: ")) {
				t.Errorf("last step %+v, want the result the row says: %s", last, r.Cases[i].Got)
			}
		})
	}
}

// TestTimelineInRecovery grades a store whose Open empties the log and
// writes the records back: the timeline goes on into the recovering Open
// and blames its truncate.
func TestTimelineInRecovery(t *testing.T) {
	src := variant(t, durableAckExercise.Solution, "\tif good < len(data) {\n\t\t// A torn tail: cut it off, so new records follow the last good one.\n"+openTruncate+"\t}\n",
		"\tif err := s.log.Truncate(0); err != nil {\n\t\treturn nil, err\n\t}\n\tif _, err := s.log.Write(data[:good]); err != nil {\n\t\treturn nil, err\n\t}\n\tif err := s.log.Sync(); err != nil {\n\t\treturn nil, err\n\t}\n")
	r := Run("durable-ack", src)
	i := slices.IndexFunc(r.Cases, func(c Case) bool { return strings.HasPrefix(c.Input, "power cut after each operation, prefix") })
	if i < 0 || r.Cases[i].Pass || r.Cases[i].Timeline == nil {
		t.Fatalf("no failing prefix row with a timeline: %+v", r.Cases)
	}
	tl := r.Cases[i].Timeline
	lines := strings.Split(src, "\n")
	if !tl.BlameInRecovery || tl.Line < 1 || !strings.Contains(lines[tl.Line-1], "s.log.Truncate(0)") {
		t.Errorf("blame %d in recovery %v at line %d, want the recovering Open's truncate", tl.Blame, tl.BlameInRecovery, tl.Line)
	}
	cuts := 0
	for _, s := range tl.Steps {
		if s.Kind == "cut" {
			cuts++
		}
		if s.Blame && s.Phase != "recovery" {
			t.Errorf("blamed step %+v, want one of the recovery", s)
		}
	}
	if cuts != 2 {
		t.Errorf("%d cuts in %+v, want the first and the one during recovery", cuts, tl.Steps)
	}
}
