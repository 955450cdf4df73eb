package runspage

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"kvlab/internal/archive"
)

// tsvColumns are the columns of /runs/ID.tsv: one row per measured run in
// the result (a -repeat or sweep line has several), the run's archive
// fields first. Latencies are of the first op kind the result has (put,
// get, delete, scan, in that order).
var tsvColumns = []string{"run_id", "started", "source", "lesson", "cell", "host", "version", "kind", "spec",
	"engine", "sync", "workload", "threads", "value_size", "keys", "ops", "wall_seconds", "ops_per_sec",
	"op", "p50_ns", "p95_ns", "p99_ns", "p999_ns", "max_ns", "fsyncs", "fsync_mean_ns", "fs", "device"}

// writeRunTSV writes r as tab-separated values with a header line. A run
// that is not a bench or sweep (probe, model, crash) gets one row with its
// archive fields and empty figures. A field with a tab, a line break or a
// double quote in it is quoted, as encoding/csv quotes (RFC 4180), so it
// stays one field on one row; every spreadsheet reads it back as it was.
func writeRunTSV(w io.Writer, r *archive.Run) error {
	type lat struct {
		P50  float64 `json:"p50_ns"`
		P95  float64 `json:"p95_ns"`
		P99  float64 `json:"p99_ns"`
		P999 float64 `json:"p999_ns"`
		Max  float64 `json:"max_ns"`
	}
	type bench struct {
		Kind        string          `json:"kind"`
		Spec        string          `json:"spec"`
		Engine      string          `json:"engine"`
		Sync        string          `json:"sync"`
		Workload    string          `json:"workload"`
		Threads     int             `json:"threads"`
		ValueSize   int             `json:"value_size"`
		Keys        int             `json:"keys"`
		Ops         int64           `json:"ops"`
		WallSeconds float64         `json:"wall_seconds"`
		OpsPerSec   float64         `json:"ops_per_sec"`
		Latency     map[string]*lat `json:"latency"`
		Fsyncs      int64           `json:"fsyncs"`
		FsyncMean   float64         `json:"fsync_mean_ns"`
		Probe       struct {
			FS     string `json:"fs"`
			Device string `json:"device"`
		} `json:"probe"`
	}
	var rows []bench
	if json.Unmarshal(r.Result, &rows) != nil {
		var one bench
		if json.Unmarshal(r.Result, &one) == nil {
			rows = []bench{one}
		}
	}
	tw := csv.NewWriter(w)
	tw.Comma = '\t'
	if err := tw.Write(tsvColumns); err != nil {
		return err
	}
	head := []string{fmt.Sprint(r.ID), r.Started.UTC().Format("2006-01-02T15:04:05.000Z"), r.Source, r.Lesson, r.Cell, r.Host, r.Version, r.Kind}
	if len(rows) == 0 {
		rows = []bench{{Spec: r.Spec}}
	}
	for _, b := range rows {
		if b.Kind != "bench" {
			b = bench{Spec: r.Spec}
		}
		op, l := "", &lat{}
		for _, k := range []string{"put", "get", "delete", "scan"} {
			if x := b.Latency[k]; x != nil {
				op, l = k, x
				break
			}
		}
		num := func(x float64) string {
			if x == 0 && b.Kind != "bench" {
				return ""
			}
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		cols := append(append([]string{}, head...), b.Spec, b.Engine, b.Sync, b.Workload,
			num(float64(b.Threads)), num(float64(b.ValueSize)), num(float64(b.Keys)), num(float64(b.Ops)), num(b.WallSeconds), num(b.OpsPerSec),
			op, num(l.P50), num(l.P95), num(l.P99), num(l.P999), num(l.Max), num(float64(b.Fsyncs)), num(b.FsyncMean), b.Probe.FS, b.Probe.Device)
		if err := tw.Write(cols); err != nil {
			return err
		}
	}
	tw.Flush()
	return tw.Error()
}
