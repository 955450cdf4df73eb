// Package kvlab holds the course's own copy of the source its lessons
// point into: the engine and the harness that students read as course
// material, and the lessons' tests. The lesson pages link a mention of a
// file or function (`runPeriodic` in `engine/commit.go`) to this copy,
// served at /source/, so that a reader of the release binary reads the
// code of the very build that runs their cells, without a checkout.
package kvlab

import "embed"

// Source is the embedded source: engine/ (with engine/crashtest/),
// harness/ (with harness/calc/) and lessons/, Go files only.
//
//go:embed engine/*.go engine/crashtest/*.go harness/*.go harness/calc/*.go lessons/*.go
var Source embed.FS
