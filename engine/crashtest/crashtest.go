// Package crashtest checks that the engine keeps what it says is durable,
// by crashing it and looking at what recovery brings back.
//
// Two kinds of crash:
//
//   - SIGKILL (Config.Power false): the test binary (or labserver)
//     re-executes itself as a child that writes records and reports each
//     acknowledged write on its stdout; the parent kills it with SIGKILL at
//     a random moment, reopens the store and checks it. The kernel's page
//     cache survives a process kill, so this finds bugs in recovery,
//     framing and compaction, but not a missing fdatasync.
//   - Power loss (Config.Power true): the same workload runs in this
//     process on an engine.MemFS; at a random moment the MemFS "loses
//     power": every synced byte survives and, in the default prefix mode,
//     so does a random in-order prefix of the unsynced bytes (torn at a
//     random byte); engine.PowerMode names the harsher modes. This is the
//     test that catches a missing fdatasync.
//
// The workload deletes as well as writes (one write in seven is a Delete),
// so every trial also checks that a deleted key does not come back.
//
// The invariant, checked after every crash:
//
//	every write acknowledged as durable is present with its value (or its
//	later durable overwrite/delete); writes not yet synced may be lost;
//	nothing is returned that was never written or is corrupt.
//
// ("Writes not yet synced may be lost" also means they may survive: a
// later write that was not yet durable may have reached the disk and
// replaced an earlier durable one. The checker accepts the state of any
// write issued at or after the key's last durable write, and nothing
// older.)
//
// It counts, over the acknowledged writes: DurableAcked (those the store
// said were durable), Recovered (those whose value, or a later state of
// the same key, came back), Lost (durable ones that did not come back:
// must be 0), Resurrected (of those, keys back after a durable Delete),
// LostAcked (acknowledged ones that did not come back, durable or not),
// Corrupt (values that came back wrong) and Unwritten (values that were
// never written). The check is per write, not a count: lost, corrupt and
// unwritten are 0. (recovered >= durable_acked follows, but a count alone
// could hold while one particular durable write is missing.)
//
// points.go crashes a deterministic workload after every filesystem
// operation instead of at random moments (RunPoints).
//
// A kill also checks the layer above the disk: LostWritten counts the
// acknowledged writes the store had handed to the OS before the kill
// (Stats().WrittenSeq), or that its write buffer could no longer hold by
// the policy's bound, that did not come back, and must be 0, because the
// page cache outlives the process. Writes still in the store's write
// buffer may be lost to a kill (they are in LostAcked only). Durable
// likewise means promised by the policy (batch:N: all but the last N-1
// acknowledged) or reported by the store (DurableSeq).
//
// MaybeRunChild must be called first thing in main() and in TestMain of any
// test binary that runs SIGKILL trials.
package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"kvlab/engine"
)

// Config describes a series of crash trials. Zero fields take the defaults
// given in their comments.
type Config struct {
	Sync   engine.SyncPolicy
	Trials int  // number of trials; 0 = 20
	Power  bool // simulated power loss on a MemFS instead of SIGKILL
	// Dir is the parent of the per-trial store directories (SIGKILL
	// only); "" = a fresh temporary directory, removed afterwards.
	Dir string
	// Exe is the binary re-executed as the child (SIGKILL only); "" =
	// os.Executable(). It must call MaybeRunChild first thing.
	Exe string
	// Seed makes the trials repeatable; 0 = seeded from the clock.
	Seed int64
	// Writers is the number of concurrent writing goroutines; 0 = 4 for
	// group, 1 otherwise. Policies other than always and group need the
	// store's DurableSeq to tell durable writes, which maps onto writes
	// only with one writer, so they always use 1.
	Writers int
	// Keys is the number of distinct keys per writer; 0 = 200, so keys
	// are overwritten during a trial.
	Keys int
	// ValueSize is the mean value size; 0 = 128. Sizes vary from half to
	// one and a half times it.
	ValueSize int
	// SegmentSize of the store; 0 = 64 KiB, small so that trials cross
	// segment rotations.
	SegmentSize int64
	// CompactEvery makes writer 0 call Compact after every so many of its
	// writes; 0 = 700, negative = never.
	CompactEvery int
	// WriteBuffer is the store's Options.WriteBuffer: 0 = the engine's
	// default, negative = no buffer (each Put is its own write(2)).
	WriteBuffer int
	// AutoCompact is the store's Options.AutoCompact: 0 = no background
	// compaction; otherwise it compacts the sealed segments while the
	// writers write, and the crash may land inside it.
	AutoCompact float64
	// MaxRun bounds the random time the workload runs before the crash;
	// 0 = 300ms (SIGKILL) or 50ms (power loss).
	MaxRun time.Duration
	// NoTear keeps, on power loss, exactly the synced bytes; by default
	// each file also keeps a random part of its unsynced data, as
	// PowerMode says.
	NoTear bool
	// PowerMode is what a power cut keeps of the unsynced data and
	// directory changes (engine.PowerMode); the zero value is
	// engine.PowerPrefix, an in-order prefix torn at a random byte.
	PowerMode engine.PowerMode
}

// Trial is the outcome of one crash and recovery.
type Trial struct {
	N            int     `json:"n"`
	Writes       int64   `json:"writes"`        // writes acknowledged before the crash
	DurableAcked int64   `json:"durable_acked"` // of those, the ones the store said were durable
	Recovered    int64   `json:"recovered"`     // acknowledged writes found after recovery (or a later write of the key)
	Lost         int64   `json:"lost"`          // durable-acknowledged writes not found: must be 0
	LostAcked    int64   `json:"lost_acked"`    // acknowledged writes not found, durable or not
	Corrupt      int64   `json:"corrupt"`       // keys whose recovered value is not a value written to them
	Unwritten    int64   `json:"unwritten"`     // keys recovered that were never written
	DurableSeq   uint64  `json:"durable_seq"`   // the last DurableSeq the store reported
	CrashAfterMs float64 `json:"crash_after_ms"`
	// Resurrected counts keys that came back after a Delete the store
	// had acknowledged as durable (also counted in Lost).
	Resurrected int64 `json:"resurrected"`
	// Detail says which keys broke the invariant and how; empty when
	// none did.
	Detail string `json:"detail,omitempty"`

	// The acknowledged writes lost (LostAcked) split by the layer they
	// were in when the crash came: LostBuffered, still in the store's
	// write buffer (seq above the last WrittenSeq the store reported);
	// LostPageCache, handed to the OS but not yet durable. A kill may
	// lose the first, never the second; a power cut may lose both.
	// (Single-writer policies only: under always and group nothing
	// acknowledged is lost.)
	LostBuffered  int64 `json:"lost_buffered"`
	LostPageCache int64 `json:"lost_page_cache"`

	// SIGKILL only: the last WrittenSeq the store reported, and the
	// acknowledged writes a kill must keep (up to it, or no longer in
	// the write buffer by the policy's bound) that did not come back
	// (must be 0).
	WrittenSeq  uint64 `json:"written_seq,omitempty"`
	LostWritten int64  `json:"lost_written"`

	// Error is set when the store failed to reopen: always a finding.
	Error string `json:"error,omitempty"`
}

// Report sums a series of trials.
type Report struct {
	Sync         string  `json:"sync"`
	Power        bool    `json:"power"`
	PowerMode    string  `json:"power_mode,omitempty"` // with Power: what the cut keeps of unsynced data
	Trials       []Trial `json:"per_trial"`
	Writes       int64   `json:"writes"`
	DurableAcked int64   `json:"durable_acked"`
	Recovered    int64   `json:"recovered"`
	Lost         int64   `json:"lost"`
	LostWritten  int64   `json:"lost_written"`
	LostAcked    int64   `json:"lost_acked"`
	Corrupt      int64   `json:"corrupt"`
	Unwritten    int64   `json:"unwritten"`
	Resurrected  int64   `json:"resurrected"` // deleted keys back after a durable Delete (also in Lost)
	// LostAcked split by layer, as in Trial.
	LostBuffered  int64 `json:"lost_buffered"`
	LostPageCache int64 `json:"lost_page_cache"`
	Failed        int64 `json:"failed_reopens"` // trials whose store did not reopen
}

// OK reports whether no trial lost a durable write (or, after a kill, a
// write handed to the OS), recovered a wrong or unwritten value, or failed
// to reopen.
func (r Report) OK() bool {
	return r.Lost == 0 && r.LostWritten == 0 && r.Corrupt == 0 && r.Unwritten == 0 && r.Failed == 0
}

func (r *Report) add(t Trial) {
	r.Trials = append(r.Trials, t)
	r.Writes += t.Writes
	r.DurableAcked += t.DurableAcked
	r.Recovered += t.Recovered
	r.Lost += t.Lost
	r.LostWritten += t.LostWritten
	r.LostAcked += t.LostAcked
	r.Corrupt += t.Corrupt
	r.Unwritten += t.Unwritten
	r.Resurrected += t.Resurrected
	r.LostBuffered += t.LostBuffered
	r.LostPageCache += t.LostPageCache
	if t.Error != "" {
		r.Failed++
	}
}

// workload is what a child (or the in-process power-loss run) does; it is
// passed to the child as JSON in the environment.
type workload struct {
	Dir          string  `json:"dir"`
	Sync         string  `json:"sync"`
	Writers      int     `json:"writers"`
	Keys         int     `json:"keys"`
	ValueSize    int     `json:"value_size"`
	SegmentSize  int64   `json:"segment_size"`
	CompactEvery int     `json:"compact_every"`
	WriteBuffer  int     `json:"write_buffer"`
	AutoCompact  float64 `json:"auto_compact"`
	Seed         uint64  `json:"seed"`
}

const (
	envChild  = "KVLAB_CRASH_CHILD"
	childLife = 60 * time.Second // a child whose parent vanished stops by itself
)

func (c Config) workload(dir string, seed uint64) workload {
	w := workload{Dir: dir, Sync: c.Sync.String(), Writers: c.Writers, Keys: c.Keys, ValueSize: c.ValueSize,
		SegmentSize: c.SegmentSize, CompactEvery: c.CompactEvery, WriteBuffer: c.WriteBuffer, AutoCompact: c.AutoCompact, Seed: seed}
	if c.Sync.Mode != engine.SyncAlways && c.Sync.Mode != engine.SyncGroup {
		w.Writers = 1
	} else if w.Writers <= 0 {
		w.Writers = 1
		if c.Sync.Mode == engine.SyncGroup {
			w.Writers = 4
		}
	}
	if w.Keys <= 0 {
		w.Keys = 200
	}
	if w.ValueSize <= 0 {
		w.ValueSize = 128
	}
	if w.SegmentSize == 0 {
		w.SegmentSize = 64 << 10
	}
	if w.CompactEvery == 0 {
		w.CompactEvery = 700
	}
	return w
}

// Run runs cfg.Trials crash trials and returns their report. progress,
// if not nil, is called after each trial. The error is for trials that
// could not run (a child that did not start, a cancelled context); what
// the trials found is in the Report (see Report.OK).
func Run(ctx context.Context, cfg Config, progress func(Trial)) (Report, error) {
	rep := Report{Sync: cfg.Sync.String(), Power: cfg.Power}
	if cfg.Power {
		rep.PowerMode = cfg.PowerMode.String()
	}
	if cfg.PowerMode < engine.PowerPrefix || cfg.PowerMode > engine.PowerDirent {
		return rep, fmt.Errorf("crashtest: power mode %d: allowed: %s", cfg.PowerMode, engine.PowerModes)
	}
	if _, err := engine.ParseSync(cfg.Sync.String()); err != nil {
		return rep, err
	}
	trials := cfg.Trials
	if trials == 0 {
		trials = 20
	}
	if trials < 0 {
		return rep, fmt.Errorf("crashtest: Trials %d: must be 0 (default 20) or more", trials)
	}
	seed := uint64(cfg.Seed)
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rng := rand.New(rand.NewPCG(seed, 0x6b766c6162))
	parent := cfg.Dir
	if !cfg.Power {
		if parent == "" {
			d, err := os.MkdirTemp("", "kvlab-crash-")
			if err != nil {
				return rep, fmt.Errorf("crashtest: %w", err)
			}
			defer os.RemoveAll(d)
			parent = d
		}
	}
	for i := range trials {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		var t Trial
		var err error
		if cfg.Power {
			t, err = powerTrial(cfg, rng)
		} else {
			t, err = killTrial(ctx, cfg, filepath.Join(parent, fmt.Sprintf("trial-%d", i)), rng)
		}
		if err != nil {
			return rep, err
		}
		t.N = i + 1
		rep.add(t)
		if progress != nil {
			progress(t)
		}
	}
	return rep, nil
}

// acks records what the workload acknowledged: for each writer the
// highest j whose Put returned nil, and the highest DurableSeq and
// WrittenSeq seen.
type acks struct {
	mu         sync.Mutex // guards acked, durableSeq and writtenSeq
	acked      []int64    // per writer; -1 = none
	durableSeq uint64
	writtenSeq uint64
}

func newAcks(writers int) *acks {
	a := &acks{acked: make([]int64, writers)}
	for i := range a.acked {
		a.acked[i] = -1
	}
	return a
}

func (a *acks) ack(w int, j int64, durable, written uint64) {
	a.mu.Lock()
	a.acked[w] = max(a.acked[w], j)
	a.durableSeq = max(a.durableSeq, durable)
	a.writtenSeq = max(a.writtenSeq, written)
	a.mu.Unlock()
}

// killTrial runs one SIGKILL trial in dir: it starts the child, waits
// until it is writing, kills it after a random time, and checks what a
// reopen recovers against the writes the child acknowledged.
func killTrial(ctx context.Context, cfg Config, dir string, rng *rand.Rand) (Trial, error) {
	exe := cfg.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return Trial{}, fmt.Errorf("crashtest: %w", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return Trial{}, fmt.Errorf("crashtest: %w", err)
	}
	defer os.RemoveAll(dir)
	w := cfg.workload(dir, rng.Uint64())
	c, err := startChild(exe, w)
	if err != nil {
		return Trial{}, err
	}
	maxRun := cfg.MaxRun
	if maxRun <= 0 {
		maxRun = 300 * time.Millisecond
	}
	after := time.Duration(rng.Int64N(int64(maxRun)))
	if err := c.waitReady(ctx, exe); err != nil {
		return Trial{}, err
	}
	select {
	case <-time.After(after):
	case <-ctx.Done():
	}
	if err := c.kill(); err != nil {
		return Trial{}, fmt.Errorf("crashtest: %w", err)
	}
	if ctx.Err() != nil {
		return Trial{}, ctx.Err()
	}
	t := verify(w, c.acks, engine.OSFS{}, true)
	t.CrashAfterMs = float64(after) / 1e6
	return t, nil
}

// child is a running SIGKILL trial child and the reader of its stdout.
type child struct {
	cmd      *exec.Cmd
	acks     *acks
	ready    chan struct{} // closed when the child says "ready"
	readDone chan error    // the reader's outcome, once stdout closed
}

// startChild starts exe as the child running w, and a goroutine that
// records every write the child acknowledges on its stdout.
func startChild(exe string, w workload) (*child, error) {
	spec, _ := json.Marshal(w)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envChild+"="+string(spec))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("crashtest: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("crashtest: start child %s: %w", exe, err)
	}
	c := &child{cmd: cmd, acks: newAcks(w.Writers), ready: make(chan struct{}), readDone: make(chan error, 1)}
	go c.readAcks(out, w.Writers)
	return c, nil
}

// readAcks reads the child's stdout: "ready", then one "a W J D WS" line
// per acknowledged write (writer, write number, DurableSeq, WrittenSeq).
func (c *child) readAcks(out io.Reader, writers int) {
	sc := bufio.NewScanner(out)
	started := false
	for sc.Scan() {
		line := sc.Text()
		if line == "ready" {
			started = true
			close(c.ready)
			continue
		}
		var wr int
		var j int64
		var d, ws uint64
		if _, err := fmt.Sscanf(line, "a %d %d %d %d", &wr, &j, &d, &ws); err == nil && wr >= 0 && wr < writers {
			c.acks.ack(wr, j, d, ws)
		}
	}
	if !started {
		c.readDone <- errors.New("child exited before it was ready")
		return
	}
	c.readDone <- nil
}

// waitReady waits until the child has opened the store and is writing. On
// an error the child is gone.
func (c *child) waitReady(ctx context.Context, exe string) error {
	select {
	case <-c.ready:
		return nil
	case err := <-c.readDone:
		c.cmd.Wait()
		return fmt.Errorf("crashtest: %v (is MaybeRunChild called first in main/TestMain of %s?)", err, exe)
	case <-time.After(20 * time.Second):
		c.kill()
		return errors.New("crashtest: child did not become ready within 20s")
	case <-ctx.Done():
		c.kill()
		return ctx.Err()
	}
}

// kill sends SIGKILL, reads every ack the child wrote before it died, then
// reaps it (Wait closes the pipe, so it must come second).
func (c *child) kill() error {
	c.cmd.Process.Signal(syscall.SIGKILL)
	rerr := <-c.readDone
	c.cmd.Wait()
	return rerr
}

// powerTrial runs one power-loss trial on a fresh MemFS.
func powerTrial(cfg Config, rng *rand.Rand) (Trial, error) {
	mem := engine.NewMemFS()
	w := cfg.workload("/kv", rng.Uint64())
	a := newAcks(w.Writers)
	db, err := openStore(w, mem)
	if err != nil {
		return Trial{}, fmt.Errorf("crashtest: %w", err)
	}
	maxRun := cfg.MaxRun
	if maxRun <= 0 {
		maxRun = 50 * time.Millisecond
	}
	after := time.Duration(rng.Int64N(int64(maxRun)))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for wr := range w.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runWriter(db, w, wr, &stop, a.ack)
		}()
	}
	time.Sleep(after)
	cut := rand.New(rand.NewPCG(rng.Uint64(), 1))
	if cfg.NoTear {
		cut = nil
	}
	rebooted := mem.PowerCut(cfg.PowerMode, cut)
	stop.Store(true)
	wg.Wait()
	db.Close() // fails: the old MemFS is down, as the process would be
	t := verify(w, a, rebooted, false)
	t.CrashAfterMs = float64(after) / 1e6
	return t, nil
}

func openStore(w workload, fs engine.FS) (*engine.DB, error) {
	pol, err := engine.ParseSync(w.Sync)
	if err != nil {
		return nil, err
	}
	return engine.Open(w.Dir, engine.Options{Sync: pol, SegmentSize: w.SegmentSize, WriteBuffer: w.WriteBuffer, AutoCompact: w.AutoCompact, FS: fs})
}

// runWriter is one writing goroutine: Puts to its keys in order (every
// write j with isDelete(j) is a Delete instead) until stop is set or a
// write fails, reporting each acknowledged write.
func runWriter(db *engine.DB, w workload, wr int, stop *atomic.Bool, ack func(w int, j int64, durable, written uint64)) {
	for j := int64(0); !stop.Load(); j++ {
		var err error
		if isDelete(j) {
			err = db.Delete(keyFor(wr, j, w.Keys))
		} else {
			err = db.Put(keyFor(wr, j, w.Keys), valueFor(w, wr, j))
		}
		if err != nil {
			return
		}
		s := db.Stats()
		ack(wr, j, s.DurableSeq, s.WrittenSeq)
		if wr == 0 && w.CompactEvery > 0 && j > 0 && j%int64(w.CompactEvery) == 0 {
			if err := db.Compact(); err != nil {
				return
			}
		}
	}
}

// isDelete reports whether a writer's j-th write is a Delete: one write in
// seven, so that every trial checks that a deleted key whose tombstone was
// durable does not come back. (Seven is prime to the default key count, so
// each key sees Puts and Deletes in turn.)
func isDelete(j int64) bool { return j%7 == 6 }

func keyFor(wr int, j int64, keys int) []byte {
	return fmt.Appendf(nil, "w%d/k%d", wr, j%int64(keys))
}

// valueFor is the value of writer wr's j-th write: its identity, then
// bytes derived from the seed, of a length that varies with j.
func valueFor(w workload, wr int, j int64) []byte {
	r := rand.New(rand.NewPCG(w.Seed, uint64(wr)<<40|uint64(j)))
	n := w.ValueSize/2 + r.IntN(w.ValueSize+1)
	v := fmt.Appendf(nil, "w%d/j%d/", wr, j)
	for len(v) < n {
		v = append(v, byte('a'+r.IntN(26)))
	}
	return v
}

// verify reopens the crashed store and checks every key against what was
// acknowledged. A write was promised durable if the policy promised it
// (under always and group when it returned; under batch:N once N-1 more
// were acknowledged) or the store reported it (DurableSeq). After a kill,
// also every write the store reported in the OS's hands (WrittenSeq) and
// every write its write buffer can no longer hold (killSafeUpTo): either
// promise broken is a finding, so an engine that syncs or flushes less
// than its policy says fails even if it reports that honestly.
//
// The invariant it checks (see the package comment): every write
// acknowledged as durable is present with its value (or its later durable
// overwrite/delete); writes not yet synced may be lost; nothing is returned
// that was never written or is corrupt.
func verify(w workload, a *acks, fs engine.FS, killed bool) Trial {
	var t Trial
	t.DurableSeq = a.durableSeq
	if killed {
		t.WrittenSeq = a.writtenSeq
	}
	pol, _ := engine.ParseSync(w.Sync)
	db, err := openStore(w, fs)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	defer db.Close()
	c := checker{w: w, a: a, killed: killed, t: &t,
		ackDurable: pol.Mode == engine.SyncAlways || pol.Mode == engine.SyncGroup}
	if pol.Mode == engine.SyncBatch {
		c.batchN = int64(pol.N)
	}
	for wr := range w.Writers {
		acked := a.acked[wr]
		// Every write j of this writer with j <= acked was acknowledged;
		// j = acked+1 may have been in flight.
		t.Writes += acked + 1
		c.killSafe = killSafeUpTo(w, wr, acked)
		for slot := int64(0); slot < int64(w.Keys); slot++ {
			c.checkKey(db, wr, slot, acked)
		}
	}
	if len(c.detail) > 0 {
		t.Detail = strings.Join(c.detail[:min(len(c.detail), 5)], "; ")
	}
	return t
}

// checker checks the keys of one recovered store, counting into t.
type checker struct {
	w          workload
	a          *acks
	killed     bool
	ackDurable bool  // always and group: an acknowledged write was durable
	batchN     int64 // batch:N's N, else 0
	killSafe   int64 // the writer being checked: killSafeUpTo
	t          *Trial
	detail     []string // what broke the invariant, key by key
}

// checkKey checks one key of writer wr: the key of its writes j with
// j % Keys == slot, of which those up to acked were acknowledged.
func (c *checker) checkKey(db *engine.DB, wr int, slot, acked int64) {
	key := keyFor(wr, slot, c.w.Keys)
	got, ok := c.recovered(db, key, wr, slot, acked)
	if !ok {
		return
	}
	lastDurable := c.count(slot, acked, got)
	if got < lastDurable {
		what := "lost"
		if isDelete(lastDurable) {
			c.t.Resurrected++
			what = "resurrected: its Delete"
		}
		c.detail = append(c.detail, fmt.Sprintf("%s: %s (write %d was durable, the state is write %d's)", key, what, lastDurable, got))
	}
}

// recovered returns the write whose state key is in after recovery: the
// write number j of its value, or, when it is absent, of the latest Delete
// that may have reached the disk (-1: never written). It returns false,
// after counting it, when the value is corrupt or was never written.
func (c *checker) recovered(db *engine.DB, key []byte, wr int, slot, acked int64) (int64, bool) {
	v, err := db.Get(key)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		got := int64(-1)
		for j := slot; j <= acked+1; j += int64(c.w.Keys) {
			if isDelete(j) {
				got = j
			}
		}
		return got, true
	case err != nil:
		c.t.Corrupt++
		c.detail = append(c.detail, fmt.Sprintf("%s: %v", key, err))
		return 0, false
	}
	j, ok := parseValue(v, wr)
	switch {
	case !ok || j%int64(c.w.Keys) != slot:
		c.t.Corrupt++
		c.detail = append(c.detail, fmt.Sprintf("%s: a value that is not this key's", key))
		return 0, false
	case j > acked+1 || isDelete(j):
		c.t.Unwritten++
		c.detail = append(c.detail, fmt.Sprintf("%s: write %d was never issued", key, j))
		return 0, false
	case string(v) != string(valueFor(c.w, wr, j)):
		c.t.Corrupt++
		c.detail = append(c.detail, fmt.Sprintf("%s: write %d's value came back wrong", key, j))
		return 0, false
	}
	return j, true
}

// count counts the key's acknowledged writes (j = slot, slot+Keys, ... up
// to acked) as recovered or lost, given that the key came back in write
// got's state, and returns the last of them that was durable (-1: none).
func (c *checker) count(slot, acked, got int64) int64 {
	t, a := c.t, c.a
	lastDurable := int64(-1)
	for j := slot; j <= acked; j += int64(c.w.Keys) {
		durable := c.ackDurable || uint64(j+1) <= a.durableSeq || (c.batchN > 0 && acked-j >= c.batchN-1)
		written := c.killed && (durable || uint64(j+1) <= a.writtenSeq || j <= c.killSafe)
		if durable {
			t.DurableAcked++
			lastDurable = j
		}
		if got >= j {
			t.Recovered++
			continue
		}
		t.LostAcked++
		if durable {
			t.Lost++
		}
		if written {
			t.LostWritten++
		}
		switch {
		case durable:
		case uint64(j+1) <= a.writtenSeq:
			t.LostPageCache++
		default:
			t.LostBuffered++
		}
	}
	return lastDurable
}

// killSafeUpTo returns the last of writer wr's writes 0..acked that a
// process kill may not take (-1: none): the write buffer holds less than
// Options.WriteBuffer bytes once a Put returns (else it is handed to the
// OS), so a write whose record and those of the acknowledged writes after
// it fill that many bytes cannot be in it. Under always and group (no
// buffer) and with the buffer off it is acked. Batch's and the store's
// own promises are counted apart (count).
func killSafeUpTo(w workload, wr int, acked int64) int64 {
	pol, _ := engine.ParseSync(w.Sync)
	bound := bufferBound(pol, w.WriteBuffer)
	if bound == 0 {
		return acked
	}
	behind := 0
	for j := acked; j >= 0; j-- {
		behind += recordHeader + len(keyFor(wr, j, w.Keys))
		if !isDelete(j) {
			behind += len(valueFor(w, wr, j))
		}
		if behind >= bound {
			return j
		}
	}
	return -1
}

// parseValue reads the writer and write number from a value's prefix.
func parseValue(v []byte, wr int) (int64, bool) {
	s, ok := strings.CutPrefix(string(v), "w"+strconv.Itoa(wr)+"/j")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(s, "/")
	if !ok {
		return 0, false
	}
	j, err := strconv.ParseInt(num, 10, 64)
	return j, err == nil && j >= 0
}

// MaybeRunChild runs the crash child workload and exits if this process
// was started as a crash child (the environment variable KVLAB_CRASH_CHILD
// holds its workload); otherwise it returns at once. Call it first thing
// in main() and in TestMain.
func MaybeRunChild() {
	spec := os.Getenv(envChild)
	if spec == "" {
		return
	}
	var w workload
	if err := json.Unmarshal([]byte(spec), &w); err != nil {
		fmt.Fprintf(os.Stderr, "crashtest child: bad %s: %v\n", envChild, err)
		os.Exit(2)
	}
	db, err := openStore(w, engine.OSFS{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "crashtest child: %v\n", err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	say := func(s string) {
		outMu.Lock()
		defer outMu.Unlock()
		out.WriteString(s)
		if out.Flush() != nil {
			os.Exit(0) // the parent went away
		}
	}
	say("ready\n")
	var stop atomic.Bool
	time.AfterFunc(childLife, func() { stop.Store(true) })
	var wg sync.WaitGroup
	for wr := range w.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runWriter(db, w, wr, &stop, func(w int, j int64, d, ws uint64) {
				say(fmt.Sprintf("a %d %d %d %d\n", w, j, d, ws))
			})
		}()
	}
	wg.Wait()
	db.Close()
	os.Exit(0)
}
