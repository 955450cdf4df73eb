package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/perf/benchmath"

	"kvlab/harness"
	"kvlab/harness/calc"
)

// Before and after, the way benchstat does it: each group is a set of
// runs of one configuration; per metric Compare reports each group's
// median with its 95% confidence interval, the change of B's median
// against A's in percent, and the Mann–Whitney U test's p-value. A change
// is significant when p <= Alpha (0.05). With too few runs the U test
// cannot reach that p-value however far apart the groups are; Compare
// says so (TooFew) instead of calling the change real or not. All the
// statistics are golang.org/x/perf/benchmath's, the library benchstat
// itself uses.
//
// Only bench and sweep runs are compared. A run whose result is an array
// of one configuration (bench -repeat N) gives N samples; an array of
// several (a sweep over threads, -engine a,b) is refused: take one
// configuration per group.

// Alpha is the significance level Compare tests at (benchstat's default).
const Alpha = 0.05

// Confidence is the level of the medians' confidence intervals.
const Confidence = 0.95

// Comparison is Compare's answer. It is plain data for JSON: the compare
// page renders it and `labserver compare -format json` prints it.
type Comparison struct {
	A Group `json:"a"`
	B Group `json:"b"`
	// Metrics holds one row per metric both groups have, in a fixed
	// order: ops/s, then p50, p99, p99.9 and max for each op kind (put,
	// get, delete, scan), then the fsync mean.
	Metrics []MetricComparison `json:"metrics"`
	// Changed lists what differs between the groups' specs, e.g.
	// "sync: always → batch:64": what the comparison is about.
	Changed []string `json:"changed"`
	// Warnings name conditions that differ between or within the groups
	// (host, filesystem, device, value size, key count, labserver
	// version) and runs left out; a difference then may not be the
	// change's.
	Warnings []string `json:"warnings"`
	Alpha    float64  `json:"alpha"`
	// MinRuns is the fewest runs per group with which the U test can
	// reach Alpha at all (4 at 0.05): below it every row is TooFew.
	MinRuns int `json:"min_runs"`
	// Paired, when the groups ran interleaved (as many samples each, the
	// i-th of A and the i-th of B both started before either side's next
	// one: rounds), compares B's ops/s with A's round by round: the median
	// of the per-round ratios and their range (calc.PairRatios). Absent
	// for groups run one after the other, whose ratio carries whatever
	// the machine did in between.
	Paired *calc.Paired `json:"paired,omitempty"`
}

// Group describes one side of a comparison.
type Group struct {
	RunIDs  []int64  `json:"run_ids"`
	Samples int      `json:"samples"` // one per bench result; a -repeat run gives several
	Specs   []string `json:"specs"`   // the distinct specs of its samples
}

// MetricComparison is one metric's row.
type MetricComparison struct {
	Metric         string  `json:"metric"` // "ops_per_sec", "put.p99_ns", "fsync_mean_ns", ...
	Label          string  `json:"label"`  // "ops/s", "put p99", ...
	Unit           string  `json:"unit"`   // "ops/s" or "ns"
	HigherIsBetter bool    `json:"higher_is_better"`
	A              Summary `json:"a"`
	B              Summary `json:"b"`
	// ChangePct is (B/A - 1) * 100 of the medians; null when A's median
	// is 0.
	ChangePct *float64 `json:"change_pct"`
	P         float64  `json:"p"` // the U test's p-value
	// Significant is p <= Alpha: the groups differ in this metric.
	Significant bool `json:"significant"`
	// TooFew is true when the groups are too small for the U test to
	// tell (Note says how many runs it needs).
	TooFew bool `json:"too_few"`
	// Verdict is "better", "worse", "not significant" or "too few runs".
	Verdict string `json:"verdict"`
	Note    string `json:"note,omitempty"`
}

// Summary is one group's figures for one metric.
type Summary struct {
	N      int       `json:"n"`
	Median float64   `json:"median"`
	Lo     *float64  `json:"ci_lo"` // the median's confidence interval; null when too few samples give none
	Hi     *float64  `json:"ci_hi"`
	Values []float64 `json:"values"`
}

// sample is one bench result in a group.
type sample struct {
	run  *Run
	res  *harness.BenchResult
	spec string // res.Spec
}

// Compare compares group a (before) with group b (after). It fails when a
// group is empty, holds a run that is not a bench or sweep, or a run
// whose result mixes configurations.
func Compare(a, b []Run) (*Comparison, error) {
	sa, warnA, err := samples("A", a)
	if err != nil {
		return nil, err
	}
	sb, warnB, err := samples("B", b)
	if err != nil {
		return nil, err
	}
	c := &Comparison{A: describe(a, sa), B: describe(b, sb), Alpha: Alpha, MinRuns: minRuns(), Changed: []string{}}
	c.Warnings = append(append(warnA, warnB...), conditionWarnings(sa, sb)...)
	if c.Warnings == nil {
		c.Warnings = []string{}
	}
	c.Changed = specChanges(sa, sb)
	c.Paired = pairRounds(sa, sb)
	for _, m := range metricsOf(sa, sb) {
		c.Metrics = append(c.Metrics, compareMetric(m, sa, sb))
	}
	if len(c.Metrics) == 0 {
		return nil, fmt.Errorf("compare: the groups share no metric (A measures %s, B %s)", opKinds(sa), opKinds(sb))
	}
	return c, nil
}

// samples turns a group's runs into bench results, leaving out cancelled
// ones with a warning.
func samples(name string, runs []Run) ([]sample, []string, error) {
	if len(runs) == 0 {
		return nil, nil, fmt.Errorf("compare: group %s has no runs", name)
	}
	var out []sample
	var warns []string
	for i := range runs {
		r := &runs[i]
		if r.Kind != "bench" && r.Kind != "sweep" {
			return nil, nil, fmt.Errorf("compare: run %d is a %s run: compare takes bench runs (and sweeps of one thread count)", r.ID, r.Kind)
		}
		results, err := benchResults(r.Result)
		if err != nil {
			return nil, nil, fmt.Errorf("compare: run %d: %w", r.ID, err)
		}
		specs := map[string]bool{}
		for _, res := range results {
			specs[res.Spec] = true
		}
		if len(specs) > 1 {
			return nil, nil, fmt.Errorf("compare: run %d holds %d configurations (a sweep over threads or several engines): compare takes runs of one configuration each, e.g. bench -repeat 5", r.ID, len(specs))
		}
		for _, res := range results {
			if res.Cancelled {
				warns = append(warns, fmt.Sprintf("run %d was cancelled: left out of group %s", r.ID, name))
				continue
			}
			out = append(out, sample{run: r, res: res, spec: res.Spec})
		}
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("compare: group %s has no complete bench result (every run was cancelled)", name)
	}
	return out, warns, nil
}

// benchResults decodes a bench result or an array of them.
func benchResults(raw json.RawMessage) ([]*harness.BenchResult, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("no result recorded")
	}
	var list []*harness.BenchResult
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("result is not a bench result array: %v", err)
		}
	} else {
		var one harness.BenchResult
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, fmt.Errorf("result is not a bench result: %v", err)
		}
		list = []*harness.BenchResult{&one}
	}
	for _, r := range list {
		if r == nil || r.Kind != "bench" {
			return nil, fmt.Errorf("result is not a bench result")
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("result is empty")
	}
	return list, nil
}

func describe(runs []Run, ss []sample) Group {
	g := Group{Samples: len(ss)}
	for _, r := range runs {
		g.RunIDs = append(g.RunIDs, r.ID)
	}
	for _, s := range ss {
		if !slices.Contains(g.Specs, s.spec) {
			g.Specs = append(g.Specs, s.spec)
		}
	}
	return g
}

// metric is one figure read from a bench result.
type metric struct {
	key, label, unit string
	higher           bool
	get              func(*harness.BenchResult) (float64, bool)
}

var opKindOrder = []string{"put", "get", "delete", "scan"}

// metricsOf lists the metrics every sample of both groups has.
func metricsOf(a, b []sample) []metric {
	all := append(slices.Clone(a), b...)
	ms := []metric{{key: "ops_per_sec", label: "ops/s", unit: "ops/s", higher: true,
		get: func(r *harness.BenchResult) (float64, bool) { return r.OpsPerSec, true }}}
	for _, kind := range opKindOrder {
		for _, q := range []struct {
			name, label string
			pick        func(*harness.LatencySummary) int64
		}{
			{"p50_ns", "p50", func(l *harness.LatencySummary) int64 { return l.P50Ns }},
			{"p99_ns", "p99", func(l *harness.LatencySummary) int64 { return l.P99Ns }},
			{"p999_ns", "p99.9", func(l *harness.LatencySummary) int64 { return l.P999Ns }},
			{"max_ns", "max", func(l *harness.LatencySummary) int64 { return l.MaxNs }},
		} {
			ms = append(ms, metric{key: kind + "." + q.name, label: kind + " " + q.label, unit: "ns",
				get: func(r *harness.BenchResult) (float64, bool) {
					l := r.Latency[kind]
					if l == nil || l.Count == 0 {
						return 0, false
					}
					return float64(q.pick(l)), true
				}})
		}
	}
	ms = append(ms, metric{key: "fsync_mean_ns", label: "fsync mean", unit: "ns",
		get: func(r *harness.BenchResult) (float64, bool) { return r.FsyncMeanNs, r.FsyncsCounted && r.Fsyncs > 0 }})
	var out []metric
	for _, m := range ms {
		ok := true
		for _, s := range all {
			if _, has := m.get(s.res); !has {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

func opKinds(ss []sample) string {
	var kinds []string
	for _, k := range opKindOrder {
		for _, s := range ss {
			if l := s.res.Latency[k]; l != nil && l.Count > 0 {
				kinds = append(kinds, k)
				break
			}
		}
	}
	if len(kinds) == 0 {
		return "no ops"
	}
	return strings.Join(kinds, ", ")
}

func compareMetric(m metric, a, b []sample) MetricComparison {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = Alpha
	va, vb := values(m, a), values(m, b)
	xa, xb := benchmath.NewSample(va, &th), benchmath.NewSample(vb, &th)
	cmp := benchmath.AssumeNothing.Compare(xa, xb)
	row := MetricComparison{
		Metric: m.key, Label: m.label, Unit: m.unit, HigherIsBetter: m.higher,
		A: summarize(xa), B: summarize(xb), P: cmp.P,
	}
	if row.A.Median != 0 {
		pct := (row.B.Median/row.A.Median - 1) * 100
		row.ChangePct = &pct
	}
	row.Significant = cmp.P <= cmp.Alpha
	// benchmath warns exactly when the groups are too small for any
	// difference to reach Alpha (benchstat prints the same warning).
	if !row.Significant && len(cmp.Warnings) > 0 {
		row.TooFew = true
		row.Note = fmt.Sprintf("too few runs to tell: the U test needs at least %d runs in a group to detect a difference at alpha %v (A has %d, B has %d)",
			minRuns(), Alpha, len(va), len(vb))
	}
	switch {
	case row.TooFew:
		row.Verdict = "too few runs"
	case !row.Significant || row.A.Median == row.B.Median:
		row.Verdict = "not significant"
	case (row.B.Median > row.A.Median) == m.higher:
		row.Verdict = "better"
	default:
		row.Verdict = "worse"
	}
	return row
}

func values(m metric, ss []sample) []float64 {
	out := make([]float64, 0, len(ss))
	for _, s := range ss {
		v, _ := m.get(s.res)
		out = append(out, v)
	}
	return out
}

func summarize(x *benchmath.Sample) Summary {
	s := benchmath.AssumeNothing.Summary(x, Confidence)
	out := Summary{N: len(x.Values), Median: s.Center, Values: x.Values}
	if !math.IsInf(s.Lo, 0) && !math.IsNaN(s.Lo) {
		out.Lo = &s.Lo
	}
	if !math.IsInf(s.Hi, 0) && !math.IsNaN(s.Hi) {
		out.Hi = &s.Hi
	}
	return out
}

// minRuns is the fewest samples per group with which benchmath's U test
// can reach Alpha: two groups of n that do not overlap at all give the
// smallest p-value n samples can give.
func minRuns() int {
	minRunsOnce.Do(func() {
		th := benchmath.DefaultThresholds
		th.CompareAlpha = Alpha
		for n := 1; n <= 50; n++ {
			a, b := make([]float64, n), make([]float64, n)
			for i := range n {
				a[i], b[i] = float64(i), float64(n+i)
			}
			if c := benchmath.AssumeNothing.Compare(benchmath.NewSample(a, &th), benchmath.NewSample(b, &th)); c.P <= Alpha {
				minRunsN = n
				return
			}
		}
		panic("archive: the U test never reaches Alpha: benchmath changed")
	})
	return minRunsN
}

var (
	minRunsOnce sync.Once
	minRunsN    int
)

// condition is one thing that must be the same on both sides for a
// difference to be the change's.
type condition struct {
	name string
	get  func(sample) string
}

var conditions = []condition{
	{"host", func(s sample) string { return s.run.Host }},
	{"filesystem", func(s sample) string {
		if s.res.Probe == nil {
			return ""
		}
		return s.res.Probe.FS
	}},
	{"device", func(s sample) string {
		if s.res.Probe == nil {
			return ""
		}
		return s.res.Probe.Device
	}},
	{"value size", func(s sample) string { return strconv.Itoa(s.res.ValueSize) }},
	{"key count", func(s sample) string { return strconv.Itoa(s.res.Keys) }},
	{"labserver version", func(s sample) string { return s.run.Version }},
}

// conditionWarnings names every condition whose values differ between
// the groups or within one.
func conditionWarnings(a, b []sample) []string {
	var out []string
	for _, c := range conditions {
		va, vb := distinct(a, c.get), distinct(b, c.get)
		switch {
		case len(va) > 1 || len(vb) > 1:
			out = append(out, fmt.Sprintf("conditions differ: %s: A has %s, B has %s", c.name, strings.Join(va, ", "), strings.Join(vb, ", ")))
		case va[0] != vb[0]:
			out = append(out, fmt.Sprintf("conditions differ: %s: A %s, B %s", c.name, va[0], vb[0]))
		}
	}
	for _, g := range []struct {
		name string
		ss   []sample
	}{{"A", a}, {"B", b}} {
		if specs := distinct(g.ss, func(s sample) string { return s.spec }); len(specs) > 1 {
			out = append(out, fmt.Sprintf("group %s mixes %d configurations: %s", g.name, len(specs), strings.Join(specs, " | ")))
		}
	}
	return out
}

func distinct(ss []sample, get func(sample) string) []string {
	var out []string
	for _, s := range ss {
		v := get(s)
		if v == "" {
			v = "(unknown)"
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// specChanges lists the spec flags whose values differ between the
// groups' first specs, as "flag: A → B".
func specChanges(a, b []sample) []string {
	fa, fb := specFlags(a[0].spec), specFlags(b[0].spec)
	var names []string
	for k := range fa {
		names = append(names, k)
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	out := []string{}
	for _, k := range names {
		if fa[k] != fb[k] {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, orNone(fa[k]), orNone(fb[k])))
		}
	}
	return out
}

func orNone(v string) string {
	if v == "" {
		return "(not set)"
	}
	return v
}

// specFlags splits a canonical spec ("bench -engine kv -sync always ...")
// into flag → value; a flag that stands alone gets "on".
func specFlags(spec string) map[string]string {
	w := strings.Fields(spec)
	out := map[string]string{}
	for i := 1; i < len(w); i++ {
		if !strings.HasPrefix(w[i], "-") {
			continue
		}
		name := strings.TrimLeft(w[i], "-")
		if i+1 < len(w) && !strings.HasPrefix(w[i+1], "-") {
			out[name] = w[i+1]
			i++
		} else {
			out[name] = "on"
		}
	}
	return out
}

// startOf is when a sample's run began: the result's own started_at, or
// the archived run's start.
func startOf(s sample) time.Time {
	if !s.res.StartedAt.IsZero() {
		return s.res.StartedAt
	}
	return s.run.Started
}

// pairRounds pairs a's and b's samples by start order when they ran in
// rounds (see Comparison.Paired), and compares b's ops/s with a's.
func pairRounds(a, b []sample) *calc.Paired {
	if len(a) != len(b) || len(a) < 2 {
		return nil
	}
	sa, sb := slices.Clone(a), slices.Clone(b)
	for _, g := range [][]sample{sa, sb} {
		slices.SortStableFunc(g, func(x, y sample) int { return startOf(x).Compare(startOf(y)) })
	}
	var num, den []float64
	for i := range sa {
		ta, tb := startOf(sa[i]), startOf(sb[i])
		if ta.IsZero() || tb.IsZero() {
			return nil
		}
		if i+1 < len(sa) {
			next := startOf(sa[i+1])
			if nb := startOf(sb[i+1]); nb.Before(next) {
				next = nb
			}
			if !ta.Before(next) || !tb.Before(next) {
				return nil
			}
		}
		num, den = append(num, sb[i].res.OpsPerSec), append(den, sa[i].res.OpsPerSec)
	}
	p, err := calc.PairRatios(num, den)
	if err != nil {
		return nil
	}
	return &p
}
