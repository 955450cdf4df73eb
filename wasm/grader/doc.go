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
// Worker in static/exercise-worker.js. The interpreter itself, the
// packages a student may import (kvfs among them, for the crash
// exercises) and the store's shape are kvlab/gohost's, which the harness
// also runs a reader's store with on the real disk (-engine mine); see
// its doc for the interpreter's gaps and what is done about them.
//
// The crash exercises (crash.go) grade a student's store on vfs.MemFS
// (kvlab/engine/vfs), which loses power the way the engine's own crash
// tests cut it. It touches no disk, and nothing of kvlab/engine itself
// is built into the browser.
//
// Files:
//
//	exercise.go   Exercise, Result, Run: the catalogue and one grading
//	percentile.go the exercise "percentile", graded on calc.PercentileCases
//	mutants.go    "percentile-tests": a student's table against broken
//	              Percentiles
//	meantail.go   "mean-vs-tail"
//	model.go      "batch-model"
//	crash.go      the crash exercises' machinery: record a workload,
//	              cut the power after each operation, reopen and check
//	durable.go    "durable-ack"
//	torn.go       "torn-tail"
//	replace.go    "atomic-replace"
//	workload.go   the seeded workloads and the shrinking of a failure
//	opencache.go  Opens not run again on bytes already seen
//	timeline.go   Timeline, a failing crash case as the page draws it
//
// The crash exercises' fault model is ext4's on Linux, as far as a store
// of one directory can meet it:
//
//   - nothing written is durable until an fdatasync of its file, no name
//     created, renamed or removed until an fsync of the directory;
//   - a power cut keeps the unsynced bytes of a file in order, the last
//     write torn at any byte (prefix), or as any subset of their 512-byte
//     sectors (reorder), or none of them; atomic-replace also lets each
//     unsynced name change persist or not (dirent);
//   - a truncation not yet synced (Truncate, or Create of an existing
//     file, which is O_TRUNC) may or may not persist: ext4 can commit an
//     inode's new size in its journal before any fdatasync;
//   - an fdatasync can fail with EIO, and the pages it failed to write are
//     then marked clean, as Linux does (vfs.MemFS.LinuxWriteback): the
//     next fdatasync succeeds without writing them;
//   - the power is cut after every operation of the workload, and for
//     each such cut again after every operation of the Open that recovers
//     from it (a second crash during or right after recovery).
//
// Cases ext4 allows that the model leaves out: a directory fsync, a
// rename, a create or a write that fails (a full disk is met only past
// the grader's bounds, crashMaxBytes); a sync failing in Open or more
// than once per workload (only the first fdatasync at or after the
// middle Put fails, once); writes torn inside a sector, or sectors that
// come back garbled or holding another file's old blocks (ext4's
// data=writeback, metadata-only journaling, can commit a file's new size
// before its data) rather than old or new or zeros (the torn-tail
// exercise garbles bytes on purpose instead, after the workload); in
// durable-ack and torn-tail, a name created or removed reaching the disk
// before the directory fsync (prefix and reorder keep only synced names;
// ext4's journal may commit one early, which atomic-replace's dirent
// mode tries); metadata of several files reaching the disk in an order
// the directory fsyncs did not impose (each name is decided on its own);
// and the delayed-allocation flush ext4 does on a rename over a file or
// a close after truncation (auto_da_alloc), which can save a store that
// skipped an fdatasync: the model never saves one.
//
// Where the model is harsher than ext4's default: with data=ordered, an
// append's new blocks reach the disk before the journal commits the size
// that covers them, so a power cut leaves the old size or the whole
// append; reorder mode may leave a hole inside an append, as
// data=writeback or a disk whose cache reorders writes can. A store that
// is right under the model is right under ext4.
//
// Each grading draws its workload from a seed (workload.go) that the
// results show; a line "// kvlab:seed N" in the code replays workload N.
// A failure is shrunk to the fewest Puts that still fail, and its row
// carries a Timeline (timeline.go; JSON "timeline" of a case, described
// in docs/api.md): the operations of the shrunk case with the line of the
// student's code that issued each, the power cut, what it kept of each
// operation, and the operation whose promise broke. The lines come from a
// rewrite of the student's source before it is evaluated (kvlab/gohost's
// lines.go): each statement that calls a kvfs operation changing the disk
// first calls kvlabAtLine with its line, placed after the statement
// before it so that no line or column moves; it works the same in the
// browser's worker and in a native test, being plain Go for the same
// interpreter.
//
// The grading opens the student's store some hundreds of times; an Open
// on bytes an earlier Open of the same grading found is not run again
// (opencache.go): the student's code reaches no clock, no randomness and
// no disk but the one it is given, so what it read is what it reads
// again. (An Open that writes in Go's map order may do other operations
// on the same bytes another time; the grading checks what it did first,
// as it checks one disk once per cut point.)
//
// Nothing here is safe for concurrent use: Run evaluates one program at a
// time (the worker is single-threaded anyway).
package grader
