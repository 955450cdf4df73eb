package harness

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"kvlab/internal/lesson"
	"kvlab/lessons"
)

// specGoldenLines are lines beyond the course's cells that, between them,
// give every flag of every command, both flag spellings, and the errors.
var specGoldenLines = []string{
	"bench",
	"labserver  bench -engine kv -sync batch:64 -workload fillrandom -ops 8000",
	"bench --ops=50000 -warmup=0",
	"bench -engine null -sync none -workload readwhilewriting -threads 4 -rate 1000 -duration 2s -seed 7 -dist zipfian -value-size 0 -keys 50 -warmup 0 -repeat 3 -format json -dir /tmp -keep -progress",
	"sweep -engine kv,null -workload mixed -ops 8000 -threads 1,2 -dishonest-throughput-from-samples -dishonest-no-warmup -dishonest-time-keygen -dishonest-unsorted-percentile -format benchstat",
	"bench --workload=updaterandom --ops=300 -keep=false -progress=true",
	"bench -workload deleterandom -ops 4000 -keys 2000 -value-size 4096 -format tsv",
	"bench -workload overwrite -duration 1500ms -warmup 5 -rate 2.5",
	"bench -engine null -workload readrandom -duration 3s -keys 20000",
	"bench -engine null -workload fillseq -ops 10 -threads 3",
	"bench -engine null -ops 5 -keys 3",
	"bench -engine kv,null -sync periodic:10ms -rate 500 -dishonest-no-warmup",
	"bench -ops 500 -repeat 5",
	"sweep -engine kv -sync group -threads 1,2,4,8,16 -duration 3s",
	"sweep -engine null -threads 1,2 -ops 100000",
	"sweep -duration=3s",
	"probe",
	"probe -ops 500 -duration 200ms -value-size 4096 -format tsv -dir /tmp",
	"probe -ops 2000",
	"probe -duration 1s",
	"probe -methods -duration 200ms",
	"probe -methods=false",
	"model -sync batch:64",
	"model -sync periodic:10ms -t-write 900ns -t-fsync 0s",
	"model -sync batch:100 -t-fsync 200us -format json",
	"crash -sync batch:100 -trials 20 -power",
	"crash -sync none -power -power-mode dirent",
	"crash -sync none -write-buffer 4096",
	"crash -sync periodic:5ms -trials 3 -power -power-mode reorder -write-buffer 0 -seed 42 -keep -progress",
	"crash -sync group -seed -3",
	"crash -sync batch:16 -power -power-mode reorder -points",
	"crash -sync periodic:10ms -fail-sync 1000",
	"bench -workload fillbatch -batch 4 -ops 100",
	"sweep -engine kv -sync group -workload fillbatch -duration 1s -threads 1,4",
	// Errors: the message is part of the printed form.
	"",
	"frobnicate",
	"bench -ops 0",
	"bench -ops abc",
	"bench -ops",
	"bench -ops 5 -ops 6",
	"bench -ops 5 -duration 1s",
	"bench -duration 3",
	"bench -threads 1,2",
	"sweep -threads 1,x",
	"sweep -threads 1,2,1",
	"sweep -threads 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
	"bench -value-size -1",
	"bench -keys 0",
	"bench -engine nope",
	"bench -engine null,null",
	"bench -sync sometimes",
	"bench -workload scan",
	"bench -workload seekrandom",
	"bench -dist pareto",
	"bench -format xml",
	"bench -rate 0",
	"bench -rate x",
	"bench -repeat 21",
	"bench -seed x",
	"bench -trials 3",
	"bench ops 5",
	"bench -",
	"bench -keep=maybe",
	"bench -ops 10000000 -value-size 1048576",
	"probe -ops 5",
	"probe -sync always",
	"probe -format benchstat",
	"model",
	"model -sync always",
	"model -sync batch:8 -t-write 0s",
	"model -sync batch:8 -t-fsync 11s",
	"crash -trials 0",
	"crash -power -power-mode torn",
	"crash -power-mode pages",
	"crash -points",
	"crash -power -points -trials 3",
	"crash -power -fail-sync 10",
	"bench -batch 4",
	"bench -workload fillbatch -batch 1025",
	"crash -write-buffer 67108865",
	"crash -sync nope",
	"bench -archive=false",
	"crash -data /tmp",
}

// courseLines returns every run line of the course: each lab cell's lines
// and each quiz's own run lines, in lesson order.
func courseLines(t *testing.T) []string {
	t.Helper()
	ls, err := lesson.Load(lessons.FS)
	if err != nil {
		t.Fatalf("loading the lessons: %v", err)
	}
	var lines []string
	for _, l := range ls {
		for _, c := range l.Cells {
			lines = append(lines, c.Lines...)
		}
		for _, q := range l.Quizzes {
			lines = append(lines, q.Run...)
		}
	}
	return lines
}

// helpExampleLines returns the example lines of every command's help.
func helpExampleLines() []string {
	var lines []string
	for _, c := range Commands {
		var b strings.Builder
		CommandUsage(&b, c)
		for l := range strings.SplitSeq(b.String(), "\n") {
			if l, ok := strings.CutPrefix(strings.TrimSpace(l), "labserver "); ok && !strings.Contains(l, "[flags]") {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// dumpSpec writes every field of a parsed line, and each printed form:
// String (the whole line), and the per-run line each result's "spec"
// field holds.
func dumpSpec(b *strings.Builder, s *Spec) {
	fmt.Fprintf(b, "  string: %s\n", s.String())
	switch s.Cmd {
	case "bench", "sweep":
		for _, e := range s.Engines {
			for _, n := range s.Threads {
				fmt.Fprintf(b, "  run:    %s\n", s.line(e, []int{n}))
			}
		}
	case "crash":
		fmt.Fprintf(b, "  run:    %s\n", s.line("", nil))
	}
	b.WriteString("  fields:")
	v := reflect.ValueOf(*s)
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() {
			fmt.Fprintf(b, " %s:%+v", f.Name, v.Field(i))
		}
	}
	b.WriteString("\n")
}

// TestSpecPrintedFormIsUnchanged parses every line of the course, every
// help example and specGoldenLines, and compares each one's printed forms,
// fields and error with testdata/spec_lines.golden, written by the code
// before the grammar became a table. The "spec" field of every result is
// one of these printed forms: it must not change. (The course's lines
// scaled down are kvlab/harness/harnesstest's golden file.)
func TestSpecPrintedFormIsUnchanged(t *testing.T) {
	lines := append(courseLines(t), helpExampleLines()...)
	lines = append(lines, specGoldenLines...)
	var b strings.Builder
	for _, line := range lines {
		fmt.Fprintf(&b, "line: %s\n", line)
		s, err := ParseSpec(line, DefaultLimits())
		if err != nil {
			fmt.Fprintf(&b, "  error: %v\n", err)
			continue
		}
		dumpSpec(&b, s)
	}
	checkGolden(t, "spec_lines", b.String())
}
