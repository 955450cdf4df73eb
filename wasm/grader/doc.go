// Package grader holds the in-browser Go exercises: their text, starting
// stubs, model solutions and the unit tests that check a student's code.
//
// A student's source is evaluated by the Go interpreter yaegi and the
// functions it defines are called with the cases of an exercise. The
// expected values never live here: they come from kvlab/harness/calc, the
// same package the harness measures with and tests against, so the browser
// and the harness cannot disagree about what a percentile is.
//
// The package is plain Go. Its tests run natively with `go test`; the
// kvlab/wasm/worker program wraps it for GOOS=js GOARCH=wasm and the Web
// Worker in static/exercise-worker.js.
//
// Interpreter gaps (yaegi v0.16.1) and what this package does about them:
//
//   - the builtins min and max are missing: a generic min/max is appended
//     after the student's code (so line numbers stay the student's) unless
//     the student declares their own;
//   - range over an int makes the interpreter panic: the panic is caught
//     and reported at the loop's line:col with the form that works;
//   - only a few standard packages are available (fmt, hash/crc32, math,
//     slices, sort, time; slices only for []int64, as generic functions
//     cannot be handed to the interpreter), and kvlab/wasm/kvfs as "kvfs"
//     for the crash exercises; importing another one is an error naming
//     the ones allowed. Nothing else of the host (no os, no network) is
//     reachable from a student's code.
//
// The crash exercises (crash.go) grade a student's store on the engine's
// MemFS, which loses power the way the engine's own crash tests cut it.
// That is the one piece of kvlab/engine this package uses: MemFS touches
// no disk, and engine builds for GOOS=js (sync_other.go).
//
// Nothing here is safe for concurrent use: Run evaluates one program at a
// time (the worker is single-threaded anyway).
package grader
