package lessons_test

import (
	"strings"
	"testing"

	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
)

func mustQuiz(t *testing.T, src string) *quiz.Quiz {
	t.Helper()
	q, err := quiz.Parse(src)
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	return q
}

func TestAnswerProblem(t *testing.T) {
	for _, tt := range []struct {
		name, answer, choices string
		wantErr               string // "" = accepted
	}{
		{"ratio of latencies", "$0.latency.put.p99_ns / $0.latency.put.p50_ns", "", ""},
		{"sweep indexes", "16 * $0[0].ops_per_sec / max($0[4].ops_per_sec, 1)", "", ""},
		{"negative index", "$0.timeline[-1].ops_per_sec / max($0.timeline[0].ops_per_sec, 1)", "", ""},
		{"fork field", `if($0.model.measured_p99_path == "slow", 2, 1)`, "fast | slow", ""},
		{"threshold choice", "if($0.ops_per_sec >= 0.95 * 20000, 1, 2)", "yes | no", ""},
		{"crash loss per trial", "$1.lost_acked / max(len($1.per_trial), 1)", "", ""},
		{"the disk's own counts", "$0[1].device_io.flushes_per_op", "", ""},
		{"the disk's bytes", "$2[0].device_io.device_bytes_per_logical_byte", "", ""},
		{"rank of a fixed list", "$1.latency.put.count - $1.latency.put.count * 99 / 100", "", "reads no measured field (it reads count)"},
		{"units vs ops", "$5.ops / max($5.units, 1)", "", "reads no measured field (it reads ops, units)"},
		{"crash invariant", "$0.lost + $1.lost", "", "reads no measured field"},
		{"measured part cancels", "$0.ops_per_sec * 0 + 2", "", "does not depend on the measurement"},
		{"same ratio both sides", "$0.ops_per_sec / $0.ops_per_sec", "", "does not depend on the measurement"},
	} {
		src := "id: q\nquestion: ?\ncell: c\nanswer: " + tt.answer + "\n"
		if tt.choices != "" {
			src += "choices: " + tt.choices + "\n"
		} else {
			src += "tolerance: 10%\n"
		}
		err := AnswerProblem(mustQuiz(t, src))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: got %v, want accepted", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.wantErr)
		}
	}
}

// Any two synthetic sets differ in every numeric field.
func TestSyntheticResultsDifferEverywhere(t *testing.T) {
	q := mustQuiz(t, "id: q\nquestion: ?\ncell: c\nanswer: $0.a_ns + $0.b[3].c + $1.d + $0.b[-1].c\ntolerance: 1")
	sets, err := SyntheticResults(q, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"$0.a_ns", "$0.b[3].c", "$1.d", "$0.b[-1].c"} {
		e, _ := quiz.ParseExpr(path)
		seen := map[float64]int{}
		for k, rs := range sets {
			v, err := e.Eval(rs)
			if err != nil {
				t.Fatalf("%s in set %d: %v", path, k, err)
			}
			if j, dup := seen[v.Num]; dup {
				t.Errorf("%s: sets %d and %d both hold %v", path, j, k, v.Num)
			}
			seen[v.Num] = k
		}
	}
}

func TestCountPredictions(t *testing.T) {
	src := "---\ntitle: T\nsummary: s\norder: 1\n---\n" +
		"```lab c\nbench -engine kv -ops 100\n```\n" +
		"```quiz\nid: a\nquestion: ?\ncell: c\npredict: yes\nanswer: $0.ops_per_sec\ntolerance: 10%\n```\n" +
		"```quiz\nid: b\nquestion: ?\ncell: c\nanswer: $0.ops_per_sec\ntolerance: 10%\n```\n" +
		"```quiz\nid: r\nquestion: ?\nrun: bench -engine kv -ops 100\nanswer: $0.ops_per_sec\ntolerance: 10%\n```\n" +
		"```quiz\nid: d\nquestion: ?\ncell: c\nanswer: $0.wall_seconds\ntolerance: 10%\n```\n"
	l, err := lesson.Parse("01-t.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := CountPredictions([]*lesson.Lesson{l})
	if len(got) != 1 || got[0].Predictions != 2 || got[0].Quizzes != 4 || !got[0].AtLeastHalf() {
		t.Errorf("got %v, want 2 of 4 predictions, at least half", got)
	}
	got[0].Predictions = 1
	if got[0].AtLeastHalf() {
		t.Error("1 of 4: AtLeastHalf true, want false")
	}
}

// LawProblem refuses answers the laws every disk keeps fix for the cell's
// own lines ("≈ threads", "≈ 1", "between p50 and p99"), and accepts
// answers that move with the disk, for several thread counts.
func TestLawProblem(t *testing.T) {
	for _, threads := range []string{"1,2,4,8,16", "3,6,12,24,48"} {
		group := "sweep -engine kv -sync group -workload fillrandom -threads " + threads + " -duration 2s"
		always := "sweep -engine kv -sync always -workload fillrandom -threads " + threads + " -duration 1s"
		for _, tt := range []struct {
			name, line, answer, choices string
			fixed                       bool
		}{
			{"Little's law gives the threads", group, "$0[3].ops_per_sec * $0[3].latency.put.mean_ns / 1e9", "", true},
			{"Puts per group flush are the threads", group, "$0[4].ops / max($0[4].fsyncs, 1)", "", true},
			{"always does not scale", always, "$0[4].ops_per_sec / max($0[0].ops_per_sec, 1)", "", true},
			{"the mean between p50 and p99", group, "if($0[0].latency.put.mean_ns < $0[0].latency.put.p50_ns, 1, if($0[0].latency.put.mean_ns <= $0[0].latency.put.p99_ns, 2, 3))", "below | between | above", true},
			{"group scales by the disk's costs", group, "$0[4].ops_per_sec / max($0[0].ops_per_sec, 1)", "", false},
			{"linear extrapolation", group, "16 * $0[0].ops_per_sec / max($0[4].ops_per_sec, 1)", "", false},
			{"Little's law's latency", group, "8e6 / max($0[3].ops_per_sec, 1)", "", false},
			{"flushes per second", group, "$0[4].fsyncs / max($0[4].wall_seconds, 0.001)", "", false},
			{"the tail", group, "$0[0].latency.put.p99_ns / $0[0].latency.put.p50_ns", "", false},
			{"mean over p50", group, "$0[0].latency.put.mean_ns / $0[0].latency.put.p50_ns", "", false},
		} {
			src := "id: q\nquestion: ?\ncell: c\nanswer: " + tt.answer + "\n"
			if tt.choices != "" {
				src += "choices: " + tt.choices + "\n"
			} else {
				src += "tolerance: 10%\n"
			}
			err := LawProblem(mustQuiz(t, src), []string{tt.line})
			if got := err != nil; got != tt.fixed {
				t.Errorf("%s (threads %s): LawProblem = %v, want fixed %v", tt.name, threads, err, tt.fixed)
			}
		}
	}
	// A pipelining thread keeps -pipeline Puts in flight: under group the
	// laws put threads x pipeline of them in a flush.
	piped := "bench -engine kvserver -sync group -threads 4 -pipeline 8 -duration 1s"
	q := mustQuiz(t, "id: q\nquestion: ?\ncell: c\nanswer: $0.ops / max($0.fsyncs, 1)\ntolerance: 10%")
	if sets, err := LawfulResults(q, []string{piped}, 1); err != nil {
		t.Fatal(err)
	} else if v, _ := q.Answer.Eval(sets[0]); v.Num < 31 || v.Num > 32 {
		t.Errorf("Puts per group flush, 4 threads pipelining 8 deep: %v, want 32", v.Num)
	}
	if err := LawProblem(q, []string{piped}); err == nil {
		t.Errorf("Puts per flush of a pipelined group line: accepted, want fixed (threads x pipeline)")
	}
	// Two lines are two runs: their ratio is not fixed, even for one policy.
	two := []string{"bench -engine kv -sync always -ops 1000 -value-size 128", "bench -engine kv -sync always -ops 1000 -value-size 8192"}
	q = mustQuiz(t, "id: q\nquestion: ?\ncell: c\nanswer: $0.ops_per_sec / $1.ops_per_sec\ntolerance: 10%")
	if err := LawProblem(q, two); err != nil {
		t.Errorf("two lines' ratio: %v, want accepted", err)
	}
}
