package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"kvlab/harness/calc"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Output formats: table (for people: a db_bench-like latency table, the
// throughput, and the conditions the number was measured under), tsv (for
// spreadsheets), json (the DESIGN.md contract), benchstat (Go benchmark
// lines, so `benchstat old.txt new.txt` compares two configurations) and
// timeline (TSV, one row per second of each run, for plotting).

// opOrder is the order op kinds are printed in.
var opOrder = []string{"put", "get", "delete", "scan"}

// Write prints v, a result of execSpec, in format.
func Write(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "tsv":
		if rs, ok := v.([]*ScriptResult); ok {
			return writeScriptTSV(w, rs)
		}
		return writeTSV(w, v)
	case "benchstat":
		return writeBenchstat(w, v)
	case "timeline":
		return writeTimelineTSV(w, v)
	}
	switch r := v.(type) {
	case *BenchResult:
		return writeBenchTable(w, r)
	case []*BenchResult:
		return writeCompareTable(w, r)
	case *ProbeResult:
		if err := writeProbeTable(w, r); err != nil {
			return err
		}
		return writeMethodsTable(w, r.Methods)
	case *ModelResult:
		return writeModelTable(w, r)
	case *CrashResult:
		return writeCrashTable(w, r)
	case []*ScriptResult:
		return writeScriptTable(w, r)
	}
	return fmt.Errorf("harness: cannot print %T", v)
}

func writeBenchTable(w io.Writer, r *BenchResult) error {
	fmt.Fprintln(w, r.Spec)
	if len(r.Dishonest) > 0 {
		fmt.Fprintf(w, "DISHONEST: this run breaks the timing rule(s) %s on purpose; do not quote its numbers\n", strings.Join(r.Dishonest, ", "))
	}
	if r.Cancelled {
		fmt.Fprintln(w, "CANCELLED: the figures cover only what ran before the stop")
	}
	if r.Capped {
		fmt.Fprintln(w, "CAPPED: the run reached the total-bytes limit before its -duration was up")
	}
	if r.GeneratorLate {
		writeGeneratorLate(w, r)
	}
	if r.BacklogUnits > 0 {
		who := "the store"
		if r.Behind == "generator" {
			who = "the load generator, not the store,"
		}
		fmt.Fprintf(w, "BEHIND: %s fell behind -rate; %d units due before the deadline never started (censored samples: their latency, the worst of the run, is in no table below, so the corrected percentiles are incomplete without them)\n", who, r.BacklogUnits)
	}
	// The db_bench line: time per op, ops per second, payload throughput.
	microsPerOp := 0.0
	if r.OpsPerSec > 0 {
		microsPerOp = 1e6 / r.OpsPerSec
	}
	mbps := r.OpsPerSec * float64(keyLen+r.ValueSize) / (1 << 20)
	fmt.Fprintf(w, "%-16s : %11.3f micros/op %10.0f ops/sec %8.1f MB/s (%d ops in %.3f s, %d thread%s%s)\n",
		r.Workload, microsPerOp, r.OpsPerSec, mbps, r.Ops, r.WallSeconds, r.Threads, plural(r.Threads), pipelineNote(r))
	if r.Units != r.Ops {
		fmt.Fprintf(w, "%-16s   %11s           %10.0f units/sec (%d units; a unit is one workload step)\n", "", "", r.UnitsPerSec, r.Units)
	}
	writeLatency(w, r.Latency, "")
	if s := reopenLine(r); s != "" {
		fmt.Fprintln(w, s)
	}
	if s := serverLine(r); s != "" {
		fmt.Fprintln(w, s)
	}
	if s := replicationLine(r); s != "" {
		fmt.Fprintln(w, s)
	}
	if s := fanoutLine(r); s != "" {
		fmt.Fprintln(w, s)
	}
	if r.LatencyUncorrected != nil {
		fmt.Fprintf(w, "open loop at %g units/s: latency above is from each intended start; without that correction:\n", r.Rate)
		writeLatency(w, r.LatencyUncorrected, " (uncorrected)")
		if l := r.PacerLag; l != nil {
			fmt.Fprintf(w, "pacer lag (the load generator's own lateness): p50 %s p99 %s max %s over %d units; its delay to the units' ends p99 %s\n",
				calc.FormatNs(float64(l.P50Ns)), calc.FormatNs(float64(l.P99Ns)), calc.FormatNs(float64(l.MaxNs)), l.Count, calc.FormatNs(float64(l.DelayP99Ns)))
		}
		fmt.Fprintf(w, "utilization %.2f (rate x mean service time, from the uncorrected latencies)", r.Utilization)
		if r.BacklogUnits > 0 {
			fmt.Fprintf(w, "   %d of %d due units never started (censored)", r.BacklogUnits, r.Units+r.BacklogUnits)
		}
		fmt.Fprintln(w)
	}
	var extra []string
	if r.HitRate != nil {
		extra = append(extra, fmt.Sprintf("hit rate %.1f%%", *r.HitRate*100))
	}
	if r.Fsyncs > 0 {
		extra = append(extra, fmt.Sprintf("fsyncs %d (mean %s, %.1f ops per fsync)", r.Fsyncs, calc.FormatNs(r.FsyncMeanNs), float64(r.Ops)/float64(r.Fsyncs)))
		if r.FsyncSamples > 0 {
			extra = append(extra, fmt.Sprintf("fdatasync p50 %s p99 %s max %s (%d timed)", calc.FormatNs(float64(r.FsyncP50Ns)), calc.FormatNs(float64(r.FsyncP99Ns)), calc.FormatNs(float64(r.FsyncMaxNs)), r.FsyncSamples))
		}
	} else if r.FsyncsCounted {
		extra = append(extra, "fsyncs 0")
	} else {
		extra = append(extra, fmt.Sprintf("fsyncs not counted (the %s engine does not report them)", r.Engine))
	}
	fmt.Fprintln(w, strings.Join(extra, "   "))
	if s := fsyncSplit(r); s != "" {
		fmt.Fprintln(w, s)
	}
	if s := cacheLine(r.Cache); s != "" {
		fmt.Fprintln(w, s)
	}
	if s := steadyLine(r.SteadyState); s != "" {
		fmt.Fprintln(w, s)
	}
	if s := ampLine(r.Amplification); s != "" {
		fmt.Fprintln(w, s)
	}
	if s := walReuseLine(r.EngineMetrics); s != "" {
		fmt.Fprintln(w, s)
	}
	if s := stallLine(r.EngineMetrics); s != "" {
		fmt.Fprintln(w, s)
	}
	if s := deviceLine(r.DeviceIO); s != "" {
		fmt.Fprintln(w, s)
	}
	if m := r.Model; m != nil {
		fsrc := map[string]string{"run": "this run's mean fdatasync", "probe": "the probe's"}[m.TFsyncSource]
		if m.TFsyncCase != "" {
			fsrc += " (" + m.TFsyncCase + ")"
		}
		measured := fmt.Sprintf("measured %.0f ops/s (%s)", r.OpsPerSec, ratio(r.OpsPerSec, m.PredictedOpsPerSec))
		if r.Rate > 0 { // an open loop runs at its rate, not at the store's capacity
			measured = fmt.Sprintf("this open loop ran at its -rate, %.0f ops/s, %.2f of that capacity", r.OpsPerSec, r.OpsPerSec/max(m.PredictedOpsPerSec, 1))
		}
		if m.Bookkeeping {
			// Both inputs are this run's own: the formula restates its
			// throughput; only a model line predicts.
			fmt.Fprintf(w, "bookkeeping: %s from this run's own costs gives %.0f ops/s (T_write %s: %s, T_fsync %s: %s); %s; not a prediction: a model line predicts\n",
				r.Sync, m.PredictedOpsPerSec, calc.FormatNs(m.TWriteNs), tWriteSourceText(m.TWriteSource), calc.FormatNs(m.TFsyncNs), fsrc, measured)
		} else {
			fmt.Fprintf(w, "model: %s predicts %.0f ops/s (T_write %s: %s, T_fsync %s: %s); %s\n",
				r.Sync, m.PredictedOpsPerSec, calc.FormatNs(m.TWriteNs), tWriteSourceText(m.TWriteSource), calc.FormatNs(m.TFsyncNs), fsrc, measured)
		}
		fmt.Fprintf(w, "       p99 on the %s path (measured: %s, threshold %s); a crash can lose up to %.0f acknowledged writes (%.2f ms at this run's %.0f Puts/s)\n",
			m.P99Path, m.MeasuredP99Path, calc.FormatNs(m.P99ThresholdNs), m.LossWindowWrites, m.LossWindowMs, m.WriteRate)
	}
	fmt.Fprintln(w, conditions(r))
	fmt.Fprintln(w, useLine([]*BenchResult{r}))
	if r.Dir != "" {
		fmt.Fprintf(w, "data kept in %s (-keep)\n", r.Dir)
	}
	return nil
}

// fsyncCauses are the fsyncs_by_cause keys, in the order the table lists
// them, each with what the table calls it.
var fsyncCauses = []struct{ key, label string }{
	{"commit", "commit (the policy's own)"},
	{"seal", "segment seal"},
	{"prealloc", "zero-fill (under the write lock: Puts queue behind it)"},
	{"compaction", "compaction"},
	{"hint", "hint file"},
	{"open", "open"},
}

// fsyncSplit is the table's line that splits a run's fdatasyncs by cause,
// or "" when the store does not say or every one was a commit.
func fsyncSplit(r *BenchResult) string {
	by := r.FsyncsByCause
	var parts []string
	var total int64
	for _, c := range fsyncCauses {
		if n := by[c.key]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, c.label))
			total += n
		}
	}
	if total == by["commit"] {
		return ""
	}
	return fmt.Sprintf("fdatasyncs by cause: %s; %d in all", strings.Join(parts, ", "), total)
}

// cacheLine is the table's line of a -cache cold run's eviction, or ""
// on a warm run.
func cacheLine(c *CacheReport) string {
	switch {
	case c == nil:
		return ""
	case c.Unavailable != "":
		return "page cache: NOT cold (" + c.Unavailable + ")"
	}
	s := fmt.Sprintf("page cache: cold: %d files, %s written back and evicted after the warmup", c.Files, FormatBytes(c.Bytes))
	if c.ResidentAfter != nil {
		s += fmt.Sprintf("; %.1f%% of their pages still resident (mincore)", 100**c.ResidentAfter)
	}
	if c.Note != "" {
		s += "; " + c.Note
	}
	return s
}

// deviceLine is the table's line of the disk's own counters, or "" when
// the result has none.
func deviceLine(d *DeviceIO) string {
	switch {
	case d == nil:
		return ""
	case d.Unavailable != "":
		return "device counters: none (" + d.Unavailable + ")"
	}
	per := func(p *float64, what string) string {
		if p == nil {
			return ""
		}
		return fmt.Sprintf(" (%.3g %s)", *p, what)
	}
	s := fmt.Sprintf("device %s: %d write requests%s, %s written%s", d.Device,
		*d.WriteRequests, per(d.WriteRequestsPerOp, "per op"),
		FormatBytes(*d.WriteBytes), per(d.BytesPerLogicalByte, "device bytes per logical byte"))
	if d.ReadRequests != nil && *d.ReadRequests > 0 {
		s += fmt.Sprintf(", %d read requests (%s)", *d.ReadRequests, FormatBytes(*d.ReadBytes))
	}
	if d.FlushRequests != nil {
		s += fmt.Sprintf(", %d flushes%s", *d.FlushRequests, per(d.FlushesPerOp, "per op"))
		if d.WriteCache == "write through" {
			s += " (a write-through disk: the kernel sends it no flushes)"
		}
	} else {
		s += "; " + d.FlushMissing
	}
	s += "; the whole device's counts, other writers included"
	if d.NetWriteRequests != nil {
		s += fmt.Sprintf("\n       net of an idle baseline (%.0f ms just before the run): %.0f write requests%s", d.IdleMs, *d.NetWriteRequests, per(d.NetWriteRequestsPerOp, "per op"))
		if d.NetFlushRequests != nil {
			s += fmt.Sprintf(", %.0f flushes%s", *d.NetFlushRequests, per(d.NetFlushesPerOp, "per op"))
		}
		if d.OtherWriters {
			s += "; OTHER WRITERS: " + d.OtherWritersNote
		}
	}
	return s
}

// writeGeneratorLate is the LATE line of an open-loop run whose corrected
// tail is mostly the load generator's lateness (pacer.go).
func writeGeneratorLate(w io.Writer, r *BenchResult) {
	worst := worstP99(r.Latency)
	l := r.PacerLag
	fmt.Fprintf(w, "LATE: the load generator, not the store, was late: its delay p99 %s (pacer lag p99 %s) is more than %.0f%% of the corrected p99 %s, so the corrected latencies below measure the generator more than the store\n",
		calc.FormatNs(float64(l.DelayP99Ns)), calc.FormatNs(float64(l.P99Ns)), GeneratorLateFraction*100, calc.FormatNs(float64(worst)))
}

// tWriteSourceText says where a bench model's T_write came from (model.go).
func tWriteSourceText(source string) string {
	switch source {
	case "run_wall":
		return "this run's wall time per Put outside the flush"
	case "run_mean":
		return "this run's mean Put outside the flush"
	case "run_service":
		return "this run's mean service time per Put outside the flush, uncorrected"
	case "probe":
		return "the probe's write(2)"
	}
	return source
}

// ratio says how far a measurement is from a prediction.
func ratio(measured, predicted float64) string {
	if predicted <= 0 {
		return "no prediction"
	}
	return fmt.Sprintf("%.2fx the prediction", measured/predicted)
}

func writeLatency(w io.Writer, lat map[string]*LatencySummary, suffix string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tcount\tmean\tp50\tp95\tp99\tp99.9\tmax\texact\t")
	for _, op := range opOrder {
		s := lat[op]
		if s == nil {
			continue
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t\n", op, suffix, s.Count, calc.FormatNs(s.MeanNs),
			calc.FormatNs(float64(s.P50Ns)), calc.FormatNs(float64(s.P95Ns)), calc.FormatNs(float64(s.P99Ns)), calc.FormatNs(float64(s.P999Ns)), calc.FormatNs(float64(s.MaxNs)), s.Exact)
	}
	tw.Flush()
}

// conditions is the line that says what the number was measured under.
func conditions(r *BenchResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "conditions: %s sync=%s, %d B values, %d keys %s", r.Engine, r.Sync, r.ValueSize, r.Keys, r.Dist)
	if p := r.Probe; p != nil {
		kind := "ssd"
		if p.Rotational {
			kind = "rotational"
		}
		fmt.Fprintf(&b, "; %s on %s (%s), write %s, %s %s", p.FS, p.Device, kind, calc.FormatNs(p.WriteNs), syncCallName(p.SyncCall), calc.FormatNs(p.FdatasyncNs))
		if p.FdatasyncOverwriteNs > 0 {
			fmt.Fprintf(&b, " appending, %s overwriting", calc.FormatNs(p.FdatasyncOverwriteNs))
		}
		fmt.Fprintf(&b, "; %d cores, %s", p.Cores, p.Go)
	}
	if r.LoadAvg > 0 {
		fmt.Fprintf(&b, "; load %.2f before the run", r.LoadAvg)
	}
	return b.String()
}

// useLine is the USE check printed beside the conditions line: for each
// resource the runs used, its utilization, its saturation and its errors
// (Brendan Gregg's USE method), from what the results measured: the
// disk's busy time and requests in flight (device_io), the load average
// before each run against the cores, and, in an open loop, the load
// generator's own lateness (pacer_lag). A closed loop's generator cannot
// be late: each thread starts its next unit when the store returns the
// last. The processors' share busy during the run, this process's part
// of it and the time a hypervisor stole (cpu) follow the load. Over
// several runs (a sweep, -repeat, -engine a,b) each figure is the range
// of the runs'. What the results do not have the line says they do not
// have.
func useLine(rs []*BenchResult) string {
	var busy, inFlight, loads, lags []float64
	var cpuBusy, cpuSelf, steal, stealMs []float64
	var disk, noDisk string
	var late, open, closed, cancelled int
	var backlog int64
	cores := 0
	for _, r := range rs {
		switch d := r.DeviceIO; {
		case d == nil || d.Unavailable != "":
			noDisk = "disk: no counters"
		case d.BusyFraction == nil || d.MeanInFlight == nil:
			noDisk = "disk " + d.Device + ": busy time not measured"
		default:
			disk = d.Device
			busy, inFlight = append(busy, 100**d.BusyFraction), append(inFlight, *d.MeanInFlight)
		}
		if r.Probe != nil {
			cores = max(cores, r.Probe.Cores)
		}
		if r.LoadAvg > 0 {
			loads = append(loads, r.LoadAvg)
		}
		if c := r.CPU; c != nil && c.Unavailable == "" && c.IntervalMs > 0 {
			cpuBusy, cpuSelf = append(cpuBusy, 100*c.BusyFraction), append(cpuSelf, 100*c.ProcessFraction)
			steal, stealMs = append(steal, 100*c.StealFraction), append(stealMs, c.StealMs)
		}
		switch {
		case r.Rate == 0:
			closed++
		default:
			open++
			if r.GeneratorLate {
				late++
			}
			if r.PacerLag != nil {
				lags = append(lags, float64(r.PacerLag.P99Ns))
			}
		}
		backlog += r.BacklogUnits
		if r.Cancelled {
			cancelled++
		}
	}
	var parts []string
	switch {
	case disk != "" && noDisk == "":
		parts = append(parts, fmt.Sprintf("disk %s busy %s%% of the run, %s requests in flight on average", disk, span(busy, "%.0f"), span(inFlight, "%.2f")))
	case noDisk != "":
		parts = append(parts, noDisk)
	}
	switch {
	case len(loads) == 0:
		parts = append(parts, "CPU load unknown")
	case cores > 0 && slices.Max(loads) > float64(cores):
		parts = append(parts, fmt.Sprintf("CPU SATURATED before the run: load %s on %d cores", span(loads, "%.2f"), cores))
	case cores > 0:
		parts = append(parts, fmt.Sprintf("CPU load %s on %d cores before the run", span(loads, "%.2f"), cores))
	default:
		parts = append(parts, fmt.Sprintf("CPU load %s before the run", span(loads, "%.2f")))
	}
	if len(cpuBusy) == len(rs) {
		during := fmt.Sprintf(", busy %s%% during it (this process %s%%)", span(cpuBusy, "%.0f"), span(cpuSelf, "%.0f"))
		if slices.Max(steal) >= StolenFraction*100 {
			during += fmt.Sprintf(", the hypervisor STOLE %s%% (%s ms)", span(steal, "%.1f"), span(stealMs, "%.0f"))
		} else {
			during += fmt.Sprintf(", steal %s%%", span(steal, "%.1f"))
		}
		parts[len(parts)-1] += during
	}
	gen := ""
	switch {
	case open == 0:
		gen = "generator: closed loop, paced by the store"
	case late > 0 && open == 1:
		gen = "generator LATE"
	case late > 0:
		gen = fmt.Sprintf("generator LATE in %d of %d open-loop runs", late, open)
	default:
		gen = "generator on time"
	}
	if len(lags) > 0 {
		gen += fmt.Sprintf(" (pacer lag p99 %s)", calc.FormatNs(slices.Max(lags)))
		if len(lags) > 1 {
			gen = strings.Replace(gen, "p99 ", "p99 up to ", 1)
		}
	}
	if backlog > 0 {
		gen += fmt.Sprintf(", %d units never started", backlog)
	}
	parts = append(parts, gen)
	switch {
	case cancelled == 0:
		parts = append(parts, "errors: none (a store error stops the run)")
	case len(rs) == 1:
		parts = append(parts, "errors: cancelled before the end")
	default:
		parts = append(parts, fmt.Sprintf("errors: %d of %d runs cancelled before the end", cancelled, len(rs)))
	}
	return "USE: " + strings.Join(parts, "; ")
}

// span is one value, or the lowest and the highest of several, in format f.
func span(v []float64, f string) string {
	lo, hi := fmt.Sprintf(f, slices.Min(v)), fmt.Sprintf(f, slices.Max(v))
	if lo == hi {
		return hi
	}
	return lo + "–" + hi
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// writeCompareTable prints several runs as one table: a row per run and
// op kind, the speed-up against the first thread count of each engine (the
// saturation curve of a sweep), and for -repeat the medians and, when the
// results carry it, the pooled latency of all the runs' samples.
func writeCompareTable(w io.Writer, rs []*BenchResult) error {
	if len(rs) == 0 {
		fmt.Fprintln(w, "no runs completed")
		return nil
	}
	fmt.Fprintf(w, "%s  (%d runs)\n", rs[0].Workload, len(rs))
	engines, bySweep := compareAxes(rs)
	// With several thread counts the ratio column is the speed-up against
	// each engine's first count (the saturation curve); with one thread
	// count and several engines, the throughput against the first engine.
	ratioHead := "speed-up"
	if !bySweep && len(engines) > 1 {
		ratioHead = "vs " + engines[0]
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "engine\tsync\tthreads\trun\tops/s\t%s\top\tp50\tp95\tp99\tp99.9\tmax\t\n", ratioHead)
	// Runs measured in the same rounds (an interleaved -repeat) are
	// compared round by round: the ratio is the median of the per-round
	// ratios, each run's row shows its round's, and the spread of those
	// is printed under the table. Runs without rounds fall back to the
	// ratio of the medians.
	base := map[string][]*BenchResult{} // engine (or "" across engines) -> the baseline's runs
	var spreads []string
	for _, g := range groupRuns(rs) {
		med := medianRun(g)
		key := g[0].Engine
		if !bySweep {
			key = ""
		}
		if _, ok := base[key]; !ok {
			base[key] = g
		}
		bg := base[key]
		speed, perRound := "-", map[int]string{}
		if p := pairOps(g, bg); p != nil {
			speed = fmt.Sprintf("%.2fx", p.Ratio)
			for i, r := range g {
				if i < len(p.Ratios) && &bg[0] != &g[0] {
					perRound[r.Round] = fmt.Sprintf("%.2fx", p.Ratios[i])
				}
			}
			if &bg[0] != &g[0] {
				spreads = append(spreads, fmt.Sprintf("%s %d thread%s %.2f–%.2fx", g[0].Engine, g[0].Threads, plural(g[0].Threads), p.Low, p.High))
			}
		} else if b := medianRun(bg).OpsPerSec; b > 0 {
			speed = fmt.Sprintf("%.2fx", med.OpsPerSec/b)
		}
		writeCompareGroup(tw, g, med, speed, perRound)
	}
	tw.Flush()
	if len(spreads) > 0 {
		fmt.Fprintf(w, "%s: the median of per-round paired ratios (runs interleaved in mirrored rounds, A B B A ...); their range: %s\n", ratioHead, strings.Join(spreads, "; "))
	}
	for _, r := range rs {
		if len(r.Dishonest) > 0 {
			fmt.Fprintf(w, "DISHONEST: some runs break timing rules on purpose (%s)\n", strings.Join(r.Dishonest, ", "))
			break
		}
	}
	// Open-loop runs whose corrected tail is the load generator's (pacer.go).
	for _, r := range rs {
		if r.GeneratorLate && r.PacerLag != nil {
			fmt.Fprintf(w, "LATE: %s, %d thread%s%s: the load generator, not the store, was late (its delay p99 %s, pacer lag p99 %s)\n",
				r.Engine, r.Threads, plural(r.Threads), runSuffix(r), calc.FormatNs(float64(r.PacerLag.DelayP99Ns)), calc.FormatNs(float64(r.PacerLag.P99Ns)))
		}
	}
	for _, r := range rs {
		if s := serverLine(r); s != "" {
			fmt.Fprintf(w, "%s, %d thread%s%s: %s\n", r.Engine, r.Threads, plural(r.Threads), runSuffix(r), s)
		}
	}
	if s := reopenMedians(rs); s != "" {
		fmt.Fprintln(w, s)
	}
	c := *rs[0]
	c.Engine = strings.Join(engines, ",")
	fmt.Fprintln(w, conditions(&c))
	fmt.Fprintln(w, useLine(rs))
	return nil
}

// compareAxes returns the engines of rs in order of appearance, and
// whether rs sweep thread counts (more than one among them).
func compareAxes(rs []*BenchResult) (engines []string, bySweep bool) {
	threads := map[int]bool{}
	for _, r := range rs {
		threads[r.Threads] = true
		if !slices.Contains(engines, r.Engine) {
			engines = append(engines, r.Engine)
		}
	}
	return engines, len(threads) > 1
}

// writeCompareGroup writes the rows of one group of repeats: each run,
// then, when there are several, their median (with the ratio column
// speed) and their pooled samples; a lone run carries speed itself.
//
// perRound, when the group was paired round by round with its baseline,
// holds each round's ratio for the run rows.
func writeCompareGroup(tw io.Writer, g []*BenchResult, med *BenchResult, speed string, perRound map[int]string) {
	rows := g
	var pooled *BenchResult
	if len(g) > 1 {
		rows = append(slices.Clone(g), med)
		if p := g[len(g)-1].Pooled; p != nil {
			// Every sample of the group's runs together: its
			// percentiles are not the medians above.
			c := *g[0]
			c.Latency = p.Latency
			pooled = &c
			rows = append(rows, pooled)
		}
	}
	for _, r := range rows {
		run := "-"
		if r.Run > 0 {
			run = fmt.Sprint(r.Run)
		}
		ops := fmt.Sprintf("%.0f", r.OpsPerSec)
		if r == med && len(g) > 1 {
			run = "median"
		}
		if r == pooled {
			run, ops = "pooled", "-"
		}
		sp := ""
		if r == med || len(g) == 1 {
			sp = speed
		} else if r != pooled && perRound[r.Round] != "" {
			sp = perRound[r.Round]
		}
		for _, op := range opOrder {
			s := r.Latency[op]
			if s == nil {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Engine, r.Sync, r.Threads, run, ops, sp, op,
				calc.FormatNs(float64(s.P50Ns)), calc.FormatNs(float64(s.P95Ns)), calc.FormatNs(float64(s.P99Ns)), calc.FormatNs(float64(s.P999Ns)), calc.FormatNs(float64(s.MaxNs)))
		}
	}
}

// runSuffix names a run within a -repeat, or nothing.
func runSuffix(r *BenchResult) string {
	if r.Run > 0 {
		return fmt.Sprintf(", run %d", r.Run)
	}
	return ""
}

// groupRuns groups consecutive runs of the same engine and thread count
// (the repeats of one configuration).
func groupRuns(rs []*BenchResult) [][]*BenchResult {
	var gs [][]*BenchResult
	for _, r := range rs {
		if n := len(gs); n > 0 && gs[n-1][0].Engine == r.Engine && gs[n-1][0].Threads == r.Threads {
			gs[n-1] = append(gs[n-1], r)
			continue
		}
		gs = append(gs, []*BenchResult{r})
	}
	return gs
}

// medianRun returns a synthetic result holding the medians of g's
// throughput and of each latency percentile, op kind by op kind.
func medianRun(g []*BenchResult) *BenchResult {
	if len(g) == 1 {
		return g[0]
	}
	m := *g[0]
	m.Run = 0
	m.OpsPerSec = median(g, func(r *BenchResult) float64 { return r.OpsPerSec })
	m.UnitsPerSec = median(g, func(r *BenchResult) float64 { return r.UnitsPerSec })
	m.Latency = map[string]*LatencySummary{}
	for op := range g[0].Latency {
		get := func(f func(*LatencySummary) int64) int64 {
			return int64(median(g, func(r *BenchResult) float64 {
				if s := r.Latency[op]; s != nil {
					return float64(f(s))
				}
				return 0
			}))
		}
		m.Latency[op] = &LatencySummary{
			P50Ns:  get(func(s *LatencySummary) int64 { return s.P50Ns }),
			P95Ns:  get(func(s *LatencySummary) int64 { return s.P95Ns }),
			P99Ns:  get(func(s *LatencySummary) int64 { return s.P99Ns }),
			P999Ns: get(func(s *LatencySummary) int64 { return s.P999Ns }),
			MaxNs:  get(func(s *LatencySummary) int64 { return s.MaxNs }),
		}
	}
	return &m
}

// median is the middle value (the mean of the two middle ones for an even
// count: a median of runs is a summary, not a sample).
func median(g []*BenchResult, f func(*BenchResult) float64) float64 {
	v := make([]float64, len(g))
	for i, r := range g {
		v[i] = f(r)
	}
	return Median(v)
}

// Median is the median of v, a summary of repeated runs: the middle value,
// or the mean of the two middle ones for an even count; 0 for none. v is
// not changed.
func Median(v []float64) float64 { return calc.MedianOf(v) }

func benchList(v any) []*BenchResult {
	switch r := v.(type) {
	case *BenchResult:
		return []*BenchResult{r}
	case []*BenchResult:
		return r
	}
	return nil
}

func writeTSV(w io.Writer, v any) error {
	rs := benchList(v)
	if rs == nil {
		// Other kinds: their JSON fields, flattened one level, as key\tvalue.
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			val, _ := json.Marshal(m[k])
			fmt.Fprintf(w, "%s\t%s\n", k, strings.Trim(string(val), `"`))
		}
		return nil
	}
	fmt.Fprintln(w, strings.Join([]string{"engine", "sync", "workload", "threads", "run", "ops", "units", "wall_seconds", "ops_per_sec", "units_per_sec",
		"op", "count", "mean_ns", "p50_ns", "p95_ns", "p99_ns", "p999_ns", "max_ns", "exact", "fsyncs", "fsync_mean_ns", "dishonest"}, "\t"))
	for _, r := range rs {
		for _, op := range opOrder {
			s := r.Latency[op]
			if s == nil {
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.6f\t%.1f\t%.1f\t%s\t%d\t%.1f\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t%.1f\t%s\n",
				r.Engine, r.Sync, r.Workload, r.Threads, r.Run, r.Ops, r.Units, r.WallSeconds, r.OpsPerSec, r.UnitsPerSec,
				op, s.Count, s.MeanNs, s.P50Ns, s.P95Ns, s.P99Ns, s.P999Ns, s.MaxNs, s.Exact, r.Fsyncs, r.FsyncMeanNs, strings.Join(r.Dishonest, ","))
		}
	}
	return nil
}

// writeBenchstat prints one Go benchmark line per run, named by its
// configuration, so repeated runs of the same name are what benchstat
// compares: ns/op from the wall clock, then ops/s and the percentiles of
// the first op kind as extra units.
func writeBenchstat(w io.Writer, v any) error {
	rs := benchList(v)
	if rs == nil {
		return fmt.Errorf("-format benchstat: only bench and sweep results have benchmark lines")
	}
	fmt.Fprintln(w, "pkg: kvlab/harness")
	for _, r := range rs {
		name := fmt.Sprintf("BenchmarkKV/engine=%s/sync=%s/workload=%s/threads=%d/value=%d/dist=%s", r.Engine, r.Sync, r.Workload, r.Threads, r.ValueSize, r.Dist)
		if r.Rate > 0 {
			name += "/rate=" + strconv.FormatFloat(r.Rate, 'g', -1, 64)
		}
		if r.Pipeline > 1 {
			name += "/pipeline=" + strconv.Itoa(r.Pipeline)
		}
		if len(r.Dishonest) > 0 {
			name += "/dishonest=" + strings.Join(r.Dishonest, "+")
		}
		nsPerOp := math.Inf(1)
		if r.OpsPerSec > 0 {
			nsPerOp = 1e9 / r.OpsPerSec
		}
		fmt.Fprintf(w, "%s\t%d\t%.1f ns/op\t%.1f ops/s", name, r.Ops, nsPerOp, r.OpsPerSec)
		for _, op := range opOrder {
			if s := r.Latency[op]; s != nil {
				fmt.Fprintf(w, "\t%d %s-p50-ns\t%d %s-p99-ns\t%d %s-max-ns", s.P50Ns, op, s.P99Ns, op, s.MaxNs, op)
			}
		}
		fmt.Fprintln(w)
	}
	return nil
}

func writeProbeTable(w io.Writer, p *ProbeResult) error {
	kind := "not rotational"
	if p.Rotational {
		kind = "rotational"
	}
	fmt.Fprintf(w, "host %s: %s, %d cores, %s RAM, %s, %s %s\n", p.Host, p.CPU, p.Cores, FormatBytes(p.RAMBytes), p.Kernel, p.Go, p.OS)
	fmt.Fprintf(w, "dir %s: %s on %s (%s), %s free\n", p.Dir, p.FS, p.Device, kind, FormatBytes(p.FreeBytes))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\titerations\tmean\tp50\tp99\tmax\tops/s\t")
	for _, c := range []struct {
		name string
		c    ProbeCost
	}{{fmt.Sprintf("write %d B", p.WriteSize), p.Write}, {fmt.Sprintf("write %d B + %s, append", p.WriteSize, syncCallName(p.SyncCall)), p.WriteFdatasync},
		{fmt.Sprintf("write %d B + %s, overwrite", p.WriteSize, syncCallName(p.SyncCall)), p.WriteFdatasyncOverwrite}} {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%.0f\t\n", c.name, c.c.Iterations, calc.FormatNs(c.c.MeanNs), calc.FormatNs(float64(c.c.P50Ns)),
			calc.FormatNs(float64(c.c.P99Ns)), calc.FormatNs(float64(c.c.MaxNs)), c.c.OpsPerSec)
	}
	tw.Flush()
	call := syncCallName(p.SyncCall)
	fmt.Fprintf(w, "%s alone costs about %s (mean of write+%s minus mean of write) appending, where the file's new size is committed too (pebble's WAL),\n", call, calc.FormatNs(p.FdatasyncNs), call)
	fmt.Fprintf(w, "and about %s overwriting allocated, zero-filled space, with only the data to commit (kv's segments)\n", calc.FormatNs(p.FdatasyncOverwriteNs))
	return nil
}

// syncCallName is the call a probe timed; results from before the field
// existed were all fdatasync.
func syncCallName(call string) string {
	if call == "" {
		return "fdatasync"
	}
	return call
}

func writeModelTable(w io.Writer, m *ModelResult) error {
	if m.Replication != nil {
		writeReplicationModel(w, m)
		return nil
	}
	src := func(s string) string {
		switch s {
		case "given":
			return "as given on the line"
		case "kv_run":
			return "the wall time per Put of short kv runs here with no commit in them, plus a Put's share of a zero-fill"
		case "probe_batch_flush":
			return "the mean fdatasync after writing N Puts' bytes into allocated space here"
		case "probe_overwrite":
			return "the probe's fdatasync into allocated space, the kv engine's case"
		}
		return "measured by a quick probe of the data directory"
	}
	if m.TWriteSource == m.TFsyncSource {
		fmt.Fprintf(w, "model %s with T_write %s and T_fsync %s (%s)\n", m.Sync, calc.FormatNs(m.TWriteNs), calc.FormatNs(m.TFsyncNs), src(m.TWriteSource))
	} else {
		fmt.Fprintf(w, "model %s with T_write %s (%s) and T_fsync %s (%s)\n", m.Sync, calc.FormatNs(m.TWriteNs), src(m.TWriteSource), calc.FormatNs(m.TFsyncNs), src(m.TFsyncSource))
	}
	if m.TFillNs > 0 {
		fmt.Fprintf(w, "T_write               %s per Put + %s, its share of zero-filling the segment ahead (%s per %s zero-fill, %.0f bytes per Put)\n",
			calc.FormatNs(m.TPutNs), calc.FormatNs(m.TFillShareNs), calc.FormatNs(m.TFillNs), FormatBytes(m.FillBytes), m.BytesPerPut)
	}
	fmt.Fprintf(w, "predicted throughput  %.0f ops/s\n", m.PredictedOpsPerSec)
	fmt.Fprintf(w, "slow fraction         %.2f%% of Puts wait for an fdatasync -> p99 on the %s path (about %s)\n",
		m.SlowFraction*100, m.P99Path, calc.FormatNs(m.PredictedP99Ns))
	fmt.Fprintf(w, "loss window           up to %.0f acknowledged writes, about %.2f ms (at the model's %.0f writes/s: no run measured a rate)\n", m.LossWindowWrites, m.LossWindowMs, m.WriteRate)
	return nil
}

// pipelineNote says, after the thread count, how deep each thread
// pipelined and from when its latencies count; "" when it did not.
func pipelineNote(r *BenchResult) string {
	if r.Pipeline <= 1 {
		return ""
	}
	return fmt.Sprintf(", each pipelining %d requests; latency from its batch's send to its own reply", r.Pipeline)
}

// writeTimelineTSV prints one row per second of each run of a bench or
// sweep line (a script line's measured phase included): a header, then
// the run's identity and that second's counts.
func writeTimelineTSV(w io.Writer, v any) error {
	if rs, ok := v.([]*ScriptResult); ok {
		fmt.Fprintln(w, strings.Join([]string{"engine", "round", "script", "sweep_param", "sweep_value", "floor", "second", "units", "ops"}, "\t"))
		for _, r := range rs {
			for _, p := range r.Timeline {
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\t%v\t%d\t%d\t%d\n", r.Engine, r.Round, r.Script, r.SweepParam, r.SweepValue, r.Floor, p.Second, p.Units, p.Ops)
			}
		}
		return nil
	}
	rs := benchList(v)
	if rs == nil {
		return fmt.Errorf("-format timeline: a %T has no timeline; bench and sweep lines have one", v)
	}
	fmt.Fprintln(w, strings.Join([]string{"engine", "sync", "workload", "threads", "run", "second", "ops", "ops_per_sec", "seconds"}, "\t"))
	for _, r := range rs {
		for _, p := range r.Timeline {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.1f\t%.4f\n", r.Engine, r.Sync, r.Workload, r.Threads, r.Run, p.Second, p.Ops, p.OpsPerSec, p.Seconds)
		}
	}
	return nil
}

// stallLine says how often and how long kv's writes waited for its
// background compaction (engine_metrics' write_stalls and
// write_stall_ns), or "" when they never did.
func stallLine(m map[string]int64) string {
	n, ns := m["write_stalls"], m["write_stall_ns"]
	if n == 0 || ns == 0 {
		return ""
	}
	return fmt.Sprintf("write stalls: %d, %s in all (writes waited while the compaction debt was past its bound)", n, time.Duration(ns).Round(time.Millisecond))
}
