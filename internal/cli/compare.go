package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"kvlab/harness/calc"
	"kvlab/internal/archive"

	"golang.org/x/perf/benchmath"
)

const compareUsage = `usage: labserver compare [flags] A B                 two groups of runs by id
       labserver compare [filters] -last N [-at ID]    the last N runs before and after a change

Compares group A (before) with group B (after), metric by metric: ops/s,
then p50, p99, p99.9 and max of each op kind, then the fsync mean. For
each it prints both medians (± the half-width of their 95% confidence
interval, in percent; "±?" for a group too small to have one, with a
note saying how many runs it takes), B's change against A, and whether the difference
is significant: the Mann-Whitney U test at alpha 0.05, as benchstat does
it (golang.org/x/perf/benchmath). Below 4 runs a group the test cannot
reach 0.05 however far apart the groups are: the row says "too few runs"
instead of a verdict. Runs measured under different conditions (host,
filesystem, device, value size, key count, labserver version) get a
warning naming the difference. A bench -repeat N run counts as N runs;
sweeps over several thread counts and multi-engine lines are refused
(compare one configuration).

Groups that ran interleaved (a cell's rounds, or runs started A B B A
...: as many runs each, the i-th of each before either's next) are also
compared round by round: the "paired" line gives the median of the
per-round ratios of ops/s and their range, which a drift of the machine
between the groups does not move.

A and B are run ids: comma lists and ranges, e.g. 1,2,3 or 4-9 or 3,5-7.

With -last N, the groups come from the runs the filters select
(-lesson, -cell, -engine, -sync, -workload, -source, -browser; bench and
sweep runs only): B is the newest N runs from run ID on (-at ID: the
first run after the change), A the N runs just before ID. Without -at, B
is the newest N runs and A the N before them.

flags:
  -data DIR       data directory holding kvlab.db (default: the server's)
  -archive V      sqlite (kvlab.db in -data, the default) or a postgres:// URL
  -format F       table | json (default table)

examples:
  labserver bench -sync always -ops 4000 -repeat 6      (recorded as run 12)
  labserver bench -sync batch:64 -ops 4000 -repeat 6    (recorded as run 13)
  labserver compare 12 13
  labserver compare 1-6 7-12 -format json
  labserver compare -lesson 03-group-commit -cell c2 -last 5 -at 240
`

// compareMain is `labserver compare ...`.
func compareMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ca, err := parseCompareArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, compareUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "labserver compare: %v\nrun 'labserver compare -h' for its flags\n", err)
		return 2
	}
	a, err := ca.af.openForReading(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "labserver compare: %v\n", err)
		return 1
	}
	defer a.Close()
	c, err := ca.compare(ctx, a)
	if err == nil && ca.format == "json" {
		err = writeJSON(stdout, c)
	} else if err == nil {
		writeComparison(stdout, c)
	}
	if err != nil {
		fmt.Fprintf(stderr, "labserver compare: %v\n", err)
		return 1
	}
	return 0
}

// compareArgs is a compare command line, parsed and checked: either two
// groups of run ids, or -last N with filters.
type compareArgs struct {
	af         archiveFlags
	format     string        // table or json
	q          archive.Query // the filters of -last
	last       int           // -last N: the two groups are the newest 2N runs matching q; 0 with run ids
	at         int64         // -at: the newest run -last may pick, 0 for the newest of all
	idsA, idsB []int64       // the two groups of run ids, without -last
}

// parseCompareArgs reads compare's flags and run ids; flag.ErrHelp for -h.
func parseCompareArgs(args []string) (compareArgs, error) {
	var ca compareArgs
	fs := flag.NewFlagSet("labserver compare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&ca.af.dataDir, "data", archive.DefaultDataDir(), "")
	fs.StringVar(&ca.af.target, "archive", "sqlite", "")
	fs.StringVar(&ca.format, "format", "table", "")
	q := &ca.q
	for name, p := range map[string]*string{"lesson": &q.Lesson, "cell": &q.Cell, "engine": &q.Engine, "sync": &q.Sync,
		"workload": &q.Workload, "source": &q.Source, "browser": &q.Browser} {
		fs.StringVar(p, name, "", "")
	}
	fs.IntVar(&ca.last, "last", 0, "")
	fs.Int64Var(&ca.at, "at", 0, "")
	pos, err := parseInterspersed(fs, args)
	if err == nil {
		err = checkTarget(ca.af.target, false)
	}
	if err == nil && ca.format != "table" && ca.format != "json" {
		err = fmt.Errorf("-format %s: allowed: table, json", ca.format)
	}
	if err == nil {
		err = ca.chooseGroups(pos)
	}
	return ca, err
}

// chooseGroups checks that the line names its two groups one way only,
// and reads the run ids when it names them by id.
func (ca *compareArgs) chooseGroups(pos []string) (err error) {
	filtered := ca.q != archive.Query{}
	switch {
	case ca.last == 0 && (filtered || ca.at != 0):
		return fmt.Errorf("filters and -at choose runs with -last N; with run ids give neither")
	case ca.last == 0 && len(pos) != 2:
		return fmt.Errorf("give two groups of run ids (e.g. compare 1,2,3 4-6), or -last N with filters")
	case ca.last == 0:
		if ca.idsA, err = parseIDs(pos[0]); err == nil {
			ca.idsB, err = parseIDs(pos[1])
		}
		return err
	case len(pos) > 0:
		return fmt.Errorf("-last N chooses the runs: give no run ids (%q)", pos[0])
	case ca.last < 1 || ca.last > archive.MaxLimit/2:
		return fmt.Errorf("-last %d: must be between 1 and %d", ca.last, archive.MaxLimit/2)
	case ca.at < 0:
		return fmt.Errorf("-at %d: must be a run id (1 or more)", ca.at)
	}
	return nil
}

// compare reads the two groups from the archive and compares them.
func (ca compareArgs) compare(ctx context.Context, a archive.Archive) (*archive.Comparison, error) {
	var ga, gb []archive.Run
	var err error
	if ca.last > 0 {
		ga, gb, err = lastGroups(ctx, a, ca.q, ca.last, ca.at)
	} else if ga, err = getRuns(ctx, a, ca.idsA); err == nil {
		gb, err = getRuns(ctx, a, ca.idsB)
	}
	if err != nil {
		return nil, err
	}
	return archive.Compare(ga, gb)
}

// parseIDs reads "1,2,3", "4-9" or "3,5-7".
func parseIDs(s string) ([]int64, error) {
	var ids []int64
	seen := map[int64]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.ParseInt(lo, 10, 64)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.ParseInt(hi, 10, 64)
		}
		if err1 != nil || err2 != nil || a < 1 || b < a || b-a >= archive.MaxLimit {
			return nil, fmt.Errorf("run ids %q: write ids from 1 up as a comma list and ranges, e.g. 1,2,3 or 4-9 (a range low to high, at most %d ids)", s, archive.MaxLimit)
		}
		for id := a; id <= b; id++ {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > archive.MaxLimit {
		return nil, fmt.Errorf("run ids %q: at most %d in a group", s, archive.MaxLimit)
	}
	return ids, nil
}

func getRuns(ctx context.Context, a archive.Archive, ids []int64) ([]archive.Run, error) {
	var out []archive.Run
	for _, id := range ids {
		r, err := a.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// lastGroups picks the -last N groups: B the newest n selected bench or
// sweep runs at or after at (all, when at is 0), A the n before B.
func lastGroups(ctx context.Context, a archive.Archive, q archive.Query, n int, at int64) ([]archive.Run, []archive.Run, error) {
	pick := func(before int64) ([]archive.Run, error) {
		var out []archive.Run
		q := q
		q.Before = before
		q.Limit = archive.MaxLimit
		for len(out) < n {
			page, err := a.List(ctx, q)
			if err != nil {
				return nil, err
			}
			for _, r := range page {
				if (r.Kind == "bench" || r.Kind == "sweep") && len(out) < n {
					out = append(out, r)
				}
			}
			if len(page) < q.Limit {
				break
			}
			q.Before = page[len(page)-1].ID
		}
		return out, nil
	}
	var gb []archive.Run
	var err error
	if at > 0 {
		all, err := pick(0)
		if err != nil {
			return nil, nil, err
		}
		// The newest n from at on; the list is newest first.
		for _, r := range all {
			if r.ID >= at {
				gb = append(gb, r)
			}
		}
		if len(gb) == 0 {
			return nil, nil, fmt.Errorf("-at %d: no selected bench run from id %d on", at, at)
		}
	} else {
		if gb, err = pick(0); err != nil {
			return nil, nil, err
		}
		if len(gb) == 0 {
			return nil, nil, fmt.Errorf("no bench runs match the filters")
		}
		at = gb[len(gb)-1].ID
	}
	ga, err := pick(at)
	if err != nil {
		return nil, nil, err
	}
	if len(ga) == 0 {
		return nil, nil, fmt.Errorf("no selected bench run before id %d to compare with", at)
	}
	// Oldest first, as ids are written. Compare reads only what List
	// keeps (results, host, version), so the summaries serve.
	slices.Reverse(ga)
	slices.Reverse(gb)
	return ga, gb, nil
}

// writeComparison prints the comparison as a table, benchstat-like.
func writeComparison(w io.Writer, c *archive.Comparison) {
	for _, g := range []struct {
		name string
		g    archive.Group
	}{{"A", c.A}, {"B", c.B}} {
		fmt.Fprintf(w, "%s: runs %s (%d samples)  %s\n", g.name, idList(g.g.RunIDs), g.g.Samples, strings.Join(g.g.Specs, " | "))
	}
	if len(c.Changed) > 0 {
		fmt.Fprintf(w, "changed: %s\n", strings.Join(c.Changed, "; "))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tA median\tB median\tchange\tp\tverdict")
	tooFew := ""
	noInterval := math.MaxInt // the fewest samples of a median printed without an interval
	for _, m := range c.Metrics {
		change := "?"
		if m.ChangePct != nil {
			change = fmt.Sprintf("%+.1f%%", *m.ChangePct)
		}
		verdict := m.Verdict
		if m.Verdict == "not significant" {
			verdict = "~ (not significant)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t%s\n", m.Label, median(m, m.A), median(m, m.B), change, m.P, verdict)
		for _, sm := range []archive.Summary{m.A, m.B} {
			if (sm.Lo == nil || sm.Hi == nil) && sm.Median != 0 {
				noInterval = min(noInterval, sm.N)
			}
		}
		if m.TooFew {
			tooFew = m.Note
		}
	}
	tw.Flush()
	if p := c.Paired; p != nil {
		fmt.Fprintf(w, "\npaired: the groups ran interleaved in %d rounds; B's ops/s against A's round by round: median %.2fx (rounds %.2f–%.2fx)\n", p.Rounds, p.Ratio, p.Low, p.High)
	}
	if noInterval != math.MaxInt {
		need := minIntervalRuns()
		fmt.Fprintf(w, "\n±?: a group of %d runs is too few for a %.0f%% confidence interval of its median; it takes %d or more (bench -repeat %d).\n",
			noInterval, archive.Confidence*100, need, need)
	}
	if tooFew != "" {
		fmt.Fprintf(w, "\n%s: repeat each configuration (bench -repeat %d) before reading anything into the change.\n", tooFew, c.MinRuns)
	}
	if len(c.Warnings) > 0 {
		fmt.Fprintln(w)
		for _, warn := range c.Warnings {
			fmt.Fprintf(w, "WARNING: %s\n", warn)
		}
	}
}

// median prints a median with ± the larger half of its confidence
// interval in percent, or "±?" when the group has too few samples for
// one (the table's note then says how many it takes).
func median(m archive.MetricComparison, s archive.Summary) string {
	v := fmt.Sprintf("%.0f", s.Median)
	if m.Unit == "ns" {
		v = calc.FormatNs(s.Median)
	}
	if s.Lo == nil || s.Hi == nil || s.Median == 0 {
		return v + " ±?"
	}
	half := math.Max(*s.Hi-s.Median, s.Median-*s.Lo) / math.Abs(s.Median) * 100
	return fmt.Sprintf("%s ±%.0f%%", v, half)
}

// minIntervalRuns is the fewest samples for which benchmath gives the
// median a confidence interval at archive.Confidence: with fewer, every
// order statistic is too likely to lie on one side of the median.
var minIntervalRuns = sync.OnceValue(func() int {
	for n := 2; n < 100; n++ {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(i + 1)
		}
		th := benchmath.DefaultThresholds
		sm := benchmath.AssumeNothing.Summary(benchmath.NewSample(vals, &th), archive.Confidence)
		if !math.IsInf(sm.Lo, 0) && !math.IsInf(sm.Hi, 0) && !math.IsNaN(sm.Lo) && !math.IsNaN(sm.Hi) {
			return n
		}
	}
	return 0
})

// idList writes ids back compactly: 1-3,7.
func idList(ids []int64) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		} else {
			parts = append(parts, strconv.FormatInt(ids[i], 10))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
