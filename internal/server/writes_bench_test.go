package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
)

// BenchmarkWriteFlood measures what a flood of students' writes costs a
// measurement on the same disk. Each iteration runs, interleaved, a
// -sync always bench on the server's disk three times: alone, while one
// address floods POST /api/predict and a room's ballots from 32
// connections, and while 100 addresses (127.0.0.2...101) flood them from
// one connection each. It reports the bench's ops/s in each condition
// (and flooded/alone), the writes the server accepted and refused (429)
// a second, the
// largest SQLite WAL seen and how much the archive grew.
//
// KVLAB_FLOOD_SECONDS sets each bench's length (default 3);
// `-benchtime Nx` the rounds. KVLAB_FLOOD_READONLY=1 is the control: the
// flood reads the room's state instead (no write reaches the archive),
// so what it costs the bench is the HTTP work alone, on the same CPUs. The figures in the closing report came from
// KVLAB_FLOOD_SECONDS=30 with -benchtime 3x.
func BenchmarkWriteFlood(b *testing.B) {
	secs := 3
	if v, err := strconv.Atoi(os.Getenv("KVLAB_FLOOD_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	root, err := os.MkdirTemp("", "kvlab-flood-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	s := newServer(b, func(c *Config) { c.DataDir = filepath.Join(root, "data") })
	ts := startServer(b, s)
	code := openRoom(b, ts)
	post(b, ts, "POST", "/api/rooms/"+code+"/polls", `{"quiz":"count"}`)
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	db := filepath.Join(root, "data", "kvlab.db")

	conds := []struct {
		name  string
		addrs int // 0: no flood
		conns int // connections per address
	}{{"alone", 0, 0}, {"one-address", 1, 32}, {"100-addresses", 100, 1}}
	ops := map[string][]float64{}
	var accepted, refusedN, floodSecs float64
	var walMax, grown int64
	for b.Loop() {
		for _, c := range conds {
			size0 := fileSize(db) + fileSize(db+"-wal")
			stop := make(chan struct{})
			var ok, refused atomic.Int64
			var wg sync.WaitGroup
			for a := range c.addrs {
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.conns, DialContext: (&net.Dialer{
					LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+a))}}).DialContext}}
				for k := range c.conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						flood(client, "http://127.0.0.1:"+port, code, fmt.Sprintf("a%dc%d", a, k), stop, &ok, &refused)
					}()
				}
			}
			var walSeen atomic.Int64
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
						if n := fileSize(db + "-wal"); n > walSeen.Load() {
							walSeen.Store(n)
						}
					}
				}
			}()
			out, err := harnesstest.Exec(context.Background(), fmt.Sprintf("bench -engine kv -sync always -workload fillrandom -value-size 128 -duration %ds", secs),
				harness.Env{Dir: root})
			close(stop)
			wg.Wait()
			if err != nil {
				b.Fatal(err)
			}
			var r harness.BenchResult
			if err := json.Unmarshal(out, &r); err != nil {
				b.Fatal(err)
			}
			ops[c.name] = append(ops[c.name], r.OpsPerSec)
			if c.addrs > 0 {
				accepted += float64(ok.Load())
				refusedN += float64(refused.Load())
				floodSecs += float64(secs)
				walMax = max(walMax, walSeen.Load())
				grown = max(grown, fileSize(db)+fileSize(db+"-wal")-size0)
			}
		}
	}
	for _, c := range conds {
		b.ReportMetric(median(ops[c.name]), "ops/s-"+c.name)
		if c.addrs > 0 {
			b.ReportMetric(median(ops[c.name])/median(ops["alone"]), "ratio-"+c.name)
		}
	}
	b.ReportMetric(accepted/floodSecs, "accepted-writes/s")
	b.ReportMetric(refusedN/floodSecs, "refused-429/s")
	b.ReportMetric(float64(walMax)/(1<<20), "wal-max-MiB")
	b.ReportMetric(float64(grown)/(1<<20), "archive-growth-max-MiB")
}

// flood sends predictions and ballots, each from a fresh browser id,
// until stop, counting the ones the server accepted and the ones it
// refused with 429.
func flood(c *http.Client, base, code, who string, stop chan struct{}, ok, refused *atomic.Int64) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		url, body := base+"/api/predict", fmt.Sprintf(`{"lesson":"01-fixture","quiz":"count","browser":"%s-%d","value":"%d"}`, who, i, i)
		if i%2 == 1 {
			url, body = base+"/api/rooms/"+code+"/polls/p1/predict", fmt.Sprintf(`{"browser":"%s-%d","value":"%d"}`, who, i, i)
		}
		var resp *http.Response
		var err error
		if os.Getenv("KVLAB_FLOOD_READONLY") != "" {
			resp, err = c.Get(base + "/api/rooms/" + code)
		} else {
			resp, err = c.Post(url, "application/json", strings.NewReader(body))
		}
		if err != nil {
			continue
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			ok.Add(1)
		case http.StatusTooManyRequests:
			refused.Add(1)
		}
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
