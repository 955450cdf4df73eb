package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kvlab/engine/crashtest"
	"kvlab/harness"
	"kvlab/harness/harnesstest"
	"kvlab/internal/archive"
	"kvlab/internal/pgtest"
)

func TestMain(m *testing.M) {
	crashtest.MaybeRunChild()
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// cmd runs one command line and returns its exit code, stdout and stderr.
func cmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut strings.Builder
	code := Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustRun runs a command line that must succeed.
func mustRun(t *testing.T, args ...string) (string, string) {
	t.Helper()
	code, out, errOut := cmd(t, args...)
	if code != 0 {
		t.Fatalf("labserver %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out, errOut
}

// noDefaultArchive points the default data directory at a temporary one,
// so a test that forgets -data cannot write to the user's cache.
func noDefaultArchive(t *testing.T) string {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	return filepath.Join(cache, "kvlab")
}

func TestBenchIsRecorded(t *testing.T) {
	noDefaultArchive(t)
	data := t.TempDir()
	_, errOut := mustRun(t, "bench", "-engine", "null", "-duration", "1100ms", "-data", data, "-format", "json")
	if !strings.Contains(errOut, "recorded as run 1 in "+filepath.Join(data, archive.FileName)) || !strings.Contains(errOut, "runs show 1 -data "+data) {
		t.Errorf("stderr %q: want it to say where the run was recorded and how to see it", errOut)
	}
	a, err := archive.Open(context.Background(), "", data, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r, err := a.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != "bench" || r.Source != "cli" || r.Engine != "null" || r.Sync != "always" || r.Workload != "fillrandom" {
		t.Errorf("run 1: kind %q source %q engine %q sync %q workload %q", r.Kind, r.Source, r.Engine, r.Sync, r.Workload)
	}
	// As written, without the command line's own flags; and in full.
	if r.Spec != "bench -engine null -duration 1100ms -format json" {
		t.Errorf("spec as written: %q", r.Spec)
	}
	if !strings.Contains(r.SpecFull, "-value-size 128") || !strings.Contains(r.SpecFull, "-warmup 100") {
		t.Errorf("spec in full: %q: want the defaults filled in", r.SpecFull)
	}
	var res harness.BenchResult
	if err := json.Unmarshal(r.Result, &res); err != nil || res.OpsPerSec <= 0 {
		t.Errorf("result: %v, ops/s %v", err, res.OpsPerSec)
	}
	var events []harness.Progress
	if err := json.Unmarshal(r.Timeline, &events); err != nil || len(events) < 1 {
		t.Errorf("timeline %s (%v): want the run's per-second progress events", r.Timeline, err)
	}
	if !strings.Contains(string(r.Probe), `"fs"`) {
		t.Errorf("probe %s: want the run's conditions", r.Probe)
	}
	if r.Version == "" || r.Host != archive.HostID() {
		t.Errorf("version %q host %q: want this build's and this machine's", r.Version, r.Host)
	}
	// Started and Ended bracket the timed region.
	if got := r.Ended.Sub(r.Started); got < time.Duration(res.WallSeconds*float64(time.Second)) {
		t.Errorf("started..ended %v is shorter than the run's wall clock %.3fs", got, res.WallSeconds)
	}
}

func TestEveryCommandIsRecorded(t *testing.T) {
	noDefaultArchive(t)
	data := t.TempDir()
	lines := [][]string{
		{"bench", "-engine", "null", "-ops", "500"},
		{"sweep", "-engine", "null", "-threads", "1,2", "-ops", "500"},
		{"probe", "-ops", "20"},
		{"model", "-sync", "batch:64", "-t-write", "1us", "-t-fsync", "200us"},
		{"crash", "-sync", "always", "-trials", "1", "-power"},
	}
	for _, l := range lines {
		mustRun(t, append(l, "-data", data)...)
	}
	out, _ := mustRun(t, "runs", "-data", data, "-format", "json")
	var runs []archive.Run
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range runs {
		kinds = append(kinds, r.Kind)
	}
	if got := strings.Join(kinds, " "); got != "crash model probe sweep bench" {
		t.Errorf("kinds recorded, newest first: %q", got)
	}
}

func TestArchiveFlag(t *testing.T) {
	def := noDefaultArchive(t)
	// By default the run goes to the server's data directory.
	mustRun(t, "bench", "-engine", "null", "-ops", "100")
	if _, err := os.Stat(filepath.Join(def, archive.FileName)); err != nil {
		t.Errorf("default archive: %v", err)
	}
	if _, errOut := mustRun(t, "bench", "-engine", "null", "-ops", "100"); !strings.Contains(errOut, "(labserver runs show 2)") {
		t.Errorf("stderr %q: want the plain runs show command for the default archive", errOut)
	}

	data := t.TempDir()
	for _, off := range [][]string{{"-archive=false"}, {"-archive", "false"}, {"--archive=false"}} {
		_, errOut := mustRun(t, append([]string{"bench", "-engine", "null", "-ops", "100", "-data", data}, off...)...)
		if strings.Contains(errOut, "recorded") {
			t.Errorf("%v: %q", off, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(data, archive.FileName)); err == nil {
		t.Error("-archive=false created kvlab.db")
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "-archive", "mysql://x"}, "-archive mysql://x: allowed: true, false, sqlite, or a postgres:// URL"},
		{[]string{"bench", "-archive=maybe"}, "-archive maybe: allowed"},
		{[]string{"bench", "-archive", "-archive"}, "-archive: given twice"},
		{[]string{"bench", "-data"}, "-data: needs a directory"},
		{[]string{"runs", "-archive", "false"}, "-archive false: allowed: sqlite (kvlab.db in -data) or a postgres:// URL"},
	} {
		code, _, errOut := cmd(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q: want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	// "-archive" alone is true; the next flag is not its value.
	mustRun(t, "bench", "-archive", "-engine", "null", "-ops", "100", "-data", data)
	if _, err := os.Stat(filepath.Join(data, archive.FileName)); err != nil {
		t.Errorf("-archive alone: %v", err)
	}
}

// TestCellsCannotChooseTheArchive: -archive and -data are the command
// line's; the line a cell runs (harness.Exec, the server's entry) refuses
// them and says why.
func TestCellsCannotChooseTheArchive(t *testing.T) {
	for _, line := range []string{"bench -engine null -archive=false", "bench -engine null -archive postgres://h/db", "probe -data /tmp"} {
		_, err := harnesstest.Exec(context.Background(), line, harness.Env{Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "belongs to the labserver command line, not to a run line") {
			t.Errorf("Exec(%q): %v", line, err)
		}
	}
}

// TestRecordedAfterOutput: the record step runs after the run's output is
// written, so it is outside every timed region.
func TestRecordedAfterOutput(t *testing.T) {
	var out, errOut strings.Builder
	var sawOutput bool
	code := harness.RunCLIRecorded(context.Background(), []string{"bench", "-engine", "null", "-ops", "100"}, &out, &errOut, func(cr harness.CLIRun) {
		sawOutput = strings.Contains(out.String(), "ops/sec")
	})
	if code != 0 || !sawOutput {
		t.Errorf("exit %d; output written before record: %v", code, sawOutput)
	}
}

func TestRunsCommand(t *testing.T) {
	noDefaultArchive(t)
	data := t.TempDir()
	mustRun(t, "bench", "-engine", "null", "-ops", "300", "-data", data)
	mustRun(t, "bench", "-engine", "null", "-ops", "300", "-repeat", "2", "-data", data)
	mustRun(t, "probe", "-ops", "20", "-data", data)

	out, _ := mustRun(t, "runs", "-data", data)
	for _, want := range []string{"ID", "probe -ops 20", "2 results; first:", "bench -engine null -ops 300"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs: no %q in\n%s", want, out)
		}
	}
	out, _ = mustRun(t, "runs", "-data", data, "-kind", "bench", "-limit", "1", "-format", "tsv")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "2\t") {
		t.Errorf("runs -kind bench -limit 1 -format tsv: %q: want the header and run 2", out)
	}
	out, _ = mustRun(t, "runs", "-data", data, "-limit", "1")
	if !strings.Contains(out, "older runs: labserver runs -before 3") {
		t.Errorf("a full page: %q: want the next page's command", out)
	}

	out, _ = mustRun(t, "runs", "show", "1", "-data", data)
	for _, want := range []string{"run 1  bench -engine null -ops 300", "from      cli", "fillrandom       :", "conditions:"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show 1: no %q in\n%s", want, out)
		}
	}
	out, _ = mustRun(t, "runs", "show", "-data", data, "1", "-format", "json")
	var r archive.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.ID != 1 || len(r.Result) == 0 {
		t.Errorf("runs show 1 -format json: %v, %+v", err, r)
	}
	out, _ = mustRun(t, "runs", "show", "2", "-data", data, "-format", "tsv")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "engine\tsync") {
		t.Errorf("runs show 2 -format tsv: %q: want the header and 2 results", out)
	}

	out, _ = mustRun(t, "runs", "export", "-data", data)
	var all []archive.Run
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 3 || len(all[0].Probe) == 0 {
		t.Errorf("runs export: %v, %d runs: want all 3 in full", err, len(all))
	}
	out, _ = mustRun(t, "runs", "export", "-data", data, "-format", "tsv", "-kind", "bench")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[0], "id\tstarted\tsource\tlesson\tcell\tkind\tengine") {
		t.Errorf("runs export -format tsv: %q: want the header and 3 bench results", out)
	}
	out, _ = mustRun(t, "runs", "export", "-data", data, "-limit", "2")
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 2 {
		t.Errorf("runs export -limit 2: %v, %d runs", err, len(all))
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"runs", "show"}, 2, "show takes one run id"},
		{[]string{"runs", "show", "x"}, 2, "show x: a run id is a number from 1 up"},
		{[]string{"runs", "show", "99"}, 1, "run 99 is not in"},
		{[]string{"runs", "-format", "xml"}, 2, "-format xml: allowed for runs list: table, tsv, json"},
		{[]string{"runs", "export", "-format", "table"}, 2, "allowed for runs export: json, tsv"},
		{[]string{"runs", "-limit", "-1"}, 2, "-limit -1: must be 0 or more"},
		{[]string{"runs", "-color", "red"}, 2, "flag provided but not defined: -color"},
		{[]string{"runs", "stray"}, 2, `unexpected argument "stray"`},
	} {
		code, _, errOut := cmd(t, append(tc.args, "-data", data)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q: want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

func TestCompareCommand(t *testing.T) {
	noDefaultArchive(t)
	data := t.TempDir()
	a, err := archive.Open(context.Background(), "", data, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	// Runs 1-5 at about 1000 ops/s, 6-10 at about 2000, 11 a probe.
	for i := range 10 {
		ops := 1000.0 + float64(i%5)
		sync := "always"
		if i >= 5 {
			ops, sync = 2000+float64(i%5), "batch:64"
		}
		res := harness.BenchResult{Kind: "bench", Spec: "bench -engine kv -sync " + sync, Engine: "kv", Sync: sync, Workload: "fillrandom",
			OpsPerSec: ops, ValueSize: 128, Keys: 1000,
			Latency: map[string]*harness.LatencySummary{"put": {Count: 1000, P50Ns: int64(1e9 / ops), P99Ns: int64(2e9 / ops), P999Ns: int64(3e9 / ops), MaxNs: int64(4e9 / ops)}}}
		b, _ := json.Marshal(res)
		r := &archive.Run{Kind: "bench", Spec: res.Spec, SpecFull: res.Spec, Result: b, Source: "cell", Lesson: "03", Cell: "c1"}
		r.FillFromResult()
		if _, err := a.Add(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	a.Add(context.Background(), &archive.Run{Kind: "probe", Spec: "probe", Result: json.RawMessage(`{"kind":"probe"}`), Source: "cell", Lesson: "03", Cell: "c1"})
	a.Close()

	out, _ := mustRun(t, "compare", "-data", data, "1-5", "6,7,8,9,10")
	for _, want := range []string{"A: runs 1-5 (5 samples)", "B: runs 6-10 (5 samples)", "changed: sync: always → batch:64",
		"ops/s", "+99.8%", "better", "put p99"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare 1-5 6-10: no %q in\n%s", want, out)
		}
	}
	// Five runs a group give no 95% confidence interval of a median: the
	// table says so in a word, not "±∞".
	if strings.Contains(out, "∞") || !strings.Contains(out, "1002 ±?") ||
		!strings.Contains(out, "±?: a group of 5 runs is too few for a 95% confidence interval of its median; it takes 6 or more (bench -repeat 6).") {
		t.Errorf("compare 1-5 6-10: want ±? explained, no ∞, in\n%s", out)
	}
	out, _ = mustRun(t, "compare", "-data", data, "1,2,3", "6-8")
	if !strings.Contains(out, "too few runs to tell: the U test needs at least 4 runs") {
		t.Errorf("3 against 3: no plain too-few-runs line in\n%s", out)
	}

	// -last N -at ID: the N bench runs before ID against the newest N from ID on.
	out, _ = mustRun(t, "compare", "-data", data, "-lesson", "03", "-cell", "c1", "-last", "4", "-at", "6", "-format", "json")
	var c archive.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.A.RunIDs) != "[2 3 4 5]" || fmt.Sprint(c.B.RunIDs) != "[7 8 9 10]" {
		t.Errorf("-last 4 -at 6: groups %v and %v, want [2 3 4 5] and [7 8 9 10] (the probe left out)", c.A.RunIDs, c.B.RunIDs)
	}
	// Without -at: the newest N against the N before them.
	out, _ = mustRun(t, "compare", "-data", data, "-cell", "c1", "-last", "5", "-format", "json")
	json.Unmarshal([]byte(out), &c)
	if fmt.Sprint(c.A.RunIDs) != "[1 2 3 4 5]" || fmt.Sprint(c.B.RunIDs) != "[6 7 8 9 10]" {
		t.Errorf("-last 5: groups %v and %v", c.A.RunIDs, c.B.RunIDs)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"compare", "1-5"}, 2, "give two groups of run ids"},
		{[]string{"compare", "1-x", "2"}, 2, `run ids "1-x": write ids from 1 up`},
		{[]string{"compare", "5-1", "2"}, 2, `run ids "5-1"`},
		{[]string{"compare", "1", "2", "-cell", "c1"}, 2, "filters and -at choose runs with -last N"},
		{[]string{"compare", "-last", "0", "-at", "3"}, 2, "filters and -at choose runs with -last N"},
		{[]string{"compare", "-last", "3", "1", "2"}, 2, "-last N chooses the runs: give no run ids"},
		{[]string{"compare", "1-5", "11"}, 1, "run 11 is a probe run: compare takes bench runs"},
		{[]string{"compare", "1-5", "12"}, 1, "run 12 is not in"},
		{[]string{"compare", "-cell", "nope", "-last", "3"}, 1, "no bench runs match the filters"},
		{[]string{"compare", "-format", "tsv", "1", "2"}, 2, "-format tsv: allowed: table, json"},
	} {
		code, _, errOut := cmd(t, append(tc.args, "-data", data)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q: want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

// TestPostgresArchive: -archive postgres://... records there, and runs
// and compare read it back.
func TestPostgresArchive(t *testing.T) {
	noDefaultArchive(t)
	url := pgtest.Shared(t).NewDatabase(t)
	for range 2 {
		_, errOut := mustRun(t, "bench", "-engine", "null", "-ops", "200", "-archive", url)
		if !strings.Contains(errOut, "-archive postgres://") {
			t.Errorf("stderr %q: want the runs show command with the same -archive", errOut)
		}
	}
	out, _ := mustRun(t, "runs", "-archive", url, "-format", "json")
	var runs []archive.Run
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 2 {
		t.Fatalf("runs from PostgreSQL: %v, %d runs, want 2", err, len(runs))
	}
	mustRun(t, "compare", "-archive", url, "1", "2")
}

func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"runs", "compare", "-archive=false"}},
		{[]string{"bench", "-h"}, []string{"-engine", "-archive V", "-data DIR"}},
		{[]string{"help", "probe"}, []string{"-archive V"}},
		{[]string{"runs", "-h"}, []string{"labserver runs show ID"}},
		{[]string{"help", "compare"}, []string{"Mann-Whitney", "-last N"}},
	} {
		out, _ := mustRun(t, tc.args...)
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("%v: no %q in\n%s", tc.args, want, out)
			}
		}
	}
}

// help lists every command in one block, each name in the same column:
// not runs, compare, kvserver and version in loose blocks of their own.
func TestHelpListsEveryCommandTogether(t *testing.T) {
	out, _ := mustRun(t, "help")
	_, block, ok := strings.Cut(out, "commands:\n")
	if !ok {
		t.Fatalf("no commands: block in\n%s", out)
	}
	block, _, _ = strings.Cut(block, "\n\n")
	col := -1
	listed := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(line, "  "+f[0]+" ") {
			t.Fatalf("line %q of the commands block is not a command and what it does", line)
		}
		at := len("  "+f[0]) + strings.Index(line[len("  "+f[0]):], f[1])
		if col >= 0 && at != col {
			t.Errorf("line %q: its text starts at column %d, the others at %d", line, at, col)
		}
		col = at
		listed[f[0]] = true
	}
	for _, c := range Commands {
		if c != "serve" && !listed[c] {
			t.Errorf("%s is not in the commands block:\n%s", c, block)
		}
	}
}

// TestNotRecordedSaysSo: a run whose archive cannot be opened still
// prints its result and exits 0, and stderr says it was not recorded.
func TestNotRecordedSaysSo(t *testing.T) {
	noDefaultArchive(t)
	notADir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notADir, []byte("x"), 0o644)
	code, out, errOut := cmd(t, "bench", "-engine", "null", "-ops", "100", "-data", notADir)
	if code != 0 || !strings.Contains(out, "ops/sec") || !strings.Contains(errOut, "this run was not recorded") {
		t.Errorf("exit %d, stdout %q, stderr %q: want 0, the result, and a note that it was not recorded", code, out, errOut)
	}
}

// Reading runs from a data directory that has none says so, and makes
// neither the directory nor an empty kvlab.db.
func TestRunsDoNotCreateTheArchive(t *testing.T) {
	noDefaultArchive(t)
	for _, args := range [][]string{{"runs"}, {"runs", "show", "1"}, {"runs", "export"}, {"compare", "1", "2"}} {
		dir := filepath.Join(t.TempDir(), "nonexistent")
		code, _, errOut := cmd(t, append(args, "-data", dir)...)
		if code != 1 || !strings.Contains(errOut, "no runs recorded in "+dir+": it has no kvlab.db") {
			t.Errorf("%v -data %s: exit %d, stderr %q; want 1 and no runs recorded there", args, dir, code, errOut)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%v -data %s: the directory was made (%v)", args, dir, err)
		}
	}
}
