// Package lessons holds the kvlab course: twelve chapters on measuring
// storage honestly, one Markdown file each, named NN-slug.md so that a
// directory listing shows them in reading order.
//
// Each file starts with front matter between two "---" lines:
//
//	---
//	title: Why the mean hides the tail
//	summary: One sentence shown on the index page.
//	order: 1
//	---
//
// The body is ordinary Markdown plus three kinds of fenced block that the
// server turns into something live:
//
//   - lab NAME: a runnable cell. Every non-empty line that does not start
//     with '#' is one run-spec line, exactly what a student could type
//     after `labserver` in a terminal (bench, sweep, probe, model, crash).
//   - quiz: key: value lines (id, question, cell or run, answer,
//     tolerance, unit, choices, show, explain, predict). The answer is
//     always an expression over real measurements, never a number typed
//     into the lesson; package kvlab/internal/quiz evaluates it. At least
//     half of every chapter's quizzes are predictions: "predict: yes" on a
//     cell: quiz locks the cell until the reader has guessed, and a run:
//     quiz measures only when checked.
//   - exercise NAME: a Go exercise that runs in the browser (see
//     kvlab/wasm/grader for the names).
//
// The files are embedded into the labserver binary through FS; authors
// can serve a working copy instead with `labserver -lessons DIR`.
//
// The tests in this package parse every cell with the harness's own
// parser under the server's caps, run every cell against the real engine
// (at reduced size with -short), check every quiz against those results,
// check that every quiz answer depends on a measurement, and check that
// every exercise block names an exercise that exists. claims_test.go and
// claims_engine_test.go hold the lessons' claims as tests: each relation a
// lesson states about what the reader will see is checked on the cells'
// own results, or on the crashable filesystem where no cell can show it.
package lessons

import "embed"

// FS holds every chapter (*.md) of the course.
//
//go:embed *.md
var FS embed.FS
