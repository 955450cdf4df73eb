package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"kvlab/harness"
	"kvlab/internal/archive"
	"kvlab/internal/suggest"
)

const runsUsage = `usage: labserver runs [flags]                  list recorded runs, newest first
       labserver runs show ID [-format F]      one run in full: its conditions and the table it printed
       labserver runs export [flags]           every run the filters select, in full (JSON or TSV)

Every bench, sweep, probe, model and crash run of the command line, and
every run the server executes, is recorded in kvlab.db in the data
directory (or the PostgreSQL database given with -archive).

flags:
  -data DIR         data directory holding kvlab.db (default: the server's)
  -archive V        sqlite (kvlab.db in -data, the default) or a postgres:// URL
  -lesson L, -cell C, -engine E, -sync S, -workload W, -kind K, -source S, -browser B
                    only runs whose field is exactly that (kind: bench, sweep, probe, model, crash;
                    source: cli, cell, quiz)
  -before ID        only runs older than ID (the next page: the last id listed)
  -limit N          at most N runs (list: default 50, at most 1000; export: default all)
  -format F         list: table | tsv | json; show: table | json | tsv; export: json | tsv

examples:
  labserver runs
  labserver runs -engine kv -sync batch:64 -limit 20
  labserver runs show 17
  labserver runs show 17 -format json > run17.json
  labserver runs export -lesson 03-group-commit -format tsv > lesson3.tsv
`

// runsMain is `labserver runs ...`.
func runsMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	sub := "list"
	if len(args) > 0 && (args[0] == "show" || args[0] == "export" || args[0] == "list") {
		sub, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("labserver runs "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var q archive.Query
	af := archiveFlags{}
	fs.StringVar(&af.dataDir, "data", archive.DefaultDataDir(), "")
	fs.StringVar(&af.target, "archive", "sqlite", "")
	format := fs.String("format", "", "")
	if sub != "show" {
		for name, p := range map[string]*string{"lesson": &q.Lesson, "cell": &q.Cell, "engine": &q.Engine, "sync": &q.Sync,
			"workload": &q.Workload, "kind": &q.Kind, "source": &q.Source, "browser": &q.Browser} {
			fs.StringVar(p, name, "", "")
		}
		fs.Int64Var(&q.Before, "before", 0, "")
		fs.IntVar(&q.Limit, "limit", 0, "")
	}
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, runsUsage)
		return 0
	}
	if err == nil {
		err = checkTarget(af.target, false)
	}
	if err == nil && q.Limit < 0 {
		err = fmt.Errorf("-limit %d: must be 0 or more", q.Limit)
	}
	if err == nil && q.Before < 0 {
		err = fmt.Errorf("-before %d: must be a run id (1 or more)", q.Before)
	}
	var id int64
	if err == nil {
		switch {
		case sub == "show" && len(pos) != 1:
			err = fmt.Errorf("show takes one run id, e.g. labserver runs show 17")
		case sub == "show":
			id, err = strconv.ParseInt(pos[0], 10, 64)
			if err != nil || id < 1 {
				err = fmt.Errorf("show %s: a run id is a number from 1 up, as listed by labserver runs", pos[0])
			}
		case len(pos) > 0:
			err = fmt.Errorf("unexpected argument %q: flags start with -, e.g. -engine kv", pos[0])
		}
	}
	allowed := map[string][]string{"list": {"table", "tsv", "json"}, "show": {"table", "json", "tsv"}, "export": {"json", "tsv"}}[sub]
	if *format == "" {
		*format = allowed[0]
	}
	if err == nil && !slices.Contains(allowed, *format) {
		err = fmt.Errorf("-format %s: allowed for runs %s: %s", *format, sub, strings.Join(allowed, ", "))
	}
	if err != nil {
		fmt.Fprintf(stderr, "labserver runs: %v\nrun 'labserver runs -h' for its flags\n", err)
		return 2
	}
	a, err := af.openForReading(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "labserver runs: %v\n", err)
		return 1
	}
	defer a.Close()
	switch sub {
	case "show":
		err = showRun(ctx, a, id, *format, stdout)
	case "export":
		err = exportRuns(ctx, a, q, *format, stdout)
	default:
		err = listRuns(ctx, a, q, *format, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "labserver runs: %v\n", err)
		return 1
	}
	return 0
}

// parseInterspersed parses flags that may come before or after the
// positional arguments, which it returns. A mistyped flag's error
// carries a guess at the flag meant.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, suggest.FlagError(fs, err)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// listRuns prints one page of summaries.
func listRuns(ctx context.Context, a archive.Archive, q archive.Query, format string, w io.Writer) error {
	runs, err := a.List(ctx, q)
	if err != nil {
		return err
	}
	switch format {
	case "json":
		if runs == nil {
			runs = []archive.Run{}
		}
		return writeJSON(w, runs)
	case "tsv":
		fmt.Fprintln(w, "id\tstarted\tsource\tlesson\tcell\tkind\tengine\tsync\tworkload\tops_per_sec\tp99_ns\tspec")
		for _, r := range runs {
			ops, p99 := gistTSV(r)
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, stamp(r.Started), r.Source, r.Lesson, r.Cell, r.Kind,
				r.Engine, r.Sync, r.Workload, ops, p99, r.Spec)
		}
		return nil
	}
	if len(runs) == 0 {
		fmt.Fprintf(w, "no runs recorded in %s match\n", a.Where())
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tFROM\tRESULT\tSPEC")
	for _, r := range runs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.ID, r.Started.Local().Format("2006-01-02 15:04:05"), from(r), r.Gist().Text, r.Spec)
	}
	tw.Flush()
	if len(runs) == limitOf(q) {
		fmt.Fprintf(w, "older runs: labserver runs -before %d\n", runs[len(runs)-1].ID)
	}
	return nil
}

func limitOf(q archive.Query) int {
	if q.Limit <= 0 {
		return archive.DefaultLimit
	}
	return min(q.Limit, archive.MaxLimit)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// from says where a run came from: "cli", or "cell LESSON/CELL", "quiz
// LESSON/QUIZ".
func from(r archive.Run) string {
	switch r.Source {
	case "cell":
		return "cell " + r.Lesson + "/" + r.Cell
	case "quiz":
		return "quiz " + r.Lesson + "/" + r.Quiz
	}
	return r.Source
}

// gistTSV is a run's throughput and p99 for the TSV list: empty when it
// is not a bench (of several results, the first's).
func gistTSV(r archive.Run) (ops, p99 string) {
	g := r.Gist()
	if g.Benches == 0 {
		return "", ""
	}
	ops = fmt.Sprintf("%.1f", g.OpsPerSec)
	if g.P99Ns >= 0 {
		p99 = strconv.FormatInt(g.P99Ns, 10)
	}
	return ops, p99
}

// showRun prints one run: as JSON (the whole record), as the harness's
// TSV of its result, or as a header of where and when followed by the
// table it printed when it ran.
func showRun(ctx context.Context, a archive.Archive, id int64, format string, w io.Writer) error {
	r, err := a.Get(ctx, id)
	if err != nil {
		return err
	}
	if format == "json" {
		return writeJSON(w, r)
	}
	v, err := harness.DecodeResult(r.Result)
	if err != nil {
		return fmt.Errorf("run %d: %w", id, err)
	}
	if format == "tsv" {
		return harness.Write(w, "tsv", v)
	}
	fmt.Fprintf(w, "run %d  %s\n", r.ID, r.Spec)
	fmt.Fprintf(w, "  spec      %s\n", r.SpecFull)
	fmt.Fprintf(w, "  from      %s", from(*r))
	if r.Browser != "" {
		fmt.Fprintf(w, " (browser %s)", r.Browser)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  when      %s, %s\n", r.Started.Local().Format("2006-01-02 15:04:05 MST"), r.Ended.Sub(r.Started).Round(time.Millisecond))
	fmt.Fprintf(w, "  host      %s, labserver %s\n\n", r.Host, r.Version)
	return harness.Write(w, "table", v)
}

// exportRuns prints every run q selects in full, newest first: a JSON
// array of records, or TSV with one line per bench result (and op kind)
// prefixed by the run's id, time and origin.
func exportRuns(ctx context.Context, a archive.Archive, q archive.Query, format string, w io.Writer) error {
	left := q.Limit // 0: all
	first := true
	if format == "json" {
		fmt.Fprint(w, "[")
	} else {
		fmt.Fprintln(w, "id\tstarted\tsource\tlesson\tcell\tkind\t"+tsvHeader())
	}
	for {
		q.Limit = archive.MaxLimit
		if left > 0 {
			q.Limit = min(left, archive.MaxLimit)
		}
		page, err := a.List(ctx, q)
		if err != nil {
			return err
		}
		for _, s := range page {
			r, err := a.Get(ctx, s.ID)
			if err != nil {
				return err
			}
			if format == "json" {
				b, err := json.MarshalIndent(r, "  ", "  ")
				if err != nil {
					return err
				}
				if !first {
					fmt.Fprint(w, ",")
				}
				fmt.Fprintf(w, "\n  %s", b)
			} else if err := exportTSV(w, r); err != nil {
				return err
			}
			first = false
		}
		if left > 0 {
			if left -= len(page); left == 0 {
				break
			}
		}
		if len(page) < q.Limit {
			break
		}
		q.Before = page[len(page)-1].ID
	}
	if format == "json" {
		if !first {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, "]")
	}
	return nil
}

// tsvHeader is the harness's bench TSV header line.
func tsvHeader() string {
	var b bytes.Buffer
	harness.Write(&b, "tsv", []*harness.BenchResult{})
	return strings.TrimSuffix(b.String(), "\n")
}

func exportTSV(w io.Writer, r *archive.Run) error {
	prefix := fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s\t", r.ID, stamp(r.Started), r.Source, r.Lesson, r.Cell, r.Kind)
	v, err := harness.DecodeResult(r.Result)
	if err != nil {
		return fmt.Errorf("run %d: %w", r.ID, err)
	}
	switch v.(type) {
	case *harness.BenchResult, []*harness.BenchResult:
	default:
		fmt.Fprintln(w, prefix) // a probe, model or crash run: no bench columns
		return nil
	}
	var b bytes.Buffer
	if err := harness.Write(&b, "tsv", v); err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for _, l := range lines[1:] { // the header is printed once
		fmt.Fprintln(w, prefix+l)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
