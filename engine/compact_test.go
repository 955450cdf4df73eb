package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// model is the expected contents of a store.
type model map[string]string

func (m model) check(t *testing.T, db *DB) {
	t.Helper()
	for k, v := range m {
		checkGet(t, db, k, v)
	}
	if got, want := db.Stats().Keys, int64(countLive(m)); got != want {
		t.Errorf("Keys: got %d, want %d", got, want)
	}
}

func countLive(m model) int {
	n := 0
	for _, v := range m {
		if v != "" {
			n++
		}
	}
	return n
}

// fillOps writes a mix of puts, overwrites and deletes across several
// small segments and returns what the store must hold.
func fillOps(t *testing.T, db *DB, n int) model {
	t.Helper()
	m := model{}
	for i := range n {
		k := fmt.Sprintf("key%03d", i%50)
		if i%7 == 3 { // deletes keys that were put in earlier segments
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			m[k] = ""
			continue
		}
		v := fmt.Sprintf("v%d-%0100d", i, i)
		mustPut(t, db, k, v)
		m[k] = v
	}
	return m
}

// TestCompactKeepsLiveRecords: after compacting stores of 0 to 400 mixed
// writes every live key reads back and every deleted one stays gone, a
// large store ends with fewer segments, and the store keeps working.
func TestCompactKeepsLiveRecords(t *testing.T) {
	for _, n := range []int{0, 1, 10, 400} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			db, mem := openMem(t, Options{SegmentSize: MinSegmentSize})
			m := fillOps(t, db, n)
			before := db.Stats()
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			m.check(t, db)
			after := db.Stats()
			if n >= 400 && after.Segments >= before.Segments {
				t.Errorf("segments: %d before, %d after compaction; want fewer", before.Segments, after.Segments)
			}
			// The store keeps working, and a second compaction is a no-op
			// for the contents.
			mustPut(t, db, "after", "compaction")
			m["after"] = "compaction"
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			m.check(t, db)
			db.Close()
			db, err := Open("/db", Options{FS: mem, SegmentSize: MinSegmentSize})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			m.check(t, db)
		})
	}
}

// TestCompactNoResurrection is the bug Bitcask and rosedb shipped: a key
// whose put and tombstone sit in different segments must stay deleted
// after compaction drops the tombstone, also after a reopen.
func TestCompactNoResurrection(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, db *DB)
	}{
		{"put and delete in different segments", func(t *testing.T, db *DB) {
			mustPut(t, db, "victim", "old")
			fill(t, db, "a", 60) // rotates several times
			db.Delete([]byte("victim"))
			fill(t, db, "b", 60)
		}},
		{"delete in the active segment", func(t *testing.T, db *DB) {
			mustPut(t, db, "victim", "old")
			fill(t, db, "a", 60)
			db.Delete([]byte("victim"))
		}},
		{"compact between put and delete", func(t *testing.T, db *DB) {
			mustPut(t, db, "victim", "old")
			fill(t, db, "a", 60)
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			db.Delete([]byte("victim"))
			fill(t, db, "b", 60)
		}},
		{"overwritten then deleted", func(t *testing.T, db *DB) {
			mustPut(t, db, "victim", "old")
			fill(t, db, "a", 60)
			mustPut(t, db, "victim", "newer")
			fill(t, db, "b", 60)
			db.Delete([]byte("victim"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, mem := openMem(t, Options{SegmentSize: MinSegmentSize})
			c.run(t, db)
			for range 2 {
				if err := db.Compact(); err != nil {
					t.Fatal(err)
				}
				checkGet(t, db, "victim", "")
				db.Close()
				var err error
				db, err = Open("/db", Options{FS: mem, SegmentSize: MinSegmentSize})
				if err != nil {
					t.Fatal(err)
				}
				checkGet(t, db, "victim", "")
			}
			db.Close()
		})
	}
}

func fill(t *testing.T, db *DB, prefix string, n int) {
	t.Helper()
	for i := range n {
		mustPut(t, db, fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("%0200d", i))
	}
}

// TestCompactCrash fails the i-th filesystem operation of a given kind
// inside Compact, then either cuts the power (tearing unsynced writes) or
// just reopens (as after a process crash, where every file operation
// done so far persists), and checks the contents: whatever point
// compaction reached, nothing acknowledged is lost and no deleted key
// comes back.
func TestCompactCrash(t *testing.T) {
	for _, power := range []bool{false, true} {
		for _, op := range []string{"create", "write", "sync", "rename", "syncdir", "remove"} {
			for i := 1; i <= 12; i++ {
				t.Run(fmt.Sprintf("power=%v/%s#%d", power, op, i), func(t *testing.T) {
					compactCrash(t, power, op, i)
				})
			}
		}
	}
}

func compactCrash(t *testing.T, power bool, op string, i int) {
	db, mem := openMem(t, Options{SegmentSize: MinSegmentSize})
	m := fillOps(t, db, 300)
	n := 0
	mem.Fault = func(o, name string) error {
		if o == op {
			n++
			if n == i {
				return syscall.EIO
			}
		}
		return nil
	}
	err := db.Compact()
	mem.Fault = nil
	if n < i {
		if err != nil {
			t.Fatalf("Compact without a fault: %v", err)
		}
		return // Compact does fewer than i such operations
	}
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("Compact: got %v, want the injected EIO", err)
	}
	if power {
		mem = mem.Crash(true, rand.New(rand.NewPCG(uint64(i), 7)))
	} else {
		db.Close()
	}
	db, err = Open("/db", Options{FS: mem, SegmentSize: MinSegmentSize})
	if err != nil {
		t.Fatalf("reopen after a failed compaction: %v", err)
	}
	defer db.Close()
	m.check(t, db)
}

// crashAfterRenameFS cuts the power of a MemFS right after the first
// rename whose source ends in suffix succeeded, once armed.
type crashAfterRenameFS struct {
	*MemFS
	suffix string
	armed  *bool
	// crashed is the filesystem as it is after the power cut.
	crashed **MemFS
}

func (c crashAfterRenameFS) Rename(oldname, newname string) error {
	err := c.MemFS.Rename(oldname, newname)
	if err == nil && *c.armed && *c.crashed == nil && strings.HasSuffix(oldname, c.suffix) {
		*c.crashed = c.MemFS.Crash(false, nil)
	}
	return err
}

// TestCompactPowerCutMidway cuts the power after Compact renamed its
// output segments and its first hint file, before the directory sync that
// would have made those renames durable. After a power cut the process is
// gone: nothing it would have done next may reach the disk. The reopened
// store must hold everything, from the old segments.
func TestCompactPowerCutMidway(t *testing.T) {
	mem := NewMemFS()
	var armed bool
	var crashed *MemFS
	fs := crashAfterRenameFS{MemFS: mem, suffix: hintExt + tmpExt, armed: &armed, crashed: &crashed}
	db, err := Open("/db", Options{FS: fs, SegmentSize: MinSegmentSize})
	if err != nil {
		t.Fatal(err)
	}
	m := fillOps(t, db, 300)
	armed = true
	if err := db.Compact(); err == nil {
		t.Errorf("Compact after a power cut: got no error")
	}
	if crashed == nil {
		t.Fatal("Compact renamed no hint file: the test did not cut the power")
	}
	db, err = Open("/db", Options{FS: crashed, SegmentSize: MinSegmentSize})
	if err != nil {
		t.Fatalf("reopen after the power cut: %v", err)
	}
	defer db.Close()
	m.check(t, db)
}

// TestCompactKeepsLastSeq: sequence numbers count writes in the order they
// happened, across reopens. When the last write was a Delete, Compact
// drops every record that carried the highest seq unless it keeps that
// tombstone; a reopen would then start numbering again from an older seq.
func TestCompactKeepsLastSeq(t *testing.T) {
	cases := []struct {
		name string
		ops  []string // "put k" or "del k"
	}{
		{"last write a delete", []string{"put a", "put b", "del a"}},
		{"only deletes", []string{"del a", "del b"}},
		{"overwrite then delete", []string{"put a", "put a", "del a"}},
		{"last write a put", []string{"put a", "del a", "put b"}},
	}
	for _, c := range cases {
		for _, noHints := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nohints=%v", c.name, noHints), func(t *testing.T) {
				opts := Options{NoHints: noHints}
				db, mem := openMem(t, opts)
				for _, op := range c.ops {
					kind, k, _ := strings.Cut(op, " ")
					if kind == "put" {
						mustPut(t, db, k, "v")
					} else if err := db.Delete([]byte(k)); err != nil {
						t.Fatal(err)
					}
				}
				want := uint64(len(c.ops))
				if err := db.Compact(); err != nil {
					t.Fatal(err)
				}
				db.Close()
				db = reopenMem(t, mem, opts)
				if got := db.Stats().LastSeq; got != want {
					t.Errorf("LastSeq after Compact and reopen: got %d, want %d", got, want)
				}
				checkGet(t, db, "a", "") // every case ends with a deleted
				mustPut(t, db, "next", "v")
				if got := db.Stats().LastSeq; got != want+1 {
					t.Errorf("LastSeq of the next write: got %d, want %d", got, want+1)
				}
			})
		}
	}
}

// compactTrace compacts a store of 300 mixed operations in small segments
// and returns the filesystem operations Compact made, in order, each as
// label names it; those it labels "" are left out.
func compactTrace(t *testing.T, label func(op, name string) string) []string {
	t.Helper()
	db, mem := openMem(t, Options{SegmentSize: MinSegmentSize})
	defer db.Close()
	fillOps(t, db, 300)
	var ops []string
	mem.Fault = func(op, name string) error {
		if l := label(op, name); l != "" {
			ops = append(ops, l)
		}
		return nil
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	mem.Fault = nil
	return ops
}

// TestCompactRemovesInOrder: the old segments must disappear oldest first
// on disk, not only in the order Compact asks for it. Without a directory
// sync between two removals a filesystem may persist the second and not
// the first after a power cut, leaving an old put without the newer
// tombstone that deleted it.
func TestCompactRemovesInOrder(t *testing.T) {
	ops := compactTrace(t, func(op, name string) string {
		if op == "syncdir" || (op == "remove" && strings.HasSuffix(name, segmentExt)) {
			return op
		}
		return ""
	})
	removes := 0
	for i, op := range ops {
		if op != "remove" {
			continue
		}
		removes++
		if i+1 == len(ops) || ops[i+1] != "syncdir" {
			t.Errorf("segment removal %d is not followed by a directory sync (operations: %q)", removes, ops)
		}
	}
	if removes < 2 {
		t.Fatalf("Compact removed %d old segments, want at least 2 for the test to mean anything", removes)
	}
}

// TestCompactSegmentsDurableBeforeHints: a hint file must never reach the
// disk without its segment. Renames that no directory sync separates may
// persist in any order; a hint that survives a power cut without its
// segment would later be read as the hint of a new segment that reuses the
// id, and its entries (tombstones included) applied to the wrong records.
func TestCompactSegmentsDurableBeforeHints(t *testing.T) {
	ops := compactTrace(t, func(op, name string) string {
		switch op {
		case "syncdir":
			return "syncdir"
		case "rename":
			return "rename " + filepath.Base(name)
		}
		return ""
	})
	lastSeg, firstHint := -1, -1
	for i, op := range ops {
		if strings.HasSuffix(op, segmentExt+tmpExt) {
			lastSeg = i
		}
		if strings.HasSuffix(op, hintExt+tmpExt) && firstHint < 0 {
			firstHint = i
		}
	}
	if lastSeg < 0 || firstHint < 0 {
		t.Fatalf("Compact renamed no segment or no hint: %q", ops)
	}
	if !slices.Contains(ops[lastSeg:max(firstHint, lastSeg)], "syncdir") {
		t.Errorf("no directory sync between the last segment rename and the first hint rename: %q", ops)
	}
}
