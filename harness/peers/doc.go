// Package peers gives the harness two production key-value engines to
// measure beside kv: bbolt (go.etcd.io/bbolt, a copy-on-write B+tree in one
// memory-mapped file) and Pebble (github.com/cockroachdb/pebble/v2, an LSM
// tree with a write-ahead log). Running the same workload on all three
// measures the engines, not the framework: the fsync tax and group commit
// are properties of durable storage, not of a teaching toy.
//
// Importing the package registers the engines with the harness:
//
//	import _ "kvlab/harness/peers"
//
//	labserver bench -engine kv,bbolt,pebble -sync always -workload fillrandom
//
// Each adapter implements harness.Store and harness.Scanner (both engines
// keep keys in byte order, so range scans work; kv cannot scan because a
// hash index has no order). Only Pebble implements harness.StatsReporter:
// bbolt does its fdatasyncs inside Tx.Commit on a file handle the adapter
// cannot see, so there is nothing honest to count (see bbolt.go).
//
// # Sync policies
//
// The -sync names mean what DESIGN.md says they mean for kv. Each adapter
// maps them onto what its engine can actually do, and refuses (with an error
// wrapping ErrUnsupportedSync) a policy the engine cannot express rather than
// substituting another one silently.
//
//	policy      bbolt                                 pebble
//	----------  ------------------------------------  ------------------------------------
//	always      one Update tx per write (2 fdatasync:  one pebble.Sync write at a time
//	            pages, then meta), serialized by       (adapter mutex), so each write gets
//	            bbolt's single writer lock             its own WAL fdatasync
//	group       DB.Batch: concurrent writes share one  concurrent pebble.Sync writes; the
//	            tx and its commit (waits up to         WAL LogWriter's flusher makes one
//	            MaxBatchDelay = 10ms to fill)           fdatasync cover every waiting write
//	batch:N     N writes per held-open tx; commit      every Nth write is pebble.Sync, the
//	            (and fdatasync) on the Nth             rest pebble.NoSync
//	periodic:D  error: not expressible                 pebble.NoSync writes + a timer that
//	                                                  appends a synced empty WAL record
//	none        NoSync (THIS IS UNSAFE)                pebble.NoSync
//
// The per-engine files spell out where each mapping differs from kv's
// meaning, for example how far a write has travelled when Put returns.
package peers
