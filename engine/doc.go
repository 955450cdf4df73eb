// Package engine is a durable key-value store in the Bitcask model: an
// append-only log of records in segment files, an in-memory hash index from
// each key to the place of its latest record (optionally with the keys
// also kept in order, for range scans), tombstones for deletes,
// compaction that rewrites the live records, and recovery that rescans the
// log on open.
//
// # Using it
//
//	db, err := engine.Open(dir, engine.Options{Sync: engine.SyncPolicy{Mode: engine.SyncGroup}})
//	err = db.Put([]byte("k"), []byte("v"))
//	v, err := db.Get([]byte("k")) // errors.Is(err, engine.ErrNotFound) when absent
//	err = db.Delete([]byte("k"))
//	var b engine.Batch // several writes, atomically: all survive a crash or none (batch.go)
//	b.Put([]byte("a"), []byte("1"))
//	b.Delete([]byte("k"))
//	err = db.Apply(&b)
//	err = db.Close()
//
// With Options.Index = IndexOrdered the store also keeps its keys in
// order, and Scan(lo, hi, fn) visits a range of them (index.go); the
// default hash index serves Get alone.
//
// A *DB is safe for concurrent use; db.go explains who holds which lock.
// A store directory must be opened by one process at a time; nothing
// enforces it.
//
// # Record format
//
// Every Put and Delete appends one record to the active segment, sometimes
// preceded by a sync mark (below); DB.Apply appends one batch record
// holding several. All integers are little-endian:
//
//	+-----------+----------+-----------+--------------+----------------+-----------+-------------+
//	| CRC (4B)  | Seq (8B) | Kind (1B) | KeyLen (2B)  | ValueLen (4B)  | Key       | Value       |
//	+-----------+----------+-----------+--------------+----------------+-----------+-------------+
//	|<--------------------------- header: 19 bytes ------------------>|<- KeyLen->|<- ValueLen->|
//	            |<----------------------- covered by the CRC ------------------------------------>|
//
//	CRC       CRC-32C (Castagnoli) of every byte after it, up to the end of the value.
//	Seq       the write's sequence number: 1, 2, 3, ... in the order writes happened.
//	          A sync mark's Seq is 0: it is not a write.
//	Kind      1 = put, 2 = delete (a tombstone; ValueLen is 0), 3 = sync mark,
//	          4 = atomic batch. 0 never occurs: a zero header marks the
//	          zero-filled space after the last record.
//	KeyLen    1..MaxKeySize (4096); 0 for a sync mark and a batch.
//	ValueLen  0..MaxValueSize (16 MiB); 8 for a sync mark; 20..MaxBatchSize
//	          (64 MiB) for a batch.
//
// A sync mark (kind 3, syncmark.go) is 27 bytes: the header, no key, and a
// value holding one offset Y of its segment (8 bytes, little-endian). It
// says: every byte of this segment before Y was made durable by an
// fdatasync that returned before this record was written. After an
// fdatasync of the active segment returns, the next write into it carries
// a mark in the same write(2); Close writes one for the segment's end and
// fdatasyncs it, so it costs a second fdatasync. Marks are never data:
// not indexed, never returned by Get, never copied by compaction, never
// listed in hint files.
//
// An atomic batch (kind 4, batch.go, written by DB.Apply) is a record
// whose value is the batch's put and delete records, each whole, with its
// own Seq and CRC, numbered consecutively; the batch's Seq is the last
// of them, and its CRC covers them all:
//
//	+-----------------------------+-------------------------+-------------------------+-----+
//	| header: CRC, Seq=s+n-1,     | record 1: put or delete | record 2                | ... |
//	| Kind=4, KeyLen=0, ValueLen  | (header, Seq=s, key,    | (Seq=s+1, ...)          |     |
//	+-----------------------------+-------------------------+-------------------------+-----+
//	                              |<--------------------- ValueLen ------------------------>|
//
// The index points into the batch, at each record where it lies, so Get
// and compaction read it as any other; recovery replays a batch only once
// its CRC matched, so a batch torn by a crash is a torn tail, truncated
// whole: a crash keeps every record of a batch or none.
//
// The constants in record.go, segment.go and hint.go that define this
// layout are part of the on-disk format and must not change.
//
// # Files
//
// A store is a directory of segments 000000001.seg, 000000002.seg, ...
// (segment.go), each with an optional hint file that lists its keys and
// record offsets without the values, so reopening need not read every value
// (hint.go). The newest segment is the active one; when it reaches
// Options.SegmentSize it is sealed and a new one starts. By default,
// under "always", "group" and "batch:N" (not under "none" or
// "periodic:D", where no writer waits for a flush), the active segment is
// zero-filled ahead of the writes (never past SegmentSize), because on
// ext4 an fdatasync after an overwrite is cheaper than one after an
// append (segment.go has the measurements); a sealed segment is cut back
// to its last record.
// Stats().FsyncsBy says which fdatasyncs a policy asked for and which
// the files cost (sealing, zero-filling, compaction, hints, Open).
//
// # Durability
//
// When a Put returns depends on the sync policy (commit.go): "always",
// "group", "batch:N", "periodic:D" or "none"; ParseSync reads their text
// form. Stats().DurableSeq is the highest sequence number covered by an
// fdatasync that returned: a power cut keeps every write up to it. The
// first failed fdatasync (or write) is sticky: the store fails every later
// write with it and never acknowledges anything after it. A failed
// fdatasync means the bytes it covered may never reach the disk although
// the page cache still returns them (Linux marks them clean), so the
// store truncates the segment back to what the last successful
// fdatasync covered: a reopen, in the same boot or after a power cut,
// finds exactly the writes up to DurableSeq, and the acknowledged writes
// after it are lost as in a power cut (writeback.go).
//
// "fdatasync" throughout means Datasync (sync_*.go): fdatasync(2) on
// Linux; on macOS fcntl(F_FULLFSYNC), because a plain fsync there leaves
// the data in the drive's volatile cache.
//
// Recovery (recover.go) truncates a torn tail of the newest segment and
// reports corruption anywhere else as ErrCorrupt with the file and offset.
// A bad record at offset B of the newest segment is damage to durable data
// if a sync mark after it claims some Y > B: recovery tries every later
// offset in turn for a mark whose checksum matches, without trusting the
// bad record's length fields (they may be what was damaged), and refuses
// to open with ErrCorrupt naming B if it finds one. Otherwise no fdatasync
// vouched for byte B, and the tail from B on is torn, whatever decodes
// after it: a disk may write an unsynced tail back out of order, leaving a
// hole before whole records that were never durable. This is sound because
// a mark exists on disk only if the fdatasync before it returned, whatever
// order the disk persisted things in, and it relies on one condition:
// every mark the store writes sits at an offset at or after the Y it
// claims. A mark that decodes at offset X with Y > X (the bytes of a
// value can encode one) was never written as a mark, and recovery does
// not trust it. Open also syncs the store
// directory, so the name of the segment it goes on writing into is
// durable before any write there is acknowledged.
// Compaction (compact.go) installs its output only after it is durable and
// deletes old segments in an order that cannot resurrect a deleted key.
// Background compaction (background.go, Options.AutoCompact) rewrites the
// sealed segments in place while writers go on, replacing them oldest
// first so that a crash at any step leaves a store that replays to the
// same index; writers that outrun it wait (a write stall,
// Options.StallDebt) until it catches up.
//
// # Reading the source: the life of a Put
//
// Follow one Put from the API to the disk:
//
//  1. Put (db.go) checks the value size and calls write, which checks the
//     key size, waits while writes are stalled behind background
//     compaction (waitForCompaction, background.go), takes writeMu and
//     calls appendLocked.
//  2. appendLocked makes room (makeRoomLocked): a sync mark goes before
//     the record if an fdatasync of the segment returned since the last
//     one (syncmark.go); it rotates to a new segment if this record would
//     not fit (rotateLocked: fdatasync, zero tail cut and hint file for
//     the old one) and, where the policy preallocates, makes sure
//     zero-filled space is ready (ensureSpace, segment.go). It
//     gives the record the next sequence number and places it
//     (placeLocked), encoded by appendRecord (record.go): under "always"
//     it writes the record with one WriteAt and points the index at it;
//     under "none", "batch:N" and "periodic:D" it appends the record to
//     the write buffer (wbuf.go) and points the index at where it will
//     land, handing the buffer to the OS with one WriteAt once it is
//     full; under "group" it only queues the encoded record in db.group.
//     noteAppendedLocked then moves the segment's end, the hint and the
//     counts on.
//  3. Back in write, the policy decides (SyncMode, commit.go): "always"
//     calls syncSegment while still holding writeMu, "batch:N" writes
//     the buffer and does so on every Nth write; "periodic:D" and "none"
//     return at once (the periodic timer, runPeriodic, writes the buffer
//     and syncs on its own).
//  4. Under "group", write releases writeMu and blocks in
//     committer.waitDurable. The flusher goroutine (runFlusher) wakes,
//     waits a moment for more writers to queue, then syncActive writes the
//     whole queue with one WriteAt (flushGroupLocked) and calls
//     syncSegment.
//  5. syncSegment calls File.Sync, which in OSFS (vfs/fs.go) is
//     unix.Fdatasync, and then committer.synced: DurableSeq moves up to the
//     last seq the fdatasync covered, or the error becomes sticky and the
//     segment is truncated back to what the last successful fdatasync
//     covered (writeback.go). Either way every waiting Put wakes; a Put
//     returns nil only if its seq is at or below DurableSeq.
//
// # Three layers
//
// A write passes through three places, and each kind of crash keeps a
// different set of them:
//
//	Put ──> process: the write buffer ──write(2)──> OS: page cache ──fdatasync──> disk
//	        (LastSeq)                               (WrittenSeq)                  (DurableSeq)
//
// Stats() reports how far writes got: LastSeq is the last write appended,
// WrittenSeq the last one handed to the OS, DurableSeq the last one an
// fdatasync covered, and DurableSeq <= WrittenSeq <= LastSeq. A process
// kill (SIGKILL, a panic, os.Exit) loses the process's memory only, so it
// keeps every write up to WrittenSeq. A power cut loses the page cache
// too, so it keeps every write up to DurableSeq, and unsynced writes
// beyond it only by luck. Under "always" and "group" a Put returns after
// its fdatasync, so all three are equal whenever no Put is running.
//
// The write buffer exists for "none", "batch:N" and "periodic:D": it
// turns one write(2) per Put into one per sync point or per full buffer.
// A Put under "none" then costs an append to memory and an index update,
// not a system call (BenchmarkWriteBuffer; figures in wbuf.go). It is on
// by default, with DefaultWriteBuffer = 64 KiB, because:
//
//   - these policies already acknowledge writes a power cut can take; the
//     buffer only moves a process kill's bound. Under "batch:N" the
//     buffer is written before every fdatasync, so a kill loses at most
//     the N-1 writes a power cut could; under "periodic:D" and "none" a
//     kill loses at most what is in the buffer, 64 KiB (about 400
//     163-byte records), where one write(2) per Put lost nothing.
//   - above about 4 KiB the buffer's size no longer shows in the Put
//     rate (a write(2)'s fixed cost of a few µs, shared by the records
//     of a 64 KiB buffer, is a few ns each), while a larger buffer makes
//     a kill lose more and the Put that fills it wait longer (copying
//     1 MiB into the page cache takes hundreds of µs).
//
// Options.WriteBuffer sets the size; a negative value turns the buffer
// off, which gives back the old bound: a kill loses nothing a Put
// acknowledged, at one write(2) per Put.
//
// All file access goes through the FS interface (package vfs, vfs/fs.go,
// named here as engine.FS by vfs.go). MemFS (vfs/memfs.go)
// is an in-memory FS that can simulate a power loss by forgetting
// everything not synced; the tests and package crashtest use it. Its power
// cuts can also let unsynced sectors or pages reach the disk out of order,
// or a file name persist without its data, and it can stop after any
// operation, so crashtest crashes a workload at every point
// (vfs/memfs_power.go).
package engine
