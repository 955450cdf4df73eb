// Package mine measures a store the reader wrote: the store of the crash
// exercises (func Open(fs kvfs.FS) (*Store, error), Put, Get), given as Go
// source, run by the harness like any engine on the real disk, so its
// ops/s and p99 under its own durability rule sit beside kv's always and
// group on the same disk.
//
//	labserver bench -engine mine -src store.go -workload fillrandom -ops 2000
//	labserver bench -engine mine-null -src store.go -workload fillrandom -ops 2000
//
// The code runs in the Go interpreter the browser uses (yaegi, loaded by
// kvlab/gohost.LoadNative with the same symbols and checks), so its
// figures include the interpreter's cost: -engine mine-null runs the same
// code on a filesystem that does nothing, which is that cost alone.
//
// What the code gets is the kvfs.FS of the exercises and nothing else of
// the host, rooted in the run's fresh directory: real files, where Sync is
// fdatasync(2) and SyncDir an fsync(2) of the directory, and a name is a
// plain file name (kvfs refuses "..", slashes and so absolute paths).
// Bounds, each ending the run with an error that says which:
//
//   - one call (Open, Put, Get) may run for callLimit; a loop that never
//     ends is stopped there, or when the run's context ends (a cancel, the
//     server's cell time);
//   - the Go heap may grow by maxHeapGrowth and the goroutine stacks by
//     maxStackGrowth while the store is open (a recursion that never
//     ends would otherwise reach Go's stack limit, a fatal error that ends
//     the process; both are the process's figures, and whatever else
//     allocates counts too; the watch looks every watchEvery, so a
//     machine too busy to run it for a second or more could still miss
//     a recursion);
//   - one allocation may take at most gohost.MaxAlloc, 64 MiB, counted in
//     bytes: a make's length or capacity times the size of its element
//     (a slice of arrays or structs counts them whole), and a variable,
//     new or composite literal of an array or struct type. Go allocates
//     each whole, and one the machine cannot give ends the process with
//     "fatal error: runtime: out of memory", which no recover catches,
//     before any watch could look; so gohost.LoadNative wraps every size
//     of a make in a check that panics past the limit (the run's error
//     names it), and refuses, before the code runs, an array or struct
//     type whose size it can work out from the file and is over it;
//   - the store may write maxBytes to its directory;
//   - a panic in the code is the run's error, never the process's end;
//     code with a go statement is refused before it runs, since a panic in
//     a goroutine of its own could not be caught.
//
// Calls into the code run one at a time (the exercises' stores have no
// locks), so with -threads N the workers queue for the store.
//
// Files: mine.go registers the engines and watches the code (callLimit,
// the heap and the stacks); fs.go is the filesystem under kvfs (real
// files counted and capped at maxBytes, or nullFS, which keeps
// nothing); errors.go, the sentinel errors.
package mine
