// Package peers gives the harness production storage engines to measure
// beside kv: bbolt (go.etcd.io/bbolt, a copy-on-write B+tree in one
// memory-mapped file), Pebble (github.com/cockroachdb/pebble/v2, an LSM
// tree with a write-ahead log) and SQLite (modernc.org/sqlite, the SQL
// database in WAL mode, one table, one statement per write), all three
// in-process; and servers across a socket: any RESP (Redis protocol)
// server, kvlab's own kvserver included (resp.go), a throwaway
// redis-server (redis.go) and PostgreSQL, a throwaway cluster or a running
// one (postgres.go, postgres_cluster.go); and replicated groups of servers
// the harness starts on loopback: a PostgreSQL primary with synchronous
// standbys (pgsync.go) and an etcd cluster (etcd.go), optionally behind a
// TCP proxy that adds network delay (netproxy.go). Every connection to a
// server is bounded in time and ends with the run (netconn.go). Running the
// same workload on all of them measures the engines, not the framework: the
// fsync tax and group commit are properties of durable storage, not of a
// teaching toy.
//
// Importing the package registers the engines with the harness:
//
//	import _ "kvlab/harness/peers"
//
//	labserver bench -engine kv,bbolt,pebble,sqlite -sync always -workload fillrandom
//
// Each adapter implements harness.Store and harness.Scanner (all three
// keep keys in byte order, so range scans work; kv cannot scan because a
// hash index has no order). Pebble and SQLite implement
// harness.StatsReporter, Pebble through its vfs.FS seam (countfs.go),
// SQLite through a shim VFS (sqlite_vfs.go); bbolt does its fdatasyncs
// inside Tx.Commit on a file handle the adapter cannot see, so there is
// nothing honest to count (see bbolt.go).
//
// # Sync policies
//
// The -sync names mean what DESIGN.md says they mean for kv. Each adapter
// maps them onto what its engine can actually do, and refuses (with an error
// wrapping ErrUnsupportedSync) a policy the engine cannot express rather than
// substituting another one silently.
//
//	policy      bbolt                                       pebble
//	----------  ------------------------------------------  --------------------------------------
//	always      one Update tx per write, serialized by      pebble.Sync writes one at a time (an
//	            bbolt's writer lock; each commit does 2     adapter mutex), so each write gets its
//	            fdatasyncs (pages, then meta page)          own WAL fdatasync
//	group       DB.Batch: concurrent writes share one tx    concurrent pebble.Sync writes; the WAL
//	            and its commit (a batch waits up to         flusher makes one fdatasync cover every
//	            MaxBatchDelay = 10 ms to fill)              write waiting on it
//	batch:N     N writes per held-open tx; the Nth          every Nth write is pebble.Sync, the rest
//	            commits it (and fdatasyncs)                 pebble.NoSync
//	periodic:D  error: bbolt cannot express it              pebble.NoSync writes + a timer appending
//	                                                        an empty pebble.Sync record to the WAL
//	none        NoSync (THIS IS UNSAFE)                     pebble.NoSync
//
//	policy      sqlite (WAL mode)
//	----------  ------------------------------------------------------------
//	always      synchronous=FULL: each commit fdatasyncs the WAL; writes one
//	            at a time (SQLite has one writer)
//	group       error: SQLite has no commit that shares its sync
//	batch:N     synchronous=FULL, N writes per held-open transaction
//	periodic:D  synchronous=NORMAL + a timer committing a FULL update every D
//	none        synchronous=NORMAL: the WAL is synced only at checkpoints;
//	            a commit survives a process kill, not a power cut
//
// The per-engine files spell out where each mapping differs from kv's
// meaning, for example how far a write has travelled when Put returns.
//
// # Cost
//
// All three are ordinary Go modules, nothing to install (modernc.org/sqlite
// is also the run archive's driver, so it costs labserver nothing more). Measured on the lab's
// 2-core build box (Go 1.26, Nov 2026): linking them adds about 18 MB to
// labserver (Pebble 17.4 MB, bbolt 0.5 MB; 33.4 MB without, 51.3 MB with),
// and compiling Pebble and its dependencies from a cold build cache adds
// about a minute of wall time on 2 cores, 1.9 CPU-minutes (bbolt: under 2
// CPU-seconds). A warm cache pays neither again.
package peers
