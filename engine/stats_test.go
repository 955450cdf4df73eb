package engine

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Every fdatasync the store makes is counted under exactly one cause:
// FsyncsBy.Total() equals the File.Sync calls the filesystem saw, under
// every policy, through rotations, a compaction, Close and a reopen; and
// Fsyncs keeps its meaning (the syncSegment calls: Commit, Seal and one
// per Compact).
func TestFsyncCausesCountEverySync(t *testing.T) {
	for _, sync := range []string{"always", "group", "batch:8", "periodic:1ms", "none"} {
		t.Run(sync, func(t *testing.T) {
			p, err := ParseSync(sync)
			if err != nil {
				t.Fatal(err)
			}
			var segSyncs, hintSyncs atomic.Int64
			fs := syncHookFS{FS: NewMemFS(), hook: func(name string) error {
				if strings.HasSuffix(name, hintExt+tmpExt) {
					hintSyncs.Add(1)
				} else {
					segSyncs.Add(1)
				}
				return nil
			}}
			// Preallocate 1 KiB in 8 KiB segments: several zero-fills and
			// rotations in 200 Puts of about 150 bytes.
			opts := Options{FS: fs, Sync: p, SegmentSize: 8 << 10, Preallocate: 1 << 10}
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			const puts = 200
			for i := range puts {
				if err := db.Put(fmt.Appendf(nil, "k%03d", i%50), make([]byte, 128)); err != nil {
					t.Fatal(err)
				}
			}
			if sync == "periodic:1ms" {
				// Let the timer sync at least once: it is due within a
				// millisecond, but a busy machine may run it much later,
				// so wait for it (up to far longer than any stall).
				for deadline := time.Now().Add(10 * time.Second); db.Stats().FsyncsBy.Commit == 0 && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			}
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			st := db.Stats()
			by := st.FsyncsBy
			if got, want := by.Total(), segSyncs.Load()+hintSyncs.Load(); got != want {
				t.Errorf("FsyncsBy %+v sums to %d, want %d: every File.Sync call", by, got, want)
			}
			if by.Hint != hintSyncs.Load() {
				t.Errorf("FsyncsBy.Hint %d, want %d hint file syncs", by.Hint, hintSyncs.Load())
			}
			// Compact's one sync of the active segment is the only
			// Compaction fdatasync that goes through syncSegment.
			if got, want := st.Fsyncs, by.Commit+by.Seal+1; got != want {
				t.Errorf("Fsyncs %d, want Commit + Seal + 1 (Compact's sync of the active segment) = %d (%+v)", got, want, by)
			}
			// Open of a new store syncs the one segment it creates.
			if by.Seal < 2 || by.Prealloc < 1 || by.Compaction < 2 || by.Open != 1 {
				t.Errorf("FsyncsBy %+v: want Seal >= 2 (rotations and Close), Prealloc >= 1, Compaction >= 2, Open 1", by)
			}
			wantCommit := map[string]func(int64) bool{
				"always": func(n int64) bool { return n == puts },
				"group":  func(n int64) bool { return n >= 1 && n <= puts },
				// A rotation syncs and restarts the count of N.
				"batch:8":      func(n int64) bool { return n <= puts/8 && n >= puts/8-by.Seal },
				"periodic:1ms": func(n int64) bool { return n >= 1 },
				"none":         func(n int64) bool { return n == 0 },
			}[sync]
			if !wantCommit(by.Commit) {
				t.Errorf("FsyncsBy.Commit %d after %d Puts: not what %s asks for", by.Commit, puts, sync)
			}

			// A reopen of the closed store syncs no segment: each has a
			// hint covering the whole file, written after the segment
			// was synced. Without hints it syncs every segment it
			// recovered, under Open.
			for _, noHints := range []bool{false, true} {
				segSyncs.Store(0)
				hintSyncs.Store(0)
				o := opts
				o.NoHints = noHints
				db, err = Open("/db", o)
				if err != nil {
					t.Fatal(err)
				}
				st = db.Stats()
				wantOpen := int64(0)
				if noHints {
					wantOpen = int64(st.Segments)
				}
				if st.FsyncsBy.Open != wantOpen || st.FsyncsBy.Open != segSyncs.Load() || st.FsyncsBy.Total() != st.FsyncsBy.Open {
					t.Errorf("after reopen (NoHints %v): FsyncsBy %+v, %d segment syncs: want %d, all under Open", noHints, st.FsyncsBy, segSyncs.Load(), wantOpen)
				}
				db.Close()
			}
		})
	}
}
