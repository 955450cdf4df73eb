package crashtest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"kvlab/engine"
)

// Crash points: instead of crashing at a random moment, run a workload on
// an engine.MemFS once to count its filesystem operations (creates, writes,
// fdatasyncs, directory syncs, renames, removes, truncates), then rerun it
// from scratch once per operation k = 1..K with the machine stopped right
// after operation k (MemFS.StopAfter), and check what a reboot (a power
// cut, MemFS.PowerCut) or a restarted process (a kill, MemFS.Kill) finds.
// This is the approach of ALICE and CrashMonkey: every window, however
// short, between two operations is a crash point, so a bug that needs the
// crash to land between a file's creation and its directory sync is found
// every time rather than by luck.
//
// The workload is deterministic: one writer, Puts and Deletes over a small
// key space, Compact every so often, then Close; segments are small so
// that rotation (fdatasync, hint file, new segment, directory sync) and
// compaction (copies, renames, removals) fall inside the enumerated
// window. Under "periodic:D" the timer must not fire during the run for
// the operations to repeat exactly, so PointsConfig asks for a long D.
//
// The check, after every crash (see checkKey), is the package's invariant:
//
//	every write acknowledged as durable is present with its value (or its
//	later durable overwrite/delete); writes not yet synced may be lost;
//	nothing is returned that was never written or is corrupt.
//
// "Acknowledged as durable" is what the sync policy promises (promise),
// never what the store reports about itself (its DurableSeq or
// WrittenSeq): an engine that syncs less than its policy says and reports
// it honestly must fail. For a power cut: under "always" and "group" every
// acknowledged write; under "batch:N" all but the last N-1 acknowledged;
// under "periodic:D" every write acknowledged more than D + fsyncBound
// before the crash (with TickEvery, which fires the timer between known
// steps: every write acknowledged before a sync of the timer that
// completed); under "none" nothing. For a process kill, also every
// write that the write buffer cannot still hold: the acknowledged records
// from it to the last one fill at least Options.WriteBuffer bytes (and
// under "always" and "group", which have no buffer, every write). Every
// policy promises everything acknowledged once Close returned nil, and
// everything a reopen recovered once Open returned. A deleted key whose
// tombstone was promised coming back is counted as Resurrected (and
// Lost).
//
// Each reopen is also checked against the store's own statements: Open
// returns with DurableSeq == LastSeq, and LastSeq at least the seq of
// every recovered write (else the next writes would reuse their seqs).
// And each crash image is checked once more with damage injected into the
// record of a promised write that recovery must vouch for (in a sealed
// segment, or in the newest one before a sync mark that claims it): the
// reopen must refuse it with ErrCorrupt, from Open or from the Get of
// that key, never drop it silently (damageCheck).

// PointsConfig describes one enumeration. Zero fields take the defaults
// given in their comments.
type PointsConfig struct {
	Sync engine.SyncPolicy
	// Kill crashes the process (everything handed to the filesystem
	// survives) instead of cutting the power.
	Kill bool
	// Mode is what a power cut keeps of unsynced data (engine.PowerMode).
	Mode engine.PowerMode
	// Steps is the number of Puts and Deletes in the workload; 0 = 120.
	Steps int
	// Keys is the size of the key space; 0 = 12, so keys are overwritten
	// and deleted many times.
	Keys int
	// ValueSize is the mean value size; 0 = 100.
	ValueSize int
	// SegmentSize of the store; 0 = engine.MinSegmentSize (4 KiB).
	SegmentSize int64
	// CompactEvery calls Compact after every so many steps; 0 = 50,
	// negative = never.
	CompactEvery int
	// WriteBuffer is the store's Options.WriteBuffer (none, batch and
	// periodic): 0 = the engine's default, which these small workloads
	// only flush at sync points; a few hundred bytes also flushes it when
	// full, between them.
	WriteBuffer int
	// Seed chooses the workload and the random parts of each power cut.
	Seed uint64
	// Stride crashes after every Stride-th operation only; 0 or 1 = every
	// one.
	Stride int
	// Cuts is the number of power-cut images taken per crash point
	// (each a different random choice of what unsynced data survives);
	// 0 = 1. Ignored for Kill.
	Cuts int
	// Second, when > 0, makes each crash point also reopen the store,
	// run Second more steps and crash again, at every operation of that
	// second run (Open's own operations included), with a power cut in
	// Mode (or a kill, SecondKill). SecondStride applies the second run
	// to every SecondStride-th first crash point only; 0 or 1 = all of
	// them. With Cuts > 1 only the first cut of each point gets one.
	Second       int
	SecondStride int
	// SecondKill makes each second crash a process kill instead of a
	// power cut.
	SecondKill bool

	// Preallocate is the store's Options.Preallocate: 0 = SegmentSize,
	// each segment zero-filled in one chunk; negative = off, plain
	// appends (the engine's default under "none"); a chunk smaller than
	// SegmentSize ends inside a segment.
	Preallocate int64
	// NoHints is the store's Options.NoHints: no hint files, every
	// reopen scans every segment.
	NoHints bool
	// ReopenSegmentSize, when not 0, is the SegmentSize of the second
	// run (the reopen after the first crash, and its crashes), and
	// ReopenToggleHints turns NoHints the other way for it: a store
	// reopened with other options than it was written with.
	ReopenSegmentSize int64
	ReopenToggleHints bool
	// BigEvery, when > 0, makes every BigEvery-th write a Put of a value
	// larger than a segment, which gets a segment of its own.
	BigEvery int
	// EmptyEvery, when > 0, makes every EmptyEvery-th write a Put of an
	// empty value. An empty value does not say which Put wrote it: the
	// checker takes the latest that matches, and checks no seq and
	// injects no damage for it.
	EmptyEvery int
	// TickEvery, when > 0, makes the timer of periodic:D fire after
	// every TickEvery-th step of a run, and never otherwise
	// (engine.Options.Ticks), so its syncs fall inside the
	// enumerated window; D may then be short. 0 = the real timer, which
	// must not fire during a run (D of 10s or more).
	TickEvery int
	// Followers, when > 0, makes the writes under "group" go in groups of
	// Followers+1 concurrent writers, each queued behind the one before,
	// committed together by one tick of the flusher (engine.Options.Ticks):
	// group commit with queued followers, in the same order every rerun.
	Followers int
	// TornKill makes a kill also tear the write it interrupts: the first
	// half of it reaches the page cache (engine.MemFS.TornStop). Applies
	// to first crashes with Kill, and to second crashes with SecondKill.
	TornKill bool
	// BatchEvery, when > 0, makes every BatchEvery-th write step an
	// atomic batch (engine.Batch, DB.Apply) of BatchSize Puts and
	// Deletes of distinct keys, and every crash is also checked for a
	// batch that came back in part (PointsReport.TornBatches).
	BatchEvery int
	// BatchSize is the number of writes in each batch; 0 = 3.
	BatchSize int
}

// PointsReport is the outcome of an enumeration.
type PointsReport struct {
	Sync string `json:"sync"`
	Kill bool   `json:"kill"`
	Mode string `json:"power_mode"`
	// Ops is K, the number of filesystem operations of the workload;
	// Points the number of crashes checked (first and second crashes,
	// times Cuts).
	Ops    int `json:"ops"`
	Points int `json:"points"`
	// The sums over every crash, as in Trial.
	Writes       int64 `json:"writes"`
	DurableAcked int64 `json:"durable_acked"`
	Recovered    int64 `json:"recovered"`
	Lost         int64 `json:"lost"`
	LostAcked    int64 `json:"lost_acked"`
	Resurrected  int64 `json:"resurrected"`
	Corrupt      int64 `json:"corrupt"`
	Unwritten    int64 `json:"unwritten"`
	Failed       int64 `json:"failed_reopens"`
	// Intact counts the crashes after which every acknowledged write
	// came back (LostAcked 0 and the reopen succeeded): the crash points
	// the policy survived with nothing lost, durable or not.
	// ByLostAcked[n] counts the crashes that lost n acknowledged writes
	// (the reopens that failed are in none of them); its last index is
	// the most one crash lost.
	Intact      int64   `json:"intact"`
	ByLostAcked []int64 `json:"by_lost_acked"`
	// Refused counts the failed reopens (also in Failed) that refused the
	// crashed store as corrupt (engine.ErrCorrupt) rather than losing or
	// returning anything wrong; Refusals describes the first of them.
	Refused  int64    `json:"refused_reopens"`
	Refusals []string `json:"refusals,omitempty"`
	// Inconsistent counts the reopens whose Stats broke DurableSeq ==
	// LastSeq, or whose LastSeq was below a recovered write's seq.
	Inconsistent int64 `json:"inconsistent"`
	// Damaged counts the crash images checked again with a promised
	// write's record damaged (damageCheck); Undetected those whose reopen
	// did not refuse the damage.
	Damaged    int64 `json:"damaged"`
	Undetected int64 `json:"undetected_damage"`
	// TornBatches counts the atomic batches (BatchEvery) a reopen found
	// in part: some of their writes there and some not. Must be 0.
	TornBatches int64 `json:"torn_batches"`
	// Findings describes the first other crashes that broke the
	// invariant.
	Findings []string `json:"findings,omitempty"`
}

// OK reports whether every crash kept the invariant.
func (r PointsReport) OK() bool {
	return r.Lost == 0 && r.Corrupt == 0 && r.Unwritten == 0 && r.Failed == 0 && r.Inconsistent == 0 && r.Undetected == 0 && r.TornBatches == 0
}

const maxFindings = 8

func (c PointsConfig) defaults() PointsConfig {
	if c.Steps <= 0 {
		c.Steps = 120
	}
	if c.Keys <= 0 {
		c.Keys = 12
	}
	if c.ValueSize <= 0 {
		c.ValueSize = 100
	}
	if c.SegmentSize == 0 {
		c.SegmentSize = engine.MinSegmentSize
	}
	if c.CompactEvery == 0 {
		c.CompactEvery = 50
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 3
	}
	c.BatchSize = min(c.BatchSize, c.Keys)
	c.Stride = max(c.Stride, 1)
	c.SecondStride = max(c.SecondStride, 1)
	c.Cuts = max(c.Cuts, 1)
	if c.Kill {
		c.Cuts = 1
	}
	return c
}

// Describe says in words what workload an enumeration with c runs, its
// defaults filled in (the crash table prints it).
func (c PointsConfig) Describe() string {
	c = c.defaults()
	s := fmt.Sprintf("%d writes to %d keys, one in five a Delete, values of %d-%d B, %d KiB segments",
		c.Steps, c.Keys, c.ValueSize/2, c.ValueSize/2+c.ValueSize, c.SegmentSize>>10)
	if c.CompactEvery > 0 {
		s += fmt.Sprintf(", a compaction after every %d writes", c.CompactEvery)
	}
	if c.BatchEvery > 0 {
		s += fmt.Sprintf(", every %d-th write an atomic batch of %d", c.BatchEvery, c.BatchSize)
	}
	if c.TickEvery > 0 && c.Sync.Mode == engine.SyncPeriodic {
		s += fmt.Sprintf(", the periodic timer firing after every %d writes", c.TickEvery)
	}
	return s + ", then Close"
}

// RunPoints crashes the workload cfg describes after each of its
// filesystem operations in turn and checks the invariant after each crash.
// The error is for an enumeration that could not run (a bad policy, a
// workload that fails without a crash, a cancelled context); what the
// crashes found is in the report (PointsReport.OK).
func RunPoints(ctx context.Context, cfg PointsConfig) (PointsReport, error) {
	cfg = cfg.defaults()
	rep := PointsReport{Sync: cfg.Sync.String(), Kill: cfg.Kill, Mode: cfg.Mode.String()}
	if _, err := engine.ParseSync(cfg.Sync.String()); err != nil {
		return rep, err
	}
	if cfg.Sync.Mode == engine.SyncPeriodic && cfg.Sync.Interval < 10*1e9 && cfg.TickEvery <= 0 {
		return rep, fmt.Errorf("crashtest: periodic:%v: crash points need an interval the run never reaches (10s or more), so the operations repeat exactly, or TickEvery to fire the timer between known steps", cfg.Sync.Interval)
	}
	if cfg.Mode < engine.PowerPrefix || cfg.Mode > engine.PowerDirent {
		return rep, fmt.Errorf("crashtest: power mode %d: allowed: %s", cfg.Mode, engine.PowerModes)
	}
	first := script(cfg, cfg.Seed, cfg.Steps)

	// The run without a crash counts the operations; it must succeed.
	mem := engine.NewMemFS()
	h := newHistory(cfg)
	if err := h.run(mem, first); err != nil {
		return rep, fmt.Errorf("crashtest: the workload fails without a crash: %w", err)
	}
	rep.Ops, _ = mem.Ops()

	for k := 1; k <= rep.Ops; k += cfg.Stride {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		for cut := range cfg.Cuts {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(k)<<8|uint64(cut)))
			mem := engine.NewMemFS()
			if cfg.Kill && cfg.TornKill {
				mem.TornStop = half
			}
			mem.StopAfter(k)
			h := newHistory(cfg)
			h.run(mem, first)
			var after *engine.MemFS
			if cfg.Kill {
				after = mem.Kill()
			} else {
				after = mem.PowerCut(cfg.Mode, rng)
			}
			_, op := mem.Ops()
			where := fmt.Sprintf("crash after op %d/%d (%s)", k, rep.Ops, op)
			t := h.verify(after.Kill(), cfg.Kill) // a copy: verify's reopen changes it
			rep.add(t, where, h)
			if t.Error == "" {
				rep.damage(h, after.Kill(), k, where)
			}
			if cfg.Second == 0 || t.Error != "" || cut > 0 || (k-1)/cfg.Stride%cfg.SecondStride != 0 {
				continue
			}
			// Crash, reopen, keep writing, crash again.
			h.recovered()
			more := script(cfg, cfg.Seed^0x5ec0d, cfg.Second)
			count := h.clone()
			probe := after.Kill() // a copy of the rebooted disk, to count on
			if err := count.run(probe, more); err != nil {
				rep.add(Trial{Error: err.Error()}, where+", then reopen and a run without a crash", &history{})
				continue
			}
			ops2, _ := probe.Ops()
			for k2 := 1; k2 <= ops2; k2++ {
				if err := ctx.Err(); err != nil {
					return rep, err
				}
				h2 := h.clone()
				mem2 := after.Kill()
				if cfg.SecondKill && cfg.TornKill {
					mem2.TornStop = half
				}
				mem2.StopAfter(k2)
				h2.run(mem2, more)
				_, op2 := mem2.Ops()
				cut2 := rand.New(rand.NewPCG(cfg.Seed, uint64(k)<<24|uint64(k2)<<8|uint64(cut)))
				crash2, img2 := "power cut", (*engine.MemFS)(nil)
				if cfg.SecondKill {
					crash2, img2 = "kill", mem2.Kill()
				} else {
					img2 = mem2.PowerCut(cfg.Mode, cut2)
				}
				t2 := h2.verify(img2, cfg.SecondKill)
				rep.add(t2, fmt.Sprintf("%s, reopen, then %s after op %d/%d (%s)", where, crash2, k2, ops2, op2), h2)
			}
		}
	}
	return rep, nil
}

// add counts one crash, checked by h.verify (h.refused: its reopen failed
// with ErrCorrupt; h.inconsistent: what the reopen's Stats got wrong).
func (r *PointsReport) add(t Trial, where string, h *history) {
	refused := h.refused
	r.Points++
	if len(h.inconsistent) > 0 {
		r.Inconsistent++
		if len(r.Findings) < maxFindings {
			r.Findings = append(r.Findings, where+": "+strings.Join(h.inconsistent, "; "))
		}
	}
	r.Writes += t.Writes
	r.DurableAcked += t.DurableAcked
	r.Recovered += t.Recovered
	r.Lost += t.Lost
	r.LostAcked += t.LostAcked
	r.Resurrected += t.Resurrected
	r.Corrupt += t.Corrupt
	r.Unwritten += t.Unwritten
	r.TornBatches += h.torn
	if t.Error == "" {
		if t.LostAcked == 0 {
			r.Intact++
		}
		for int64(len(r.ByLostAcked)) <= t.LostAcked {
			r.ByLostAcked = append(r.ByLostAcked, 0)
		}
		r.ByLostAcked[t.LostAcked]++
	}
	bad := t.Lost != 0 || t.Corrupt != 0 || t.Unwritten != 0 || t.Error != "" || h.torn != 0
	if t.Error != "" {
		r.Failed++
	}
	if refused && t.Lost == 0 && t.Corrupt == 0 && t.Unwritten == 0 {
		r.Refused++
		if len(r.Refusals) < maxFindings {
			r.Refusals = append(r.Refusals, where+": "+t.Error)
		}
		return
	}
	if bad && len(r.Findings) < maxFindings {
		r.Findings = append(r.Findings, fmt.Sprintf("%s: lost %d (resurrected %d), corrupt %d, unwritten %d, torn batches %d%s %s",
			where, t.Lost, t.Resurrected, t.Corrupt, t.Unwritten, h.torn, errSuffix(t.Error), t.Detail))
	}
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ", reopen failed: " + e
}

// step is one step of a crash-point workload.
type step struct {
	op  byte // 'p' Put, 'd' Delete, 'c' Compact, 's' CompactSealed, 'b' an atomic batch
	key int
	// batch holds the Puts and Deletes of a batch step, of distinct keys.
	batch []step
}

// script returns a deterministic workload of n Puts and Deletes (about one
// in five a Delete) with a Compact after every cfg.CompactEvery of them
// and a CompactSealed (the background compaction, run in line so that
// its operations repeat exactly) half-way between two Compacts; with
// cfg.BatchEvery, every BatchEvery-th of them is a batch instead.
func script(cfg PointsConfig, seed uint64, n int) []step {
	rng := rand.New(rand.NewPCG(seed, 0x7069))
	write := func() step {
		op := byte('p')
		if rng.IntN(5) == 0 {
			op = 'd'
		}
		return step{op: op, key: rng.IntN(cfg.Keys)}
	}
	var s []step
	for i := range n {
		if cfg.BatchEvery > 0 && (i+1)%cfg.BatchEvery == 0 {
			b := step{op: 'b'}
			for _, k := range rng.Perm(cfg.Keys)[:cfg.BatchSize] {
				w := write()
				w.key = k
				b.batch = append(b.batch, w)
			}
			s = append(s, b)
		} else {
			s = append(s, write())
		}
		if cfg.CompactEvery > 0 && (i+1)%cfg.CompactEvery == 0 {
			s = append(s, step{op: 'c'})
		}
		if cfg.CompactEvery > 1 && (i+1)%cfg.CompactEvery == cfg.CompactEvery/2 {
			s = append(s, step{op: 's'})
		}
	}
	return s
}

// event is one write issued to a key: a Put of value, or a Delete (value
// nil). events[0] of every key is the state before the workload: absent.
type event struct {
	value []byte
	id    int    // unique over the whole workload; 0 for the initial state
	seq   uint64 // the store's seq for it: LastSeq before it was issued, plus one
	size  int    // the bytes of its record: header, key and value
	at    time.Time
	tick  int  // TickEvery: the timer's syncs completed in its run before it was acknowledged
	acked bool // the Put or Delete returned nil (at: when)
	// durable: the policy promised this write survives a power cut (see
	// the package comment and promise). The initial state counts as
	// durable.
	durable bool
	// killSafe: the policy promised it survives a process kill (a power
	// cut may still take it).
	killSafe bool
}

// ref names one event: events[key][i].
type ref struct{ key, i int }

// history is what a workload issued, per key, and what the store
// acknowledged.
type history struct {
	cfg    PointsConfig
	events [][]event // per key
	nextID int
	// state is, after verify, the index of the event each key was
	// recovered in; pending, after recovered, the same indexes, to be
	// marked durable once the next Open returns.
	state, pending []int
	// refused: verify's reopen failed with engine.ErrCorrupt.
	refused bool
	// inconsistent: what verify's reopen reported that cannot be (Stats
	// against the recovered writes).
	inconsistent []string
	// reopened: the store was reopened after the first crash (recovered),
	// so its options are the second run's.
	reopened bool
	// batches are the writes of each atomic batch issued since the last
	// recovery; torn, after verify, counts those recovered in part.
	batches [][]ref
	torn    int64
}

func newHistory(cfg PointsConfig) *history {
	h := &history{cfg: cfg, events: make([][]event, cfg.Keys), nextID: 1}
	for k := range h.events {
		h.events[k] = []event{{durable: true, killSafe: true}}
	}
	return h
}

// half is MemFS.TornStop for TornKill: half of the interrupted write lands.
func half(n int) int { return n / 2 }

func (h *history) clone() *history {
	c := &history{cfg: h.cfg, events: make([][]event, len(h.events)), nextID: h.nextID, pending: h.pending, reopened: h.reopened, batches: slices.Clone(h.batches)}
	for k, ev := range h.events {
		c.events[k] = append([]event(nil), ev...)
	}
	return c
}

func pointKey(k int) []byte { return fmt.Appendf(nil, "key%02d", k) }

// pointValue is the value of write id to key k: "key<k>/<id>/" and filler
// of a length that varies with id (larger than a segment for every
// BigEvery-th write), or empty for every EmptyEvery-th write.
func (h *history) pointValue(k, id int) []byte {
	if h.cfg.EmptyEvery > 0 && id%h.cfg.EmptyEvery == 0 {
		return []byte{}
	}
	r := rand.New(rand.NewPCG(h.cfg.Seed, uint64(id)))
	n := h.cfg.ValueSize/2 + r.IntN(h.cfg.ValueSize+1)
	if h.cfg.BigEvery > 0 && id%h.cfg.BigEvery == 0 {
		n = int(h.cfg.SegmentSize) + 1 + r.IntN(h.cfg.ValueSize+1)
	}
	v := fmt.Appendf(nil, "key%02d/%d/", k, id)
	for len(v) < n {
		v = append(v, byte('a'+r.IntN(26)))
	}
	return v
}

// options are the store's options on fs: cfg's, changed as
// ReopenSegmentSize and ReopenToggleHints say once the store was reopened
// after the first crash.
func (h *history) options(fs engine.FS) engine.Options {
	c := h.cfg
	o := engine.Options{Sync: c.Sync, SegmentSize: c.SegmentSize, Preallocate: c.Preallocate, NoHints: c.NoHints, WriteBuffer: c.WriteBuffer, FS: fs}
	if (c.TickEvery > 0 && c.Sync.Mode == engine.SyncPeriodic) || (c.Followers > 0 && c.Sync.Mode == engine.SyncGroup) {
		o.Ticks = make(chan chan struct{}) // no tick comes but run's
	}
	if o.Preallocate == 0 {
		o.Preallocate = c.SegmentSize
	}
	if h.reopened {
		if c.ReopenSegmentSize != 0 {
			o.SegmentSize = c.ReopenSegmentSize
		}
		o.NoHints = o.NoHints != c.ReopenToggleHints
	}
	return o
}

// run opens the store on fs, runs the steps and closes it, recording every
// write in h. It stops at the first error (after a crash point every
// operation fails) and returns it. Once the run is over it marks what the
// policy promised for each acknowledged write (promise).
func (h *history) run(fs engine.FS, steps []step) error {
	ticks := make(chan chan struct{})
	opts := h.options(fs)
	if opts.Ticks != nil {
		opts.Ticks = ticks
	}
	db, err := engine.Open("/kv", opts)
	if err != nil {
		return err
	}
	// synced counts the timer's syncs (TickEvery) that completed before
	// the machine stopped: the store closes a tick's channel once it
	// handled it, and a List fails once the machine stopped.
	synced := 0
	tick := func() {
		handled := make(chan struct{})
		ticks <- handled
		<-handled
		if _, err := fs.List("/kv"); err == nil {
			synced++
		}
	}
	for k, r := range h.pending {
		h.events[k][r].durable, h.events[k][r].killSafe = true, true
	}
	h.pending = nil
	var werr error
	var acked []ref // this run's acknowledged writes, in the order issued
	if opts.Ticks != nil && h.cfg.Sync.Mode == engine.SyncGroup {
		werr = h.runGroups(db, steps, tick, &acked)
	} else {
		for i, s := range steps {
			if opts.Ticks != nil && i > 0 && i%h.cfg.TickEvery == 0 {
				tick()
			}
			if s.op == 'c' || s.op == 's' {
				if werr = compact(db, s.op); werr != nil {
					break
				}
				continue
			}
			rs, write := h.issue(db, s)
			if werr = write(); werr != nil {
				break
			}
			for _, r := range rs {
				h.ack(r, synced)
			}
			acked = append(acked, rs...)
		}
	}
	cerr := db.Close()
	h.promise(acked, time.Now(), synced, werr == nil && cerr == nil)
	return errors.Join(werr, cerr)
}

// compact runs the compaction of step op: Compact ('c') or
// CompactSealed ('s').
func compact(db *engine.DB, op byte) error {
	if op == 's' {
		return db.CompactSealed()
	}
	return db.Compact()
}

// issue adds the writes of step s (a Put, a Delete or a batch of them) to
// h's events and returns where they are and the call that makes them.
// Their seqs follow the store's LastSeq now: they must be issued before
// any later write.
func (h *history) issue(db *engine.DB, s step) ([]ref, func() error) {
	seq := db.Stats().LastSeq
	add := func(s step) (ref, []byte, []byte) {
		seq++
		e := event{id: h.nextID, seq: seq}
		h.nextID++
		key := pointKey(s.key)
		if s.op == 'p' {
			e.value = h.pointValue(s.key, e.id)
		}
		e.size = recordHeader + len(key) + len(e.value)
		r := ref{s.key, len(h.events[s.key])}
		h.events[s.key] = append(h.events[s.key], e)
		return r, key, e.value
	}
	if s.op == 'b' {
		var b engine.Batch
		var rs []ref
		for _, w := range s.batch {
			r, key, value := add(w)
			if w.op == 'd' {
				b.Delete(key)
			} else {
				b.Put(key, value)
			}
			rs = append(rs, r)
		}
		h.batches = append(h.batches, rs)
		return rs, func() error { return db.Apply(&b) }
	}
	r, key, value := add(s)
	if s.op == 'd' {
		return []ref{r}, func() error { return db.Delete(key) }
	}
	return []ref{r}, func() error { return db.Put(key, value) }
}

// ack records that the write at r returned nil, after synced of the
// background syncer's ticks had completed.
func (h *history) ack(r ref, synced int) {
	e := &h.events[r.key][r.i]
	e.acked, e.at, e.tick = true, time.Now(), synced
}

// runGroups runs steps under "group" with Followers: the writes go in
// groups of up to Followers+1, each issued by a goroutine of its own once
// the one before it has queued its record (LastSeq moved) or returned,
// then committed together by one tick of the flusher (Options.Ticks), so
// the group that one write(2) and one fdatasync commit is the same in
// every rerun. It records the acknowledged writes in acked, in the order
// issued, and returns the first error.
func (h *history) runGroups(db *engine.DB, steps []step, tick func(), acked *[]ref) error {
	type queued struct {
		rs   []ref
		done chan error
	}
	for i := 0; i < len(steps); {
		if steps[i].op == 'c' || steps[i].op == 's' {
			if err := compact(db, steps[i].op); err != nil {
				return err
			}
			i++
			continue
		}
		var group []queued
		for ; i < len(steps) && steps[i].op != 'c' && steps[i].op != 's' && len(group) <= h.cfg.Followers; i++ {
			rs, write := h.issue(db, steps[i])
			last := rs[len(rs)-1]
			seq := h.events[last.key][last.i].seq
			done := make(chan error, 1)
			go func() { done <- write() }()
			for db.Stats().LastSeq < seq {
				select {
				case err := <-done:
					done <- err // returned without queuing: failed
					seq = 0
				default:
					runtime.Gosched() // let the writer queue its record
				}
			}
			group = append(group, queued{rs, done})
		}
		tick()
		var first error
		for _, q := range group {
			if err := <-q.done; err != nil {
				first = cmp.Or(first, err)
				continue
			}
			for _, r := range q.rs {
				h.ack(r, 0)
			}
			*acked = append(*acked, q.rs...)
		}
		if first != nil {
			return first
		}
	}
	return nil
}

// recordHeader is the size of a record's header in the store's format
// (engine/doc.go): a record of key k and value v takes
// recordHeader + len(k) + len(v) bytes.
const recordHeader = 19

// fsyncBound is the longest fdatasync (with the timer's delay) the
// checker allows periodic:D: a write acknowledged more than D +
// fsyncBound before a power cut must survive it.
const fsyncBound = time.Second

// bufferBound is how many bytes of acknowledged records a process kill may
// take under the policy: the write buffer's size, or 0 under "always" and
// "group" (no buffer) and with the buffer off.
func (c PointsConfig) bufferBound() int { return bufferBound(c.Sync, c.WriteBuffer) }

// bufferBound is the write buffer's size under pol with Options.WriteBuffer
// set to writeBuffer: 0 under "always" and "group" (no buffer) and with
// the buffer off (negative), DefaultWriteBuffer for 0.
func bufferBound(pol engine.SyncPolicy, writeBuffer int) int {
	switch {
	case pol.Mode == engine.SyncAlways || pol.Mode == engine.SyncGroup || writeBuffer < 0:
		return 0
	case writeBuffer == 0:
		return engine.DefaultWriteBuffer
	}
	return writeBuffer
}

// promise marks what the policy promised for one run's acknowledged
// writes, given in the order they were issued, at the moment end the run
// stopped, after synced of the timer's syncs (TickEvery) completed (see
// the package comment): durable, for a power cut, and killSafe, for a
// process kill. closed says Close returned nil, which promises
// everything.
//
// With TickEvery the run's time is the timer's: steps take none, and
// each tick moves it by D. A write acknowledged between two ticks must
// then be durable once the next tick's sync completed (D + T_fsync after
// it, at the latest).
func (h *history) promise(acked []ref, end time.Time, synced int, closed bool) {
	pol, bound := h.cfg.Sync, h.cfg.bufferBound()
	behind := 0 // the record bytes acknowledged from the write on
	for i := len(acked) - 1; i >= 0; i-- {
		e := &h.events[acked[i].key][acked[i].i]
		later := len(acked) - 1 - i // acknowledged writes after it
		behind += e.size
		power := closed
		switch pol.Mode {
		case engine.SyncAlways, engine.SyncGroup:
			power = true
		case engine.SyncBatch:
			power = power || later >= pol.N-1
		case engine.SyncPeriodic:
			if h.cfg.TickEvery > 0 {
				power = power || synced > e.tick
			} else {
				power = power || end.Sub(e.at) > pol.Interval+fsyncBound
			}
		}
		e.durable = e.durable || power
		e.killSafe = e.killSafe || power || behind >= bound
	}
}

// recovered makes, after verify, the state each key was recovered in the
// last event of its history: the events after it were lost. The next run's
// Open makes those states durable (it syncs what it recovered before it
// returns), so run marks them durable once Open returned.
func (h *history) recovered() {
	for k, ev := range h.events {
		h.events[k] = ev[:h.state[k]+1]
	}
	h.pending, h.state = h.state, nil
	h.reopened = true
	h.batches = nil // checked by verify; what it recovered is durable now
}

// verify reopens the crashed store on fs and checks every key, returning
// the counts. It records each key's recovered event in h.state, and in
// h.inconsistent what the reopened store's Stats got wrong.
func (h *history) verify(fs engine.FS, kill bool) Trial {
	var t Trial
	h.inconsistent = nil
	db, err := engine.Open("/kv", h.options(fs))
	if err != nil {
		t.Error = err.Error()
		h.refused = errors.Is(err, engine.ErrCorrupt)
		return t
	}
	defer db.Close()
	st := db.Stats()
	if st.DurableSeq != st.LastSeq {
		h.inconsistent = append(h.inconsistent, fmt.Sprintf("after Open DurableSeq is %d, LastSeq %d: Open must make everything it recovered durable", st.DurableSeq, st.LastSeq))
	}
	h.state = make([]int, len(h.events))
	found := make([]int, len(h.events)) // checkKey's r, -1 for none
	present := int64(0)
	var detail []string
	for k, ev := range h.events {
		v, err := db.Get(pointKey(k))
		if err == nil {
			present++
		}
		r, bad := h.checkKey(&t, k, ev, v, err, kill)
		h.state[k], found[k] = max(r, 0), r
		// Only a Put's value names the write recovered: an absent key
		// matches any Delete, an empty value any empty Put.
		if r > 0 && len(ev[r].value) > 0 && ev[r].seq > st.LastSeq {
			h.inconsistent = append(h.inconsistent, fmt.Sprintf("key%02d holds write %d, seq %d, above LastSeq %d", k, r, ev[r].seq, st.LastSeq))
		}
		if bad != "" {
			detail = append(detail, bad)
		}
	}
	h.torn = 0
	for i, b := range h.batches {
		if what := h.tornBatch(b, found); what != "" {
			h.torn++
			detail = append(detail, fmt.Sprintf("batch %d: %s", i+1, what))
		}
	}
	if extra := db.Stats().Keys - present; extra > 0 {
		t.Unwritten += extra
		detail = append(detail, fmt.Sprintf("%d keys that were never written", extra))
	}
	if len(detail) > 0 {
		t.Detail = "[" + strings.Join(detail, "; ") + "]"
	}
	return t
}

// tornBatch reports, for the writes b of one atomic batch, whether the
// reopen found some of them and not others, given the event found[k] each
// key was recovered in (-1: none matched). A write is surely there when
// its key holds it or a later write's value (a Put's non-empty value
// names the write, and a later write on disk means the batch before it
// was recovered too); surely not there when its key holds an earlier
// state. A key found absent or empty at or after the write is left out:
// an absence matches any Delete and an empty value any empty Put.
func (h *history) tornBatch(b []ref, found []int) string {
	var in, out []string
	for _, r := range b {
		f := found[r.key]
		switch {
		case f < 0:
			// Corrupt or unwritten: counted by checkKey.
		case f < r.i:
			out = append(out, fmt.Sprintf("key%02d", r.key))
		case len(h.events[r.key][f].value) > 0:
			in = append(in, fmt.Sprintf("key%02d", r.key))
		}
	}
	if len(in) > 0 && len(out) > 0 {
		return fmt.Sprintf("recovered in part: the write of %s there, of %s not", strings.Join(in, ","), strings.Join(out, ","))
	}
	return ""
}

// checkKey checks one key's recovered state (v, err from Get) against its
// events and adds to t's counts. It returns the index of the event the
// state matches (-1 for none) and, when the invariant is broken, what was
// wrong.
//
// The invariant for one key: let f be its last durable event. The
// recovered state must be that of an event at index f or later (a write
// issued after f, acknowledged or not, may have reached the disk);
// anything earlier is a lost durable write (a resurrection if event f is a
// Delete), anything that matches no event was never written or is corrupt.
func (h *history) checkKey(t *Trial, k int, ev []event, v []byte, err error, kill bool) (int, string) {
	promised := func(e event) bool { return e.durable || (kill && e.killSafe) }
	f := 0
	for i, e := range ev {
		if promised(e) {
			f = i
		}
		if e.acked {
			t.Writes++
			if promised(e) {
				t.DurableAcked++
			}
		}
	}
	r := -1
	switch {
	case errors.Is(err, engine.ErrNotFound):
		// The latest Delete (or the initial absence) at or after f if
		// there is one, else the latest before f.
		for i := len(ev) - 1; i >= 0 && (r < 0 || r < f); i-- {
			if ev[i].value == nil && (r < 0 || i >= f) {
				r = i
			}
		}
	case err != nil:
		t.Corrupt++
		h.countLost(t, ev, f, -1, promised)
		return -1, fmt.Sprintf("key%02d: Get: %v", k, err)
	default:
		for i, e := range ev {
			if e.value != nil && string(e.value) == string(v) {
				r = i
			}
		}
		if r < 0 {
			if pointValueOf(v, k) {
				t.Unwritten++
			} else {
				t.Corrupt++
			}
			h.countLost(t, ev, f, -1, promised)
			return -1, fmt.Sprintf("key%02d: value %.24q... was never written to it", k, v)
		}
	}
	h.countLost(t, ev, f, r, promised)
	if r < f {
		what := "a lost durable write"
		if ev[f].value == nil {
			t.Resurrected++
			what = "resurrected after a durable Delete"
		}
		return r, fmt.Sprintf("key%02d: state of write %d of %d, %s (last durable write: %d)", k, r, len(ev)-1, what, f)
	}
	return r, ""
}

// countLost adds to t the acknowledged events of one key that the
// recovered state (event r, -1 for none) does not include.
func (h *history) countLost(t *Trial, ev []event, f, r int, promised func(event) bool) {
	for i, e := range ev {
		if !e.acked {
			continue
		}
		if r >= i {
			t.Recovered++
			continue
		}
		t.LostAcked++
		if i <= f && promised(e) {
			t.Lost++
		}
	}
}

// pointValueOf reports whether v has the form of a value this workload
// writes to key k.
func pointValueOf(v []byte, k int) bool {
	s, ok := strings.CutPrefix(string(v), fmt.Sprintf("key%02d/", k))
	if !ok {
		return false
	}
	id, _, ok := strings.Cut(s, "/")
	_, err := strconv.Atoi(id)
	return ok && err == nil
}

// damage checks one crash image, img, again with damage injected into
// durable data (damageCheck) and counts the outcome; k varies the key
// damaged from one crash point to the next.
func (r *PointsReport) damage(h *history, img *engine.MemFS, k int, where string) {
	checked, finding := h.damageCheck(img, k, h.cfg.Kill)
	if !checked {
		return
	}
	r.Damaged++
	if finding != "" {
		r.Undetected++
		if len(r.Findings) < maxFindings {
			r.Findings = append(r.Findings, where+", with damage injected: "+finding)
		}
	}
}

// damageCheck flips one byte in the value of a write promised to survive
// the crash (kill: a process kill, else a power cut) that verify found
// recovered (h.state), the first such from key k on that recovery must
// vouch for, in every segment of img that holds it, and
// reopens img: the reopen must refuse the damage, with ErrCorrupt from
// Open or from the Get of that key. It applies only where recovery can
// tell the damage from a torn tail: in a segment other than the newest,
// or in the newest before a sync mark that claims the damaged record was
// durable (vouched). Damage to the newest segment's last durable records,
// which no mark claims, looks like a torn tail and is truncated by
// design (engine/doc.go), so it is not injected there. It reports whether
// it damaged anything, and what was wrong if the reopen did not refuse.
func (h *history) damageCheck(img *engine.MemFS, k int, kill bool) (bool, string) {
	names, err := img.List("/kv")
	if err != nil {
		return false, ""
	}
	var segs []string
	data := map[string][]byte{}
	for _, n := range names {
		if !strings.HasSuffix(n, ".seg") {
			continue
		}
		f, err := img.OpenFile("/kv/"+n, os.O_RDONLY, 0)
		if err != nil {
			return false, ""
		}
		size, _ := f.Size()
		b := make([]byte, size)
		f.ReadAt(b, 0)
		f.Close()
		segs, data[n] = append(segs, n), b
	}
	slices.Sort(segs)
	// The first key from k on whose recovered write was promised and
	// lies where recovery must vouch for it.
	type place struct {
		seg string
		at  int
	}
	key := -1
	var where []place
	for i := range h.state {
		kk := (k + i) % len(h.state)
		r := h.state[kk]
		e := h.events[kk][r]
		if r == 0 || len(e.value) == 0 || !(e.durable || kill && e.killSafe) {
			continue
		}
		protected := false
		where = where[:0]
		for j, name := range segs {
			b := data[name]
			for from := 0; ; {
				at := bytes.Index(b[from:], e.value)
				if at < 0 {
					break
				}
				at += from
				from = at + len(e.value)
				protected = protected || j < len(segs)-1 || vouched(b, at)
				where = append(where, place{name, at + len(e.value)/2})
			}
		}
		if protected {
			key = kk
			break
		}
	}
	if key < 0 {
		return false, ""
	}
	var damaged []string
	for _, p := range where {
		f, err := img.OpenFile("/kv/"+p.seg, os.O_RDWR, 0)
		if err != nil {
			return false, ""
		}
		f.WriteAt([]byte{data[p.seg][p.at] ^ 0xff}, int64(p.at))
		f.Sync()
		f.Close()
		damaged = append(damaged, fmt.Sprintf("%s at offset %d", p.seg, p.at))
	}
	what := fmt.Sprintf("key%02d's write %d damaged in %s", key, h.state[key], strings.Join(damaged, ", "))
	db, err := engine.Open("/kv", h.options(img))
	if err != nil {
		if errors.Is(err, engine.ErrCorrupt) {
			return true, ""
		}
		return true, what + ": Open failed without ErrCorrupt: " + err.Error()
	}
	defer db.Close()
	v, err := db.Get(pointKey(key))
	if errors.Is(err, engine.ErrCorrupt) {
		return true, ""
	}
	return true, fmt.Sprintf("%s: Open succeeded and Get returned %.24q, %v; want ErrCorrupt", what, v, err)
}

// vouched reports whether, in the segment b (as the store's format
// lays it out, engine/doc.go), the record holding offset at is followed
// by a sync mark (kind 3) that claims it was durable: a mark at offset X
// claiming Y with start < Y <= X, where start is where the record
// begins. It walks the records from the start and stops at the first
// that does not check out (a torn tail, the zero-filled end).
func vouched(b []byte, at int) bool {
	start := -1
	for off := 0; off+recordHeader <= len(b); {
		h := b[off : off+recordHeader]
		n := recordHeader + int(binary.LittleEndian.Uint16(h[13:15])) + int(binary.LittleEndian.Uint32(h[15:19]))
		if h[12] == 0 || off+n > len(b) || crc32.Checksum(b[off+4:off+n], castagnoli) != binary.LittleEndian.Uint32(h[0:4]) {
			return false
		}
		if h[12] == 3 && n == recordHeader+8 && start >= 0 {
			if y := int(binary.LittleEndian.Uint64(b[off+recordHeader : off+n])); y > start && y <= off {
				return true
			}
		}
		if start < 0 && at >= off && at < off+n {
			start = off
		}
		off += n
	}
	return false
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
