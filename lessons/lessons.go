// Package lessons holds the kvlab course: ten chapters on measuring
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
//     into the lesson; package kvlab/internal/quiz evaluates it. With
//     predict: yes the page locks the quiz's cell until the reader has
//     predicted.
//   - exercise NAME: a Go exercise that runs in the browser (see
//     kvlab/wasm/grader for the names).
//
// The files are embedded into the labserver binary through FS; authors
// can serve a working copy instead with `labserver -lessons DIR`.
//
// The tests in this package parse every cell with the harness's own
// parser under the server's caps, run every cell at reduced size against
// the real engine, check every quiz against those results, check that
// every quiz answer reads at least one result, and check that every
// exercise block names an exercise that exists.
package lessons

import "embed"

// FS holds every chapter (*.md) of the course.
//
//go:embed *.md
var FS embed.FS
