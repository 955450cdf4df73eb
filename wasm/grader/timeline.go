package grader

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"kvlab/engine/vfs"
	"kvlab/gohost/kvfs"
)

// Timeline is what the store did to the disk in a failing crash case, for
// the page to draw: the calls of the (shrunk) workload with the
// operations each issued, the power cut and what it kept of each
// operation, the reopen, and the operation whose promise broke with the
// line of the student's code that issued it.
type Timeline struct {
	Mode  string         `json:"mode"`  // the power cut's mode: prefix, reorder, dirent
	Cut   int            `json:"cut"`   // the power was cut after operation Cut (0: before the first)
	Steps []TimelineStep `json:"steps"` // in the order they happened
	// Blame is the number of the operation whose promise broke (0: no
	// one operation is to blame, e.g. Open misread the log), in the
	// recovering Open's own numbering when BlameInRecovery; BlameOp is
	// it in words and Line the line of the student's code that issued
	// it (0: unknown).
	Blame           int    `json:"blame,omitempty"`
	BlameInRecovery bool   `json:"blame_in_recovery,omitempty"`
	BlameOp         string `json:"blame_op,omitempty"`
	Line            int    `json:"line,omitempty"`
}

// TimelineStep is one step of a Timeline: an operation on the disk, or a
// call of the student's code, its return, a power cut or the outcome.
type TimelineStep struct {
	// Kind is the operation's (create, write, fdatasync, fsync-dir,
	// rename, remove, truncate), or call (Open, a Put or a Save
	// starting), return (it returned), cut (the power was cut) or result
	// (what the reopen found).
	Kind string `json:"kind"`
	Text string `json:"text"`        // the step in words
	N    int    `json:"n,omitempty"` // an operation's number
	File string `json:"file,omitempty"`
	Off  int64  `json:"off,omitempty"`  // a write's offset, a truncate's size
	Len  int    `json:"len,omitempty"`  // a write's length
	Size int64  `json:"size,omitempty"` // the file's size after the operation
	Line int    `json:"line,omitempty"` // the student's line that issued it
	// Fate is what the power cut left of an operation before it:
	// durable (synced, and there), survived (not synced, there anyway),
	// torn (part of a write there), lost (not there), kept or undone (a
	// name or a size), or "" (a sync, or a file that a later operation
	// changed again before the cut).
	Fate string `json:"fate,omitempty"`
	// Phase is "recovery" for the operations of the Open that recovered
	// from the cut, when a second cut caught it.
	Phase string `json:"phase,omitempty"`
	Blame bool   `json:"blame,omitempty"` // the operation whose promise broke
	Err   bool   `json:"err,omitempty"`   // a return with an error
}

// cutDisk is the disk a cut k of rec leaves: the filesystem after its
// operation k.c, with the power cut in k.mode and the unsynced data
// chosen by k.seed (cutAll makes the same one). The snapshot is left as
// it was, to be cut again.
func cutDisk(rec *recording, k cut) *vfs.MemFS {
	var rng *rand.Rand
	if k.seed != 0 {
		rng = rand.New(rand.NewPCG(k.seed, uint64(k.c)))
	}
	return rec.snaps[k.c].PowerImage(k.mode, rng)
}

// readAll returns the contents of the file name of m's crashDir, and
// whether there is one.
func readAll(m *vfs.MemFS, name string) ([]byte, bool) {
	f, err := m.OpenFile(filepath.Join(crashDir, name), os.O_RDONLY, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, false
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, false
	}
	return b, true
}

// timeline draws the failure f of rec, blame being the operation whose
// promise broke (0: none; in f.recovery when f has one).
func (r *recording) timeline(f *cutFailure, blame int) *Timeline {
	t := &Timeline{Mode: f.mode.String(), Cut: f.c}
	after := cutDisk(r, f.cut)
	step := func(op kvfs.Op, phase string) TimelineStep {
		s := TimelineStep{Kind: op.Kind, Text: op.String(), N: op.N, File: op.File, Off: op.Off, Len: op.Len, Line: op.Line, Phase: phase}
		if op.Kind == "fsync-dir" {
			s.File = ""
		}
		if phase == "" && op.N < len(r.snaps) && s.File != "" {
			if b, ok := readAll(r.snaps[op.N], op.File); ok {
				s.Size = int64(len(b))
			}
		}
		return s
	}
	// Which call of the workload each operation belongs to.
	call := 0 // the Put or Save whose operations come next, by index
	if !r.saves {
		t.Steps = append(t.Steps, TimelineStep{Kind: "call", Text: "Open on an empty disk"})
	} else {
		call = 1 // puts[0] is the version already on the disk
	}
	startCall := func(i int) {
		p := r.puts[i]
		text := fmt.Sprintf("Put %d: %s", i+1, putText(p.kv))
		if r.saves {
			text = fmt.Sprintf("Save %d: %s, version %d", i, replaceName, i)
		}
		t.Steps = append(t.Steps, TimelineStep{Kind: "call", Text: text})
	}
	endCall := func(i int) {
		p := r.puts[i]
		text := "returned nil: acknowledged"
		if p.err != nil {
			text = "returned an error: " + p.err.Error()
		}
		t.Steps = append(t.Steps, TimelineStep{Kind: "return", Text: text, Err: p.err != nil})
	}
	started := -1
	for n := 1; n <= f.c; n++ {
		for call < len(r.puts) && r.puts[call].before < n {
			if started != call {
				startCall(call)
				started = call
			}
			if r.puts[call].acked >= n {
				break
			}
			endCall(call) // a call with no operations
			call++
		}
		s := step(r.ops[n-1], "")
		s.Fate = r.fate(n, f.c, after)
		if f.recovery == nil && n == blame {
			s.Blame = true
		}
		t.Steps = append(t.Steps, s)
		if call < len(r.puts) && r.puts[call].acked == n {
			endCall(call)
			call++
		}
	}
	for call < len(r.puts) && r.puts[call].acked <= f.c {
		// Calls after the last operation before the cut, with none of
		// their own.
		startCall(call)
		endCall(call)
		call++
	}
	cutText := fmt.Sprintf("power cut (%s mode): none of the unsynced data reached the disk", f.mode)
	if f.seed != 0 {
		cutText = fmt.Sprintf("power cut (%s mode): a random part of the unsynced data reached the disk (choice %d)", f.mode, f.seed)
	}
	if f.c < len(r.ops) {
		cutText += fmt.Sprintf("; the %d operations after it never happened", len(r.ops)-f.c)
	}
	t.Steps = append(t.Steps, TimelineStep{Kind: "cut", Text: cutText})
	if f.recovery != nil {
		t.Steps = append(t.Steps, TimelineStep{Kind: "call", Text: "reopen: Open, recovering from the cut", Phase: "recovery"})
		for _, op := range f.recovery[:f.again] {
			s := step(op, "recovery")
			s.Blame = op.N == blame
			t.Steps = append(t.Steps, s)
		}
		t.Steps = append(t.Steps, TimelineStep{Kind: "cut", Text: fmt.Sprintf("a second power cut, after the recovering Open's operation %d (%s)", f.again, f.againOp), Phase: "recovery"})
	}
	if r.saves {
		t.Steps = append(t.Steps, TimelineStep{Kind: "result", Text: "after the reboot: " + f.what})
	} else {
		t.Steps = append(t.Steps, TimelineStep{Kind: "call", Text: "reopen: Open, then Get of every acknowledged key"})
		t.Steps = append(t.Steps, TimelineStep{Kind: "result", Text: f.what})
	}
	if blame > 0 {
		ops := r.ops
		if f.recovery != nil {
			ops, t.BlameInRecovery = f.recovery, true
		}
		if blame <= len(ops) {
			op := ops[blame-1]
			t.Blame, t.BlameOp, t.Line = blame, op.String(), op.Line
		}
	}
	return t
}

// fate says what the power cut after operation c, which left the disk
// after, kept of operation n (see TimelineStep.Fate).
func (r *recording) fate(n, c int, after *vfs.MemFS) string {
	op := r.ops[n-1]
	// The names this operation is about, followed through later renames;
	// a later create, remove or rename onto one of them changes it again
	// and leaves the fate to that later operation.
	name := op.File
	names := []string{name} // a write's data may be under any of them
	synced := false
	for _, later := range r.ops[n:c] {
		switch later.Kind {
		case "rename":
			if later.From == name {
				name = later.File
				names = append(names, name)
				continue
			}
			if later.File == name || (op.Kind == "rename" && later.From == op.From) {
				return ""
			}
		case "create", "remove":
			if later.File == name || (op.Kind == "rename" && later.File == op.From) {
				return ""
			}
		case "truncate", "write":
			if later.File == name && (op.Kind == "truncate" || op.Kind == "rename") {
				return ""
			}
		case "fdatasync":
			if later.File == name {
				synced = true
			}
		}
	}
	data, exists := readAll(after, name)
	switch op.Kind {
	case "write":
		want, ok := readAll(r.snaps[n], op.File)
		if !ok || op.Off+int64(op.Len) > int64(len(want)) || op.Len == 0 {
			return ""
		}
		want = want[op.Off : op.Off+int64(op.Len)]
		same := 0
		for _, name := range names {
			data, _ := readAll(after, name)
			here := 0
			for i := range want {
				if at := op.Off + int64(i); at < int64(len(data)) && data[at] == want[i] {
					here++
				}
			}
			same = max(same, here)
		}
		switch {
		case same == 0:
			return "lost"
		case same < len(want):
			return "torn"
		case synced:
			return "durable"
		}
		return "survived"
	case "create":
		if name != op.File {
			return "" // renamed since: that rename's fate says it
		}
		if exists {
			return "kept"
		}
		return "lost"
	case "rename":
		// Kept when the new name holds what the rename gave it.
		if now, ok := readAll(r.snaps[n], op.File); ok && exists && string(now) == string(data) {
			return "kept"
		}
		return "undone"
	case "remove":
		if exists {
			return "undone"
		}
		return "kept"
	case "truncate":
		if exists && int64(len(data)) == op.Off {
			return "kept"
		}
		return "undone"
	}
	return ""
}
