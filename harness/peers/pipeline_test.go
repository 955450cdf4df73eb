package peers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
	"kvlab/internal/slowfs"
)

// TestPipelineOverRESP drives kvserver pipelined. The replies of one
// batch of SETs, GETs and DELs come back in order with what each found;
// and a bench line with -pipeline 16 on 4 connections under group makes
// more SETs share each of the server's fdatasyncs than the 4 connections
// could share one at a time (each fdatasync is slowed to 5 ms, so what
// arrives during one waits for the next: the count is certain, not a
// matter of timing), while one connection without a pipeline gets one
// SET per fdatasync.
func TestPipelineOverRESP(t *testing.T) {
	name := startKVServerFS(t, "group", slowfs.FS{Delay: 5 * time.Millisecond})

	st, err := harness.OpenEngine(name, t.TempDir(), "group")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := func(s string) []byte { return []byte(s) }
	batch := []harness.PipeOp{
		{Kind: harness.OpPut, Key: b("a"), Value: b("1")},
		{Kind: harness.OpPut, Key: b("b"), Value: b("2")},
		{Kind: harness.OpGet, Key: b("a")},
		{Kind: harness.OpGet, Key: b("missing")},
		{Kind: harness.OpDelete, Key: b("b")},
		{Kind: harness.OpGet, Key: b("b")},
		{Kind: harness.OpPut, Key: b("a"), Value: b("3")},
		{Kind: harness.OpGet, Key: b("a")},
	}
	var got []string
	err = st.(harness.Pipeliner).Pipeline(batch, func(i int, found bool) { got = append(got, fmt.Sprintf("%d:%v", i, found)) })
	if err != nil {
		t.Fatal(err)
	}
	if want := "0:false 1:false 2:true 3:false 4:false 5:false 6:false 7:true"; strings.Join(got, " ") != want {
		t.Errorf("replies %q, want %q (in order; GET a found, GET missing not, GET b not after DEL b)", strings.Join(got, " "), want)
	}
	checkGet(t, st, "after the pipeline", "a", "3", true)
	checkGet(t, st, "after the pipeline", "b", "", false)

	r := benchRESP(t, "bench -engine "+name+" -sync group -threads 4 -pipeline 16 -ops 1024 -warmup 0")
	put := r.ServerLatency["put"]
	if put == nil || put.Count != 1024 || r.Latency["put"].Count != 1024 {
		t.Fatalf("pipelined: server counted %v SETs, the client %d Puts; want 1024 each", put, r.Latency["put"].Count)
	}
	if !r.FsyncsCounted || r.Fsyncs == 0 {
		t.Fatalf("pipelined: fsyncs %d (counted %v), want the server's count", r.Fsyncs, r.FsyncsCounted)
	}
	if per := float64(put.Count) / float64(r.Fsyncs); per <= 4 {
		t.Errorf("4 connections pipelining 16 deep: %.1f SETs per fdatasync (%d for %d), want more than 4, what 4 connections share one SET at a time", per, r.Fsyncs, put.Count)
	}
	one := benchRESP(t, "bench -engine "+name+" -sync group -threads 1 -ops 40 -warmup 0")
	if one.Fsyncs != 40 {
		t.Errorf("one connection, no pipeline: %d fdatasyncs for 40 SETs, want one each", one.Fsyncs)
	}
	if _, err := harnesstest.Exec(context.Background(), "bench -engine "+name+"?conns=2 -sync group -pipeline 4 -ops 8", harness.Env{Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "use one or the other") {
		t.Errorf("-pipeline with ?conns=N: %v, want an error saying to use one or the other", err)
	}
}
