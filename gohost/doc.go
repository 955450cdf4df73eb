// Package gohost runs a student's Go source in the Go interpreter yaegi,
// with a hand-picked part of the standard library and nothing else of
// the host (no os, no network). It is the one host of kvlab's Go
// exercises: the in-browser grader (kvlab/wasm/grader, built for
// GOOS=js by kvlab/wasm/worker) grades through it, and the harness runs
// a reader's store on the real disk through it (kvlab/harness/mine,
// -engine mine), so the two run the same code under the same rules.
//
// Files:
//
//	program.go  Load: parse, check and evaluate a student's file with a
//	            Prelude appended; Program.Lookup and Function find what
//	            it declared, Call runs it with a panic as a *PanicError;
//	            CodeError carries the student's own line and column
//	symbols.go  the packages a student may import (fmt, hash/crc32,
//	            math, slices for []int64, sort, time, and kvfs), and
//	            Output, what the code printed
//	lines.go    the rewrite that marks each kvfs call changing the disk
//	            with its line (StudentLine), for the crash exercises'
//	            timelines
//	store.go    the crash exercises' store: StorePrelude, OpenStore and
//	            Store's Put and Get
//	native.go   LoadNative: a store loaded for a run on the real disk,
//	            with bounds a server needs (no go statements, MaxAlloc
//	            per allocation, Stop from another goroutine)
//	errors.go   ErrStopped, ErrNotOpen
//	kvfs/       the filesystem a store is given, imported as "kvfs"
//
// Interpreter gaps (yaegi v0.16.1) and what Load does about them:
//
//   - the builtins min and max are missing: a generic min/max is appended
//     after the student's code (so line numbers stay the student's) unless
//     the student declares their own;
//   - range over an int makes the interpreter panic: the panic is caught
//     and reported at the loop's line:col with the form that works;
//   - generic functions cannot be handed to the interpreter, so slices is
//     there only for []int64; importing a package not listed is an error
//     naming the ones allowed.
//
// Nothing here is safe for concurrent use but Native, whose calls take
// one lock for the whole process: the print buffer (Output) and the line
// marker (StudentLine) are the package's.
package gohost
