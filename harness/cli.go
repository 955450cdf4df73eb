package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"kvlab/harness/calc"
	"strings"
	"time"
)

// The command line: `labserver bench | sweep | probe | model | crash | help`.
// labserver/main.go hands its arguments here; everything is testable
// through RunCLIRecorded with buffers for stdout and stderr.

// Usage writes the overview of all commands.
func Usage(w io.Writer) { UsageWith(w, nil) }

// UsageWith writes the overview of all commands, the measuring ones and
// then more (name and what it does, for the commands labserver adds),
// in one list aligned on the longest name.
func UsageWith(w io.Writer, more [][2]string) {
	fmt.Fprintln(w, "usage: labserver [serve flags]          serve the course (see labserver -h)")
	fmt.Fprintln(w, "       labserver COMMAND [flags]        measure from the command line")
	fmt.Fprintln(w, "\ncommands:")
	all := make([][2]string, 0, len(commands)+len(more)+1)
	for _, c := range commands {
		all = append(all, [2]string{c.name, c.what})
	}
	all = append(all, more...)
	all = append(all, [2]string{"help", "this text; `labserver help COMMAND` or `labserver COMMAND -h` for a command's flags"})
	width := 0
	for _, c := range all {
		width = max(width, len(c[0]))
	}
	for _, c := range all {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c[0], c[1])
	}
	fmt.Fprintf(w, "\nengines: %s\n", strings.Join(EngineNames(), ", "))
	bench, _ := lookupCommand("bench")
	fmt.Fprintln(w, "\nexamples:"+bench.examples)
}

// CommandUsage writes one command's flags and examples, from the grammar's
// table; the commands that take -engine add the engines.
func CommandUsage(w io.Writer, cmd string) {
	c, ok := lookupCommand(cmd)
	if !ok {
		Usage(w)
		return
	}
	fmt.Fprintf(w, "usage: labserver %s [flags]\n\n%s\n\nflags:\n", c.name, c.what)
	for _, f := range c.flags {
		name := "-" + f.name
		if !f.bool {
			name += " V"
		}
		fmt.Fprintf(w, "  %-38s %s\n", name, f.usage)
	}
	fmt.Fprintln(w, "\nexamples:"+c.examples)
	if _, ok := c.lookupFlag("engine"); ok {
		fmt.Fprintf(w, "\nengines: %s\n", strings.Join(EngineNames(), ", "))
	}
}

// CLIRun is one finished command-line run, as RunCLIRecorded hands it to
// its record function.
type CLIRun struct {
	Args     []string        // the command line as typed (after "labserver")
	Spec     *Spec           // parsed; Spec.String() is the line with every default filled in
	Result   json.RawMessage // exactly what -format json prints
	Progress []Progress      // the progress events, about one a second, in order
	Started  time.Time       // when the line started (before any probe or warmup)
	Ended    time.Time       // when its last run ended
}

// RunCLIRecorded runs one command line (the arguments after "labserver")
// and returns the process exit code: 0 on success, 1 when a run failed
// (or a crash test found a broken invariant), 2 for a bad command line.
// Then, when record is not nil and the line produced a result, it calls
// record with it. record runs after the line's
// output is written: outside every timed region, so whatever it does
// (labserver stores the run in its archive) cannot perturb a
// measurement. The exit code is the run's.
func RunCLIRecorded(ctx context.Context, args []string, stdout, stderr io.Writer, record func(CLIRun)) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		if len(args) > 1 {
			CommandUsage(stdout, args[1])
		} else {
			Usage(stdout)
		}
		return 0
	}
	for _, a := range args[1:] {
		if a == "-h" || a == "-help" || a == "--help" {
			CommandUsage(stdout, args[0])
			return 0
		}
	}
	lim := DefaultLimits()
	s, err := parseArgs(args, lim)
	if err != nil {
		msg := err.Error()
		if guess, _, ok := strings.Cut(msg, "; allowed:"); ok && strings.Contains(guess, "(did you mean") {
			// A terminal gets the near miss and where every flag is
			// listed, not the list itself: two lines, not seven.
			msg = guess
		}
		fmt.Fprintf(stderr, "labserver: %s\n", msg)
		if _, ok := lookupCommand(args[0]); ok {
			fmt.Fprintf(stderr, "run 'labserver %s -h' for its flags\n", args[0])
		} else {
			fmt.Fprintln(stderr, "run 'labserver help' for the commands")
		}
		return 2
	}
	env := Env{Limits: lim, readSrc: true}
	tty := isTerminal(stderr)
	var show func(Progress)
	if s.Progress || tty {
		show = progressPrinter(stderr, tty)
	}
	var events []Progress // appended by the progress goroutine, read after execSpec returns
	if record != nil || show != nil {
		env.Progress = func(p Progress) {
			if record != nil {
				events = append(events, p)
			}
			if show != nil {
				show(p)
			}
		}
	}
	started := time.Now()
	v, err := execSpec(ctx, s, env)
	ended := time.Now()
	if tty {
		fmt.Fprint(stderr, "\r\033[K") // clear the live line
	}
	if err != nil {
		fmt.Fprintf(stderr, "labserver %s: %v\n", s.Cmd, err)
		return 1
	}
	code := 0
	if err := Write(stdout, s.Format, v); err != nil {
		fmt.Fprintf(stderr, "labserver %s: %v\n", s.Cmd, err)
		code = 1
	}
	if c, ok := v.(*CrashResult); ok && !c.OK {
		code = 1
	}
	if record != nil {
		if b, err := json.Marshal(v); err == nil {
			record(CLIRun{Args: args, Spec: s, Result: b, Progress: events, Started: started, Ended: ended})
		}
	}
	return code
}

// progressPrinter prints progress events: rewriting one line on a
// terminal, one line per event otherwise.
func progressPrinter(w io.Writer, tty bool) func(Progress) {
	return func(p Progress) {
		run := ""
		if p.Run > 0 {
			run = fmt.Sprintf("run %d ", p.Run)
		}
		unit := "ops"
		if p.Unit != "" {
			unit = p.Unit
		}
		line := fmt.Sprintf("%s%s%6.1fs %10d %s %10.0f %s/s", run, prefix(p.Engine), p.ElapsedSeconds, p.Ops, unit, p.OpsPerSec, unit)
		if p.P50 != 0 || p.P99 != 0 { // a script's progress has no latencies
			line += fmt.Sprintf("  p50 %s  p99 %s", calc.FormatNs(float64(p.P50)), calc.FormatNs(float64(p.P99)))
		}
		if tty {
			fmt.Fprintf(w, "\r\033[K%s", line)
		} else {
			fmt.Fprintln(w, line)
		}
	}
}

func prefix(engine string) string {
	if engine == "" {
		return ""
	}
	return engine + " "
}
