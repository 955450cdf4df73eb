// Package grade grades a quiz answer against runs this server measured.
// It is the one place an answer meets a measurement: POST /api/quiz
// (package server) calls Grade, a room's poll (package liveclass) Measure,
// and neither decodes a result to grade it.
//
// A quiz that reads a cell is graded from runs the server recorded for
// that lesson, cell and browser (Load, Pick); a predict: yes quiz's
// stored prediction from the first runs after it (FirstAfter); a run:
// quiz from its own measurement. Whatever chose them, the runs reach
// Grade as rounds: rounds[r] is round r's results, one per line of the
// cell, as the harness encoded them.
//
// Every failure is an *Error whose Kind says whose fault it was (the
// answer's, the request's, the runs', or the server's), so a caller
// maps it to its own reply without reading the message.
//
// Files:
//
//	doc.go     this overview
//	errors.go  Error and its Kinds
//	grade.go   Grade and Measure: results decoded once, the answer checked (package quiz)
//	runs.go    Runs: which recorded runs may grade a cell quiz, and why not
package grade
