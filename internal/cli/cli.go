// Package cli is labserver's command line apart from serve: the
// measuring commands of kvlab/harness (bench, sweep, probe, model,
// crash), each run recorded in the run archive afterwards, and the
// archive's own commands, runs and compare.
//
// Two flags belong to the command line and not to the run-spec grammar,
// so a lesson cell can use neither (the harness's parser refuses them
// with a message saying so):
//
//	-archive true|false|sqlite|postgres://...   where to record (default: true, kvlab.db in -data)
//	-data DIR                                    the data directory (default: the server's, archive.DefaultDataDir)
//
// Recording happens after the run's output is written (harness
// RunCLIRecorded), never inside a timed region. A run that could not be
// recorded says so on stderr and keeps its exit code.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"kvlab/harness"
	"kvlab/internal/archive"
	"kvlab/internal/suggest"
)

// recordTimeout bounds opening the archive and adding one run.
const recordTimeout = time.Minute

// Main runs one command line (the arguments after "labserver", serve
// excepted) and returns the exit code: 0 on success, 1 when a run (or
// recording, for runs and compare) failed, 2 for a bad command line.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		if len(args) > 1 {
			return help(stdout, stderr, args[1])
		}
		usage(stdout)
		return 0
	}
	switch args[0] {
	case "version":
		return printVersion(stdout, args[1:], stderr)
	case "runs":
		return runsMain(ctx, args[1:], stdout, stderr)
	case "compare":
		return compareMain(ctx, args[1:], stdout, stderr)
	case "kvserver":
		return kvserverMain(ctx, args[1:], stdout, stderr)
	}
	if !slices.Contains(harness.Commands, args[0]) {
		return unknownCommand(stderr, "labserver", args[0])
	}
	for _, a := range args[1:] {
		if a == "-h" || a == "-help" || a == "--help" {
			return help(stdout, stderr, args[0])
		}
	}
	line, where, err := splitArchiveFlags(args)
	if err != nil {
		fmt.Fprintf(stderr, "labserver %s: %v\n", args[0], err)
		return 2
	}
	var record func(harness.CLIRun)
	if where.target != "false" {
		record = func(cr harness.CLIRun) { recordRun(ctx, cr, line, where, stderr) }
	}
	return harness.RunCLIRecorded(ctx, line, stdout, stderr, record)
}

// Commands are every first word labserver takes, serve first: the short
// usage lists them and a mistyped one is matched against them.
var Commands = slices.Concat([]string{"serve"}, harness.Commands, []string{"runs", "compare", "kvserver", "version", "help"})

// usage prints the overview of every command.
func usage(w io.Writer) {
	harness.UsageWith(w, moreCommands)
	archiveUsage(w)
}

// help prints one command's usage (serve's is the server's, which
// labserver's main prints). It returns the exit code: 2 for a command
// that does not exist, reported on stderr.
func help(w, stderr io.Writer, cmd string) int {
	switch {
	case cmd == "runs":
		fmt.Fprint(w, runsUsage)
	case cmd == "compare":
		fmt.Fprint(w, compareUsage)
	case cmd == "kvserver":
		fmt.Fprint(w, kvserverUsage)
	case cmd == "version":
		fmt.Fprint(w, "usage: labserver version\n\nprint this labserver's version, commit and toolchain\n")
	case cmd == "help":
		usage(w)
	case slices.Contains(harness.Commands, cmd):
		harness.CommandUsage(w, cmd)
		fmt.Fprint(w, archiveFlagsUsage)
	default:
		return unknownCommand(stderr, "labserver help", cmd)
	}
	return 0
}

// unknownCommand reports a first word that is no command, with the
// command it most likely meant and one short usage instead of the whole
// help, and returns exit code 2. who is what to call the line
// ("labserver", "labserver help").
func unknownCommand(stderr io.Writer, who, cmd string) int {
	fmt.Fprintf(stderr, "%s: unknown command %q", who, cmd)
	if m := suggest.Closest(cmd, Commands); m != "" {
		fmt.Fprintf(stderr, "; did you mean `%s`?", m)
	}
	fmt.Fprintf(stderr, "\nusage: labserver COMMAND [flags]; the commands: %s\n", strings.Join(Commands, ", "))
	fmt.Fprintln(stderr, "run `labserver help` for what each does, `labserver help COMMAND` for one command's flags")
	return 2
}

// printVersion prints the version, the commit and the toolchain, the
// facts to quote with a bug report or a result from a release binary.
func printVersion(w io.Writer, args []string, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "labserver version: takes no arguments, got %q\n", args)
		return 2
	}
	commit := archive.Commit()
	if commit == "" {
		commit = "not recorded"
	}
	fmt.Fprintf(w, "labserver %s\ncommit %s\nbuilt with %s for %s/%s\n", archive.Version(), commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

// moreCommands are the commands labserver adds to the measuring ones,
// listed with them by usage.
var moreCommands = [][2]string{
	{"runs", "list, show and export the recorded runs (labserver runs -h)"},
	{"compare", "before/after: two groups of runs, per metric, with the Mann-Whitney U test (labserver compare -h)"},
	{"kvserver", "serve the kv engine over RESP, the Redis protocol, for bench -engine resp://ADDR (labserver kvserver -h)"},
	{"version", "this labserver's version, commit and toolchain"},
}

func archiveUsage(w io.Writer) {
	fmt.Fprint(w, `
every bench, sweep, probe, model and crash run is recorded in the run archive (-archive=false to skip):
labserver runs lists them, labserver compare compares two groups of them
`)
}

const archiveFlagsUsage = `
archive flags (the command line's only; a lesson cell cannot use them):
  -archive V                             where to record this run: true (default: kvlab.db in -data), false (do not record),
                                         sqlite, or a postgres:// URL shared by several labservers
  -data DIR                              data directory holding kvlab.db (default: the server's, ` + "`labserver serve -data`" + `)
`

// archiveFlags is where a command records or reads runs.
type archiveFlags struct {
	target  string // "false", "sqlite" or a PostgreSQL URL
	dataDir string
}

func (f archiveFlags) open(ctx context.Context, stderr io.Writer) (archive.Archive, error) {
	target := f.target
	if target == "true" {
		target = "sqlite"
	}
	return archive.Open(ctx, target, f.dataDir, func(format string, args ...any) {
		fmt.Fprintf(stderr, "labserver: "+format+"\n", args...)
	})
}

// openForReading opens the archive for a command that only reads it
// (runs, compare): a sqlite archive that does not exist yet is an error
// naming where it was looked for, never a directory and an empty
// kvlab.db made by reading.
func (f archiveFlags) openForReading(ctx context.Context, stderr io.Writer) (archive.Archive, error) {
	if f.target == "true" || f.target == "sqlite" || f.target == "" {
		file := filepath.Join(f.dataDir, archive.FileName)
		if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no runs recorded in %s: it has no %s (labserver serve -data %s, or a bench, sweep, probe or crash with -data %s, records runs there)", f.dataDir, archive.FileName, f.dataDir, f.dataDir)
		}
	}
	return f.open(ctx, stderr)
}

// checkTarget validates an -archive value.
func checkTarget(v string, allowFalse bool) error {
	switch {
	case v == "true" || v == "sqlite":
		return nil
	case v == "false" && allowFalse:
		return nil
	case strings.HasPrefix(v, "postgres://") || strings.HasPrefix(v, "postgresql://"):
		return nil
	}
	allowed := "true, false, sqlite, or a postgres:// URL"
	if !allowFalse {
		allowed = "sqlite (kvlab.db in -data) or a postgres:// URL"
	}
	return fmt.Errorf("-archive %s: allowed: %s", v, allowed)
}

// splitArchiveFlags takes -archive and -data out of a measuring command
// line and returns the rest, which is the harness's.
func splitArchiveFlags(args []string) ([]string, archiveFlags, error) {
	f := archiveFlags{target: "true", dataDir: archive.DefaultDataDir()}
	seen := map[string]bool{}
	line := []string{args[0]}
	for i := 1; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "archive" && name != "data") {
			line = append(line, a)
			continue
		}
		if seen[name] {
			return nil, f, fmt.Errorf("-%s: given twice", name)
		}
		seen[name] = true
		switch name {
		case "archive":
			if !hasVal {
				// -archive alone (last, or before another flag) means
				// true; otherwise the next word is its value.
				val = "true"
				if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					i++
					val = args[i]
				}
			}
			if err := checkTarget(val, true); err != nil {
				return nil, f, err
			}
			f.target = val
		case "data":
			if !hasVal {
				if i+1 >= len(args) {
					return nil, f, fmt.Errorf("-data: needs a directory")
				}
				i++
				val = args[i]
			}
			if val == "" {
				return nil, f, fmt.Errorf("-data: needs a directory")
			}
			f.dataDir = val
		}
	}
	return line, f, nil
}

// recordRun stores one finished command-line run and says where.
func recordRun(ctx context.Context, cr harness.CLIRun, line []string, where archiveFlags, stderr io.Writer) {
	r := &archive.Run{
		Kind: cr.Spec.Cmd, Spec: strings.Join(line, " "), SpecFull: cr.Spec.String(), Result: cr.Result,
		Source: "cli", Started: cr.Started, Ended: cr.Ended, Line: -1, // not a lesson's line
	}
	if len(cr.Progress) > 0 {
		r.Timeline, _ = json.Marshal(cr.Progress)
	}
	r.FillFromResult()
	// Record even when the run was interrupted (Ctrl-C): what it
	// measured is marked cancelled in its result.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	a, err := where.open(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "labserver: this run was not recorded: %v\n", err)
		return
	}
	defer a.Close()
	id, err := a.Add(ctx, r)
	if err != nil {
		fmt.Fprintf(stderr, "labserver: this run was not recorded: %v\n", err)
		return
	}
	fmt.Fprintf(stderr, "labserver: recorded as run %d in %s (labserver runs show %d%s)\n", id, a.Where(), id, where.flags(a.Where()))
}

// flags are the -archive or -data flag that reaches the same archive
// again ("" for the default); where is the archive's Where, which hides
// a password.
func (f archiveFlags) flags(where string) string {
	switch {
	case f.target != "true" && f.target != "sqlite":
		return " -archive " + where
	case f.dataDir != archive.DefaultDataDir():
		return " -data " + f.dataDir
	}
	return ""
}
