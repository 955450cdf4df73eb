package peers

import (
	"context"
	"strings"
	"testing"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
)

// TestKVServerEngine: -engine kvserver starts its own kvserver for the
// run and measures it over RESP: the server counts every SET the client
// timed, under always each SET is one of the engine's fdatasyncs, the
// server's own time is below the client's (the hop is the rest), reads
// find what a preload wrote, and a scan is refused naming why.
func TestKVServerEngine(t *testing.T) {
	r := benchRESP(t, "bench -engine kvserver -sync always -ops 300 -threads 2")
	put, client := r.ServerLatency["put"], r.Latency["put"]
	if put == nil || client.Count == 0 {
		t.Fatalf("server_latency %v, latency %v: want a put entry in both", r.ServerLatency, r.Latency)
	}
	if put.Count != client.Count || !r.FsyncsCounted || r.Fsyncs != put.Count {
		t.Errorf("server counted %d SETs and %d fdatasyncs (counted %v), the client %d Puts; want all equal", put.Count, r.Fsyncs, r.FsyncsCounted, client.Count)
	}
	if put.P50Ns >= client.P50 {
		t.Errorf("server p50 %d ns is not below the client's %d ns: the client's time includes the server's", put.P50Ns, client.P50)
	}
	if r := benchRESP(t, "bench -engine kvserver -sync none -workload readrandom -keys 200 -ops 400"); r.HitRate == nil || *r.HitRate != 1 {
		t.Errorf("readrandom over kvserver: hit rate %v, want 1 (every preloaded key found)", r.HitRate)
	}
	_, err := harnesstest.Exec(context.Background(), "bench -engine kvserver -workload seekrandom -ops 10", harness.Env{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "kvserver cannot scan keys in order") {
		t.Errorf("seekrandom on kvserver: %v, want an error saying it cannot scan", err)
	}
}
