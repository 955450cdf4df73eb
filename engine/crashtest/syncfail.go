package crashtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"kvlab/engine"
)

// A failed fdatasync, shown rather than cited: RunSyncFailure writes to a
// store on an engine.MemFS whose Fault hook fails one fdatasync of a
// segment with EIO, the way a dying disk or a vanished network volume
// does, and records what the store acknowledged before, at and after it.
//
// The filesystem does what Linux does when writeback fails
// (MemFS.LinuxWriteback): the pages whose writeback failed are marked
// clean, so a retried fdatasync has nothing to write and succeeds, and
// the page cache still returns the bytes that never reached the disk. An
// engine that retried and then acknowledged, or that reopened and
// trusted what it read back, would count those writes durable. The kv
// engine's promise (engine.ErrFailed) is the opposite:
//
//   - the first error is sticky: every later Put fails with ErrFailed
//     wrapping it, even once the fault is gone (Tried, AckedAfter);
//   - DurableSeq never moves past what the last successful fdatasync
//     covered (DurableSeqAtFailure, DurableSeqAfter);
//   - the writes acknowledged after that fdatasync are lost, as in a power
//     cut, although the machine never lost power: a reopen in the same
//     boot, which still sees them in the page cache, does not return them
//     (ReturnedUndurable), and returns every durable one (Lost).

// SyncFailConfig describes one run of RunSyncFailure.
type SyncFailConfig struct {
	Sync engine.SyncPolicy
	// FailAfter: the first fdatasync of a segment that starts after
	// FailAfter Puts were acknowledged fails; 0 = 1000.
	FailAfter int
	// Tries is how many Puts are tried after the failure, with the fault
	// gone; 0 = 10.
	Tries int
	// WriteBuffer is the store's Options.WriteBuffer.
	WriteBuffer int
	// ValueSize of every Put; 0 = 128.
	ValueSize int
	// SegmentSize of the store; 0 = 4 MiB, which none seals (and so
	// fdatasyncs) after about 28,000 Puts, and which a periodic timer of
	// tens of milliseconds does not fill between two syncs.
	SegmentSize int64
}

// SyncFailReport is what RunSyncFailure saw. Writes are numbered in the
// order they were issued; each Put writes a key of its own.
type SyncFailReport struct {
	Sync      string `json:"sync"`
	FailAfter int    `json:"fail_after"`
	// Acked counts the Puts acknowledged before the failure; of those,
	// DurableAcked were covered by an fdatasync that succeeded
	// (DurableSeqAtFailure).
	Acked        int64 `json:"acked"`
	DurableAcked int64 `json:"durable_acked"`
	// PutMeanNs is the mean time of a Put before the failure (the wall
	// clock over the Puts issued), on the in-memory filesystem.
	PutMeanNs float64 `json:"put_mean_ns"`
	// FailedSync names the fdatasync that failed ("sync /kv/000001.seg");
	// FirstError is the error of the first Put that failed: the Put whose
	// own fdatasync failed, or the next one after a background sync
	// failed.
	FailedSync string `json:"failed_sync"`
	FirstError string `json:"first_error"`
	// Tried counts the Puts tried after the fault was cleared; AckedAfter
	// those acknowledged (must be 0); SameError those refused with
	// ErrFailed and the first error's text.
	Tried      int64 `json:"tried_after"`
	AckedAfter int64 `json:"acked_after"`
	SameError  int64 `json:"same_error_after"`
	// DurableSeqAtFailure and DurableSeqAfter are the store's DurableSeq
	// when the first Put failed and after the tries: equal.
	DurableSeqAtFailure uint64 `json:"durable_seq_at_failure"`
	DurableSeqAfter     uint64 `json:"durable_seq_after"`
	// After a reopen in the same boot (MemFS.Kill: the page cache, with
	// its clean but never written pages, survives): Recovered counts the
	// acknowledged writes found; Lost the durable ones missing (must be
	// 0); LostAcked the acknowledged ones missing; ReturnedUndurable the
	// acknowledged writes beyond DurableSeqAtFailure that came back
	// (0: the store dropped what no fdatasync covered).
	Recovered         int64  `json:"recovered"`
	Lost              int64  `json:"lost"`
	LostAcked         int64  `json:"lost_acked"`
	ReturnedUndurable int64  `json:"returned_undurable"`
	ReopenError       string `json:"reopen_error,omitempty"`
}

// OK reports whether the store kept its promise: nothing acknowledged
// after the failure, DurableSeq unmoved, and after the reopen every
// durable write back and no other.
func (r SyncFailReport) OK() bool {
	return r.FirstError != "" && r.AckedAfter == 0 && r.SameError == r.Tried &&
		r.DurableSeqAfter == r.DurableSeqAtFailure && r.Lost == 0 && r.ReturnedUndurable == 0 && r.ReopenError == ""
}

// errInjectedEIO is the error the fault injects: EIO, as Linux reports a
// failed writeback.
var errInjectedEIO = &fsyncFault{}

type fsyncFault struct{}

func (*fsyncFault) Error() string        { return "injected fdatasync failure: " + syscall.EIO.Error() }
func (*fsyncFault) Is(target error) bool { return target == syscall.EIO }

// maxSyncFailPuts bounds the Puts RunSyncFailure issues waiting for the
// failure (a periodic timer fires within its interval; the bound is for a
// policy whose next fdatasync never comes).
const maxSyncFailPuts = 1 << 20

// RunSyncFailure runs the story of one failed fdatasync on cfg's policy
// (see the comment above SyncFailConfig). The error is for a run that
// could not tell the story: a bad policy, no fdatasync within
// maxSyncFailPuts Puts, a cancelled context.
func RunSyncFailure(ctx context.Context, cfg SyncFailConfig) (SyncFailReport, error) {
	if cfg.FailAfter <= 0 {
		cfg.FailAfter = 1000
	}
	if cfg.Tries <= 0 {
		cfg.Tries = 10
	}
	if cfg.ValueSize <= 0 {
		cfg.ValueSize = 128
	}
	if cfg.SegmentSize == 0 {
		cfg.SegmentSize = 4 << 20
	}
	rep := SyncFailReport{Sync: cfg.Sync.String(), FailAfter: cfg.FailAfter}
	mem := engine.NewMemFS()
	mem.LinuxWriteback = true
	var armed, failed atomic.Bool
	var failedSync atomic.Value
	mem.Fault = func(op, name string) error {
		if op == "sync" && strings.HasSuffix(name, ".seg") && armed.Load() && !failed.Load() {
			failed.Store(true)
			failedSync.Store(op + " " + name)
			return errInjectedEIO
		}
		return nil
	}
	opts := engine.Options{Sync: cfg.Sync, FS: mem, WriteBuffer: cfg.WriteBuffer, SegmentSize: cfg.SegmentSize}
	db, err := engine.Open("/kv", opts)
	if err != nil {
		return rep, fmt.Errorf("crashtest: %w", err)
	}
	key := func(i int64) []byte { return fmt.Appendf(nil, "k%09d", i) }
	value := func(i int64) []byte {
		v := make([]byte, cfg.ValueSize)
		copy(v, fmt.Appendf(nil, "v%d/", i))
		return v
	}
	var i int64
	var firstErr error
	start := time.Now()
	for ; firstErr == nil; i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			db.Close()
			return rep, ctx.Err()
		}
		if i == maxSyncFailPuts {
			db.Close()
			return rep, fmt.Errorf("crashtest: no fdatasync of a segment came within %d Puts under %s", i, cfg.Sync)
		}
		if i == int64(cfg.FailAfter) {
			armed.Store(true)
		}
		if firstErr = db.Put(key(i), value(i)); firstErr == nil {
			rep.Acked++
		}
	}
	rep.PutMeanNs = float64(time.Since(start).Nanoseconds()) / float64(i)
	rep.FirstError = firstErr.Error()
	if s, ok := failedSync.Load().(string); ok {
		rep.FailedSync = s
	}
	rep.DurableSeqAtFailure = db.Stats().DurableSeq
	// Write seq n is Put n-1 (every Put so far is one record, seqs from 1).
	rep.DurableAcked = min(int64(rep.DurableSeqAtFailure), rep.Acked)

	// The fault is gone (it fails one fdatasync only): a retried
	// fdatasync would now succeed.
	for j := range int64(cfg.Tries) {
		if ctx.Err() != nil {
			db.Close()
			return rep, ctx.Err()
		}
		rep.Tried++
		err := db.Put(key(i+j), value(i+j))
		switch {
		case err == nil:
			rep.AckedAfter++
		case errors.Is(err, engine.ErrFailed) && err.Error() == rep.FirstError:
			rep.SameError++
		}
	}
	rep.DurableSeqAfter = db.Stats().DurableSeq
	db.Close() // returns the sticky error

	// Reopen in the same boot: the page cache kept every byte written.
	after := mem.Kill()
	opts.FS = after
	db, err = openUnlessDone(ctx, opts)
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	if err != nil {
		rep.ReopenError = err.Error()
		return rep, nil
	}
	defer db.Close()
	for n := range rep.Acked {
		if n%1024 == 0 && ctx.Err() != nil {
			return rep, ctx.Err()
		}
		v, err := db.Get(key(n))
		durable := n < rep.DurableAcked
		switch {
		case err == nil && string(v) == string(value(n)):
			rep.Recovered++
			if !durable {
				rep.ReturnedUndurable++
			}
		case durable:
			rep.Lost++
			rep.LostAcked++
		default:
			rep.LostAcked++
		}
	}
	return rep, nil
}

// openUnlessDone opens the store at /kv on opts.FS (an in-memory
// filesystem), or returns ctx's error as soon as ctx is done: recovering
// a long log takes a while, and a run must end with its budget. An open
// that finishes after ctx is done closes its store itself.
func openUnlessDone(ctx context.Context, opts engine.Options) (*engine.DB, error) {
	type opened struct {
		db  *engine.DB
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		db, err := engine.Open("/kv", opts)
		ch <- opened{db, err}
	}()
	select {
	case o := <-ch:
		return o.db, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.err == nil {
				o.db.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
