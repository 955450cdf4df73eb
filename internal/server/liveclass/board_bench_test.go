package liveclass

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/internal/archive"
	"kvlab/internal/classroom"
	"kvlab/internal/server/web"
)

// fullBoard is a rig whose room has a full board: boardMax entries,
// each a real bench result padded to near the share body limit, stored
// as the share route stores them.
func fullBoard(tb testing.TB) (*rig, string, *classroom.Room) {
	tb.Helper()
	r := newRig(tb, nil)
	code, _ := r.open(tb)
	rm := r.rs.Open(code)
	raw, err := os.ReadFile("../../classroom/testdata/bench.json")
	if err != nil {
		tb.Fatal(err)
	}
	sh, err := classroom.CheckShare(raw)
	if err != nil {
		tb.Fatal(err)
	}
	pad := strings.Repeat("x", int(testLimits.MaxShareBytes)-len(raw)-1024)
	big := bytes.Replace(raw, []byte(`"spec": "bench`), []byte(`"spec": "`+pad+`bench`), 1)
	if !json.Valid(big) {
		tb.Fatal("the padded result is not JSON")
	}
	for i := range boardMax {
		e := &archive.BoardEntry{Room: rm.ID, Kind: sh.Kind, Measures: sh.Values, Conditions: web.MustMarshal(sh.Conditions), Result: big,
			AddrHash: addrHash(rm.Code, string(rune('a'+i%26))), At: time.Now()}
		if _, err := r.arch.AddBoardEntry(context.Background(), e); err != nil {
			tb.Fatal(err)
		}
	}
	return r, r.ts.URL + "/api/rooms/" + code + "/board?measure=always_ops_per_sec", rm
}

// BenchmarkRoomBoardGET times GET board (and the past class's page,
// which draws the board for every measure) on a full board of results
// of about 60 KiB each. Target: board p99 under 20 ms on the 2-core VM;
// a GET reads the stored measures and conditions, never the results.
func BenchmarkRoomBoardGET(b *testing.B) {
	_, boardURL, room := fullBoard(b)
	classURL := strings.Replace(boardURL, "/api/rooms/"+classroom.FormatCode(room.Code)+"/board?measure=always_ops_per_sec", "/classes/", 1) + jsonNum(room.ID)
	for _, c := range []struct{ name, url string }{{"board", boardURL}, {"class", classURL}} {
		b.Run(c.name, func(b *testing.B) {
			var took []int64
			for b.Loop() {
				t0 := time.Now()
				resp, err := http.Get(c.url)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took = append(took, int64(time.Since(t0)))
				if resp.StatusCode != http.StatusOK || n < 1000 {
					b.Fatalf("GET %s: %d, %d bytes", c.url, resp.StatusCode, n)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(harness.Percentile(took, 50))/1e6, "p50-ms")
			b.ReportMetric(float64(harness.Percentile(took, 99))/1e6, "p99-ms")
		})
	}
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }
