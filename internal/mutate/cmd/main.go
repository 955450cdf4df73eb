// Command mutate runs the engine's durability mutants and the crash
// tool's verdict mutants (package kvlab/internal/mutate) and prints which
// tests kill each one.
//
//	go run ./internal/mutate/cmd [-run REGEXP] [-tests REGEXP] [-skip REGEXP] [-check] [-v]
//
// It must run from the module root (make mutate does). It exits 1 when a
// mutant survives that is not marked unobservable, or when a mutant marked
// unobservable is killed (the mark is then wrong), and 2 on an error: a
// snippet that no longer matches the source, a mutant that does not build,
// or unmutated source whose tests fail.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"kvlab/internal/mutate"
)

func main() {
	run := flag.String("run", "", "only the mutants whose name matches this regular expression")
	check := flag.Bool("check", false, "only check that every mutant's snippet occurs exactly once; run nothing")
	verbose := flag.Bool("v", false, "print the test output of every surviving mutant")
	flag.StringVar(&mutate.Skip, "skip", "", "leave the tests matching this pattern out of every run (go test -skip)")
	flag.StringVar(&mutate.Only, "tests", "", "run only the tests matching this pattern (go test -run), to see what they kill on their own")
	flag.Parse()
	os.Exit(realMain(*run, *check, *verbose))
}

func realMain(run string, check, verbose bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ms, err := mutate.Load()
	if err == nil {
		ms, err = selectMutants(ms, run)
	}
	if err == nil {
		err = mutate.Check(".", ms)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		return 2
	}
	if check {
		fmt.Printf("%d mutants, every snippet found exactly once\n", len(ms))
		return 0
	}
	// One baseline per set of tests the chosen mutants run.
	done := map[string]bool{}
	for _, m := range ms {
		tests := mutate.TestsOf(m)
		key := strings.Join(tests, " ")
		if done[key] {
			continue
		}
		done[key] = true
		fmt.Fprintf(os.Stderr, "baseline: go test %s on the unmutated source ... ", key)
		d, err := mutate.Baseline(ctx, ".", tests)
		if err != nil {
			fmt.Fprintln(os.Stderr, "\nmutate:", err)
			return 2
		}
		fmt.Fprintf(os.Stderr, "passed in %v\n", d.Round(time.Second))
	}
	start := time.Now()
	results, bad, err := runMutants(ctx, ms, verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, "\nmutate:", err)
		return 2
	}
	report(results)
	fmt.Printf("%d mutants in %v; %d unexpected\n", len(results), time.Since(start).Round(time.Second), bad)
	if mutate.Skip != "" {
		fmt.Printf("tests skipped in every run: %s\n", mutate.Skip)
	}
	if mutate.Only != "" {
		fmt.Printf("only these tests ran: %s\n", mutate.Only)
	}
	if bad > 0 {
		return 1
	}
	return 0
}

// selectMutants keeps the mutants whose name matches -run (all when it is
// empty).
func selectMutants(ms []mutate.Mutant, run string) ([]mutate.Mutant, error) {
	if run == "" {
		return ms, nil
	}
	re, err := regexp.Compile(run)
	if err != nil {
		return nil, fmt.Errorf("-run %s: %v", run, err)
	}
	var keep []mutate.Mutant
	for _, m := range ms {
		if re.MatchString(m.Name) {
			keep = append(keep, m)
		}
	}
	return keep, nil
}

// runMutants runs the engine's tests against each mutant in turn, saying
// each verdict on stderr as it comes. bad counts the unexpected verdicts:
// a mutant that survived, or one marked unobservable that was killed.
func runMutants(ctx context.Context, ms []mutate.Mutant, verbose bool) (results []mutate.Result, bad int, err error) {
	for i, m := range ms {
		fmt.Fprintf(os.Stderr, "[%d/%d] %s ... ", i+1, len(ms), m.Name)
		r, err := mutate.Run(ctx, ".", m)
		if err != nil {
			return nil, 0, err
		}
		fmt.Fprintln(os.Stderr, verdict(r), r.Elapsed.Round(time.Second))
		if r.Killed == (m.Unobservable != "") {
			bad++
		}
		if verbose && !r.Killed {
			fmt.Fprintln(os.Stderr, r.Output)
		}
		results = append(results, r)
	}
	return results, bad, nil
}

// report prints one row per mutant: its verdict, and the tests that
// killed it or why it survives.
func report(results []mutate.Result) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "mutant\tfile\tresult\tkilled by / why it survives")
	for _, r := range results {
		by := strings.Join(r.KilledBy, ", ")
		if !r.Killed {
			by = r.Mutant.Unobservable
			if by == "" {
				by = "NO TEST NOTICED: " + r.Mutant.Why
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Mutant.Name, r.Mutant.File, verdict(r), by)
	}
	tw.Flush()
}

func verdict(r mutate.Result) string {
	switch {
	case r.Killed && r.Mutant.Unobservable != "":
		return "KILLED (marked unobservable: fix the mark)"
	case r.Killed:
		return "killed"
	case r.Mutant.Unobservable != "":
		return "survived (unobservable)"
	}
	return "SURVIVED"
}
