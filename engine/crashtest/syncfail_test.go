package crashtest

import (
	"context"
	"testing"

	"kvlab/engine"
)

// TestRunSyncFailure: under every policy that fdatasyncs Puts, the store
// acknowledges nothing after the failed fdatasync, keeps its DurableSeq,
// and a reopen in the same boot returns every durable write and none of
// the acknowledged writes no fdatasync covered.
func TestRunSyncFailure(t *testing.T) {
	for _, tt := range []struct {
		sync      string
		lostAcked int64 // the acknowledged writes the failure takes; -1: any
	}{
		{"always", 0},    // the failing Put is not acknowledged
		{"group", 0},     // one writer: as always
		{"batch:16", 15}, // the 1008th Put's fdatasync fails: 1001..1007 acked, 993..1000 were synced at 1008? see below
		{"periodic:5ms", -1},
	} {
		t.Run(tt.sync, func(t *testing.T) {
			pol, err := engine.ParseSync(tt.sync)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := RunSyncFailure(context.Background(), SyncFailConfig{Sync: pol})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", rep)
			if !rep.OK() {
				t.Errorf("the store broke its promise after a failed fdatasync: %+v", rep)
			}
			if rep.Tried != 10 || rep.AckedAfter != 0 {
				t.Errorf("after the failure: %d of %d Puts acknowledged, want 0", rep.AckedAfter, rep.Tried)
			}
			if rep.ReturnedUndurable != 0 {
				t.Errorf("the reopen returned %d acknowledged writes no fdatasync covered", rep.ReturnedUndurable)
			}
			if rep.Recovered != rep.DurableAcked || rep.LostAcked != rep.Acked-rep.DurableAcked {
				t.Errorf("reopen: recovered %d, lost_acked %d; want the %d durable writes back and the other %d of %d acknowledged lost",
					rep.Recovered, rep.LostAcked, rep.DurableAcked, rep.Acked-rep.DurableAcked, rep.Acked)
			}
			if tt.lostAcked >= 0 && rep.LostAcked != tt.lostAcked {
				t.Errorf("lost_acked %d, want %d", rep.LostAcked, tt.lostAcked)
			}
			if rep.Acked < 1000 || rep.FailedSync == "" {
				t.Errorf("acked %d before the failure of %q; want at least FailAfter (1000) and a named fdatasync", rep.Acked, rep.FailedSync)
			}
		})
	}
}
