package engine

// What a failed fdatasync means, and what the store does about it.
//
// On Linux, when the writeback of a file's dirty pages fails, the kernel
// reports the error to an fdatasync and marks the pages clean: their
// contents stay in the page cache, where every read still finds them, but
// they are not on the disk and no later fdatasync writes them (nothing is
// dirty any more). Clean pages can also be evicted at any moment, after
// which a read finds what the disk holds. So after a failed fdatasync the
// file reads back, for a while, as if the failed writes had succeeded.
//
// The store therefore makes the first failure sticky (committer.synced):
// nothing after it is acknowledged, and no retry is trusted. That alone
// is not enough. A store reopened in the same boot (after Close, or after
// the process died) would read the failed writes back from the page
// cache, recover them, fdatasync (which has nothing to write and
// succeeds), count them durable and let the next sync mark vouch for
// them; a power cut then leaves a hole before that mark, and Open refuses
// the store as corrupt, so a Put acknowledged after the reopen is lost.
//
// So when an fdatasync of the active segment fails, the store also
// truncates the segment back to seg.synced, the end of what the last
// fdatasync that returned covered (dropUnsynced). What a reopen then
// reads is what is on the disk, and marks vouch for nothing else. The
// price: the writes that no fdatasync covered are gone at once, even from
// the page cache, so a reopen does not recover them, as a power cut
// would not (a process kill alone would have kept them, but with their
// writeback failed only the page cache held them, and only until
// eviction). Get of such a write fails with an error that says so.
//
// Invariant after a failed fdatasync of segment s: s's file (as every
// later reader sees it) holds exactly the bytes that fdatasyncs which
// returned covered, and so a reopen's DurableSeq is the DurableSeq the
// store had at the failure, unless the truncate failed too, in which case
// the reopen may still count the failed writes durable. Two windows stay
// open: a process that dies between the failed fdatasync and the
// truncate, and a failed fdatasync in Open itself (recovery's own
// fdatasync of records it read from the page cache), after which Open
// returns the error and a second Open in the same boot finds the pages
// clean. MemFS.LinuxWriteback simulates the kernel's behaviour;
// TestReopenAfterFailedSync checks the store under it.

// dropUnsynced truncates seg's file back to seg.synced, what the last
// fdatasync of it that returned covered, after an fdatasync of it failed
// (see above). The truncate's own error is ignored: the store has failed
// already, with the fdatasync's error, and there is nothing else to do.
//
// REQUIRES: db.syncMu held; the store's sticky error is set.
func (db *DB) dropUnsynced(seg *segment) {
	_ = seg.f.Truncate(seg.synced.Load())
}
