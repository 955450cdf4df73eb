package peers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"

	"kvlab/engine"
	"kvlab/harness"
	"kvlab/harness/harnesstest"
	"kvlab/internal/browsertest"
	"kvlab/internal/kvserver"
	"kvlab/internal/resp"
)

// startKVServer serves a fresh kv engine under policy on a loopback port,
// as `labserver kvserver` does, and returns its resp:// engine name.
func startKVServer(t *testing.T, policy string) string {
	t.Helper()
	return startKVServerFS(t, policy, nil)
}

// startKVServerFS is startKVServer with the engine on fs (nil: the OS's).
func startKVServerFS(t *testing.T, policy string, fs engine.FS) string {
	t.Helper()
	p, err := engine.ParseSync(policy)
	if err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: p, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := kvserver.New(db, policy)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		db.Close()
	})
	return "resp://" + ln.Addr().String()
}

func TestParseRESPURL(t *testing.T) {
	tests := []struct {
		in    string
		addr  string
		conns int
		err   string
	}{
		{"resp://127.0.0.1:6380", "127.0.0.1:6380", 0, ""},
		{"resp://localhost:6379?conns=4", "localhost:6379", 4, ""},
		{"resp://[::1]:6379/", "[::1]:6379", 0, ""},
		{"resp://127.0.0.1", "", 0, "needs a host and a port"},
		{"resp://127.0.0.1:0", "", 0, "port 0 is not between 1 and 65535"},
		{"resp://127.0.0.1:6379?conns=0", "", 0, "conns=0 is not between 1 and 1024"},
		{"resp://127.0.0.1:6379?depth=3", "", 0, "unknown parameter depth"},
		{"resp://127.0.0.1:6379/db", "", 0, "not a resp://HOST:PORT address"},
	}
	for _, tt := range tests {
		addr, conns, err := parseRESPURL(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "allowed: resp://HOST:PORT") {
				t.Errorf("parseRESPURL(%q) error = %v, want one saying %q and what is allowed", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || addr != tt.addr || conns != tt.conns {
			t.Errorf("parseRESPURL(%q) = %q, %d, %v; want %q, %d", tt.in, addr, conns, err, tt.addr, tt.conns)
		}
	}
	// The harness's own parser reaches it through the scheme.
	_, err := harnesstest.Exec(context.Background(), "bench -engine resp://nohost -ops 10", harness.Env{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "needs a host and a port") {
		t.Errorf("bench -engine resp://nohost: error = %v, want the address refused", err)
	}
	_, err = harnesstest.Exec(context.Background(), "bench -engine resp://127.0.0.1:6380 -workload seekrandom -ops 10", harness.Env{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "cannot scan keys in order") {
		t.Errorf("seekrandom on resp://: error = %v, want it refused before running", err)
	}
}

// TestStoreSuiteOverRESP runs the shared store suite against kvserver,
// one connection per caller and pipelined over two connections.
func TestStoreSuiteOverRESP(t *testing.T) {
	for _, policy := range []string{"always", "group", "none"} {
		for _, query := range []string{"", "?conns=2"} {
			t.Run(policy+query, func(t *testing.T) {
				suite(t, startKVServer(t, policy)+query, policy)
			})
		}
	}
}

// TestRESPSyncMustMatch checks that a line whose -sync is not the server's
// policy is refused, naming the one that is.
func TestRESPSyncMustMatch(t *testing.T) {
	name := startKVServer(t, "group")
	_, err := harness.OpenEngine(name, t.TempDir(), "always")
	if !errors.Is(err, ErrUnsupportedSync) || !strings.Contains(err.Error(), "run this line with -sync group") {
		t.Errorf("open %s -sync always against kvserver -sync group: error = %v, want ErrUnsupportedSync naming -sync group", name, err)
	}
	_, err = harness.OpenEngine("resp://127.0.0.1:1", t.TempDir(), "always")
	if err == nil || !strings.Contains(err.Error(), "is the server running?") {
		t.Errorf("open a port nothing listens on: error = %v, want one asking whether the server runs", err)
	}
}

// respResult is the part of a bench result the RESP tests check.
type respResult struct {
	benchResult
	FsyncsCounted bool
	ServerLatency map[string]*harness.ServerLatency
	Unavailable   string
}

// benchRESP runs one bench line and decodes its result.
func benchRESP(t *testing.T, line string) respResult {
	t.Helper()
	raw, err := harnesstest.Exec(context.Background(), line, harness.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	var r respResult
	decodeJSON(t, raw, &r)
	return r
}

// decodeJSON decodes one bench result into r (benchResult has its own
// UnmarshalJSON, so the other fields are decoded apart).
func decodeJSON(t *testing.T, raw []byte, r *respResult) {
	t.Helper()
	var extra struct {
		FsyncsCounted bool                              `json:"fsyncs_counted"`
		ServerLatency map[string]*harness.ServerLatency `json:"server_latency"`
		Unavailable   string                            `json:"server_latency_unavailable"`
	}
	if err := json.Unmarshal(raw, &r.benchResult); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	if err := json.Unmarshal(raw, &extra); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	r.FsyncsCounted, r.ServerLatency, r.Unavailable = extra.FsyncsCounted, extra.ServerLatency, extra.Unavailable
}

// TestBenchOverRESP runs bench lines against kvserver and checks that the
// result carries the server's own timing beside the client's and the
// engine's fdatasync count, and that pipelining many clients over few
// connections still answers every op.
func TestBenchOverRESP(t *testing.T) {
	name := startKVServer(t, "always")
	for _, line := range []string{
		"bench -engine %s -sync always -ops 300 -threads 2",
		"bench -engine %s?conns=1 -sync always -ops 300 -threads 4",
		"bench -engine %s -sync always -workload updaterandom -ops 100 -keys 100",
	} {
		line = fmt.Sprintf(line, name)
		raw, err := harnesstest.Exec(context.Background(), line, harness.Env{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var r respResult
		decodeJSON(t, raw, &r)
		put := r.ServerLatency["put"]
		if r.Unavailable != "" || put == nil {
			t.Fatalf("%s: server_latency = %v (unavailable: %q), want a put entry", line, r.ServerLatency, r.Unavailable)
		}
		if put.Count != r.Latency["put"].Count {
			t.Errorf("%s: server counted %d SETs, the client %d", line, put.Count, r.Latency["put"].Count)
		}
		if !(0 < put.P50Ns && put.P50Ns <= put.P99Ns && put.P99Ns <= put.P999Ns) {
			t.Errorf("%s: server put p50 %d p99 %d p99.9 %d, want 0 < p50 <= p99 <= p99.9", line, put.P50Ns, put.P99Ns, put.P999Ns)
		}
		// Under always every SET is one fdatasync in the server.
		if !r.FsyncsCounted || r.Fsyncs != put.Count {
			t.Errorf("%s: fsyncs %d (counted %v), want the server's %d", line, r.Fsyncs, r.FsyncsCounted, put.Count)
		}
	}
}

// requireRedis skips (or, with KVLAB_REQUIRE_TOOLS=1, fails) a test when
// redis-server is not installed.
func requireRedis(t *testing.T) {
	t.Helper()
	if RedisServerPath() == "" {
		browsertest.Missing(t, ErrRedisMissing.Error())
	}
}

func TestRedisSyncMapping(t *testing.T) {
	tests := []struct {
		policy, want string
		err          string
	}{
		{"always", "always", ""},
		{"group", "always", ""},
		{"periodic:1s", "everysec", ""},
		{"none", "no", ""},
		{"periodic:10ms", "", "only timer is appendfsync everysec"},
		{"batch:8", "", "no fsync after every N writes"},
	}
	for _, tt := range tests {
		got, err := redisAppendfsync(tt.policy)
		if tt.err != "" {
			if !errors.Is(err, ErrUnsupportedSync) || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "always, group, periodic:1s and none") {
				t.Errorf("redisAppendfsync(%s) error = %v, want ErrUnsupportedSync saying %q and what redis supports", tt.policy, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("redisAppendfsync(%s) = %q, %v; want %q", tt.policy, got, err, tt.want)
		}
	}
}

// TestRedisEngine runs the store suite and a bench line on a throwaway
// redis-server under each policy it maps, and checks that the server is
// gone after Close.
func TestRedisEngine(t *testing.T) {
	requireRedis(t)
	for _, policy := range []string{"always", "periodic:1s", "none"} {
		t.Run(policy, func(t *testing.T) {
			suite(t, "redis", policy)
		})
	}
	st, err := OpenRedis(t.TempDir(), "always")
	if err != nil {
		t.Fatal(err)
	}
	addr := st.(*redisStore).srv.addr
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("redis-server still answers on %s after Close", addr)
	}

	raw, err := harnesstest.Exec(context.Background(), "bench -engine redis -sync always -ops 200 -threads 2", harness.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var r respResult
	decodeJSON(t, raw, &r)
	if put := r.ServerLatency["put"]; put == nil || put.Count != 200 {
		t.Errorf("redis server_latency put = %+v, want 200 SETs counted by the server", put)
	}
	if r.FsyncsCounted {
		t.Errorf("redis: fsyncs_counted = true, want false (the server does not count them)")
	}
}

// TestRESPAgainstRedisServer drives a redis-server this test started
// itself through resp://, and checks the sync check reads appendfsync.
func TestRESPAgainstRedisServer(t *testing.T) {
	requireRedis(t)
	srv, err := startRedis(context.Background(), RedisServerPath(), t.TempDir(), "everysec")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.stop() })
	name := "resp://" + srv.addr
	if _, err := harness.OpenEngine(name, t.TempDir(), "always"); !errors.Is(err, ErrUnsupportedSync) || !strings.Contains(err.Error(), "run this line with -sync periodic:1s") {
		t.Errorf("-sync always against appendfsync everysec: error = %v, want one naming -sync periodic:1s", err)
	}
	suite(t, name+"?conns=2", "periodic:1s")
}

// TestRedisBenchmarkDrivesKVServer runs redis-benchmark, the Redis
// project's own load generator, against kvserver: a test that kvserver
// speaks the protocol as Redis's tools expect, pipelining included. Its
// figures are not checked (a timed test would fail on a busy machine);
// the server's own count of SETs is.
func TestRedisBenchmarkDrivesKVServer(t *testing.T) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		browsertest.Missing(t, "redis-benchmark is not installed (apt-get install redis-tools, or brew install redis)")
	}
	name := startKVServer(t, "group")
	addr, _, _ := parseRESPURL(name)
	host, port, _ := net.SplitHostPort(addr)
	const n = 2000
	out, err := exec.Command(bin, "-h", host, "-p", port, "-t", "set,get", "-n", fmt.Sprint(n), "-c", "4", "-P", "8", "-d", "128", "--csv").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	for _, test := range []string{`"SET"`, `"GET"`} {
		if !strings.Contains(string(out), test) {
			t.Errorf("redis-benchmark output has no %s row:\n%s", test, out)
		}
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, r := bufio.NewWriter(c), bufio.NewReader(c)
	resp.WriteCommand(w, []byte("INFO"), []byte("commandstats"))
	w.Flush()
	rep, err := resp.ReadReply(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("cmdstat_set:calls=%d,", n); !strings.Contains(string(rep.Str), want) {
		t.Errorf("kvserver's INFO commandstats after redis-benchmark = %q, want %q", rep.Str, want)
	}
}

// OpenRedis is openRedis without a run's context, for the tests.
func OpenRedis(dir, syncText string) (harness.Store, error) {
	return openRedis(context.Background(), dir, syncText)
}
