package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// FillFromResult sets the fields a caller can read off the run's Result:
// Kind (when empty; a sweep line's result says "bench", so a caller that
// knows it ran a sweep sets Kind itself), Engine, Sync and Workload for
// filters (an array's distinct values comma-joined, in order), Probe
// when empty (the result's "probe" conditions, its first element's for
// an array, or a probe's whole result), and Version and Host when empty.
func (r *Run) FillFromResult() {
	type head struct {
		Kind     string          `json:"kind"`
		Engine   string          `json:"engine"`
		Sync     string          `json:"sync"`
		Workload string          `json:"workload"`
		Probe    json.RawMessage `json:"probe"`
	}
	var items []head
	res := bytes.TrimSpace(r.Result)
	if len(res) > 0 && res[0] == '[' {
		json.Unmarshal(res, &items)
	} else if len(res) > 0 {
		var one head
		if json.Unmarshal(res, &one) == nil {
			items = append(items, one)
		}
	}
	var kinds, engines, syncs, workloads []string
	add := func(list *[]string, v string) {
		if v != "" && !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	for _, it := range items {
		add(&kinds, it.Kind)
		add(&engines, it.Engine)
		add(&syncs, it.Sync)
		add(&workloads, it.Workload)
	}
	if r.Kind == "" && len(kinds) == 1 {
		r.Kind = kinds[0]
	}
	r.Engine = strings.Join(engines, ",")
	r.Sync = strings.Join(syncs, ",")
	r.Workload = strings.Join(workloads, ",")
	if len(r.Probe) == 0 && len(items) > 0 {
		switch {
		case items[0].Kind == "probe":
			r.Probe = json.RawMessage(res)
		case len(items[0].Probe) > 0 && string(items[0].Probe) != "null":
			r.Probe = items[0].Probe
		}
	}
	if r.Version == "" {
		r.Version = Version()
	}
	if r.Host == "" {
		r.Host = HostID()
	}
}

// Synthetic returns the i-th of a reproducible series of made-up bench
// runs, for benchmarks and tests that need a full archive: a realistic
// result (latency table, probe, a timeline of seconds points) spread over
// 4 lessons, 5 cells each, 3 engines, 4 sync policies and 3 workloads.
func Synthetic(i int, seconds int) *Run {
	engines := []string{"kv", "bbolt", "pebble"}
	syncs := []string{"always", "group", "batch:64", "none"}
	workloads := []string{"fillrandom", "readrandom", "overwrite"}
	e, s, w := engines[i%3], syncs[(i/3)%4], workloads[(i/12)%3]
	ops := 1000.0 + float64(i%997)
	spec := fmt.Sprintf("bench -engine %s -sync %s -workload %s -ops 8000", e, s, w)
	var tl, points strings.Builder
	tl.WriteString("[")
	points.WriteString("[")
	for sec := 1; sec <= seconds; sec++ {
		if sec > 1 {
			tl.WriteString(",")
			points.WriteString(",")
		}
		fmt.Fprintf(&tl, `{"elapsed_seconds":%d,"ops":%d,"ops_per_sec":%.1f,"p50_ns":%d,"p99_ns":%d,"engine":%q}`,
			sec, int(ops)*sec, ops, 40000+i%1000, 900000+i%5000, e)
		fmt.Fprintf(&points, `{"second":%d,"ops":%d,"ops_per_sec":%.1f,"seconds":1}`, sec, int(ops), ops)
	}
	tl.WriteString("]")
	points.WriteString("]")
	// The latency table's spectrum and histogram, shaped like a real
	// run's (12 points, 23 buckets), so sizes measured on these runs hold
	// for real ones.
	var spectrum, hist strings.Builder
	for k, p := range []string{"0", "10", "25", "50", "75", "90", "95", "99", "99.5", "99.9", "99.99", "100"} {
		if k > 0 {
			spectrum.WriteString(",")
		}
		fmt.Fprintf(&spectrum, `{"p":%s,"ns":%d}`, p, 20000+k*k*9000+i%1000)
	}
	le := 2512.0
	for k := range 23 {
		if k > 0 {
			hist.WriteString(",")
		}
		fmt.Fprintf(&hist, `{"le_ns":%.0f,"count":%d}`, le, (i*7+k*13)%2000)
		le *= 1.585
	}
	probe := `{"fs":"ext4","device":"vda","rotational":false,"write_ns":1800,"fdatasync_ns":950000,"sync_call":"fdatasync","cores":2,"go":"go1.26"}`
	result := fmt.Sprintf(`{"kind":"bench","spec":%q,"engine":%q,"sync":%q,"workload":%q,"threads":1,"ops":8000,"units":8000,`+
		`"wall_seconds":%.3f,"ops_per_sec":%.1f,"units_per_sec":%.1f,"value_size":128,"keys":8000,"dist":"uniform","warmup":800,`+
		`"latency":{"put":{"count":8000,"mean_ns":%d,"min_ns":20000,"p50_ns":%d,"p95_ns":800000,"p99_ns":%d,"p999_ns":2000000,"max_ns":3000000,"exact":true,"spectrum":[%s],"histogram":[%s]}},`+
		`"fsyncs":8000,"fsyncs_counted":true,"fsync_mean_ns":950000,"bytes_written":1200000,"timeline":%s,"probe":%s,"load_avg":0.5}`,
		spec+" -threads 1 -value-size 128 -keys 8000 -dist uniform -warmup 800", e, s, w, 8000/ops, ops, ops,
		500000+i%1000, 40000+i%1000, 900000+i%5000, spectrum.String(), hist.String(), points.String(), probe)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	return &Run{
		Kind: "bench", Spec: spec, SpecFull: spec + " -threads 1 -value-size 128 -keys 8000 -dist uniform -warmup 800",
		Engine: e, Sync: s, Workload: w, Result: json.RawMessage(result), Probe: json.RawMessage(probe),
		Timeline: json.RawMessage(tl.String()), Source: "cell",
		Lesson: fmt.Sprintf("%02d-lesson", 1+i%4), Cell: fmt.Sprintf("c%d", 1+(i/4)%5), Browser: fmt.Sprintf("b%03d", i%40),
		Version: "devel+synthetic", Host: "synthetic/000000000000",
		Started: t0, Ended: t0.Add(time.Duration(seconds) * time.Second),
	}
}

// Fill adds n runs made by Synthetic (timelines of seconds points) to a,
// in transactions of up to 1000 runs where the archive can (both built-in
// stores can), so 100,000 runs take seconds, not an fsync each.
func Fill(ctx context.Context, a Archive, n, seconds int) error {
	b, batched := a.(interface {
		addBatch(context.Context, []*Run) error
	})
	for start := 0; start < n; start += 1000 {
		chunk := make([]*Run, 0, 1000)
		for i := start; i < min(start+1000, n); i++ {
			chunk = append(chunk, Synthetic(i, seconds))
		}
		if batched {
			if err := b.addBatch(ctx, chunk); err != nil {
				return fmt.Errorf("archive: filling: %w", err)
			}
			continue
		}
		for _, r := range chunk {
			if _, err := a.Add(ctx, r); err != nil {
				return err
			}
		}
	}
	// Refresh the planner's statistics, as PostgreSQL's autovacuum and a
	// SQLite that has seen "PRAGMA optimize" would have by then.
	if s, ok := a.(*sqlStore); ok {
		if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
			return fmt.Errorf("archive: filling: %w", err)
		}
	}
	return nil
}
