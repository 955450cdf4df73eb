package harness

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"
)

// Losing the leader (-kill leader@D).
//
// A replicated engine's store that kills its leader keeps an AckLog of
// the writes it sent: which were acknowledged, and in what order they
// began and ended. After the run it reads every key back from the members
// left (etcd's new leader; pg-sync's standbys) and AckLog.Check counts the
// acknowledged writes that did not survive. The promise being checked is
// the one the engine makes: a write acknowledged under a synchronous
// policy is on a quorum, so losing one member loses none of them.
//
// A key may be written more than once, by several clients at once, so
// "the value it must have" is not simply the last one acknowledged. A
// value read back is accepted when it is one some write of that key sent
// and that write may be the last in a linearizable order: it was not
// acknowledged (it failed or never returned: the server may have applied
// it), or it was acknowledged and ended after the last acknowledged write
// of the key began. A key whose value is absent, or is none of those, is
// a lost acknowledged write. The order is the log's own counter, not a
// clock, so no two events tie.

// AckLog records the Puts a client sends. It is safe for concurrent use;
// a nil *AckLog records nothing.
type AckLog struct {
	seq atomic.Int64 // orders every Begin and End

	mu     sync.Mutex // guards writes, count and capped
	writes map[string][]ackWrite
	count  int
	capped bool // maxAckWrites reached: later writes are not recorded
}

// maxAckWrites bounds the writes an AckLog keeps (some 50 bytes each,
// plus the key).
const maxAckWrites = 1 << 20

// ackWrite is one Put of a key.
type ackWrite struct {
	sum        uint64 // FNV-1a of the value
	begin, end int64  // the log's counter at Begin and at End; end 0 before End
	acked      bool
}

// AckTicket is a Put in flight, from Begin to End.
type AckTicket struct {
	key string
	i   int // index in writes[key]; -1 when not recorded
}

// NewAckLog returns an empty log.
func NewAckLog() *AckLog { return &AckLog{writes: map[string][]ackWrite{}} }

func valueSum(v []byte) uint64 {
	h := fnv.New64a()
	h.Write(v)
	return h.Sum64()
}

// Begin records that a Put of key and value is about to be sent.
func (l *AckLog) Begin(key, value []byte) AckTicket {
	if l == nil {
		return AckTicket{i: -1}
	}
	sum := valueSum(value)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count >= maxAckWrites {
		l.capped = true
		return AckTicket{i: -1}
	}
	k := string(key)
	l.writes[k] = append(l.writes[k], ackWrite{sum: sum, begin: l.seq.Add(1)})
	l.count++
	return AckTicket{key: k, i: len(l.writes[k]) - 1}
}

// End records how the Put of t ended: acknowledged when err is nil.
func (l *AckLog) End(t AckTicket, err error) {
	if l == nil || t.i < 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w := &l.writes[t.key][t.i]
	w.end, w.acked = l.seq.Add(1), err == nil
}

// AckCheck is the "ack_check" object of a failover report: every
// acknowledged write read back after the fault.
type AckCheck struct {
	// ReadFrom names the members the keys were read from.
	ReadFrom string `json:"read_from"`
	// Acknowledged is how many Puts were acknowledged; Keys how many
	// distinct keys they wrote, all of which were read back.
	Acknowledged int64 `json:"acknowledged"`
	Keys         int   `json:"keys"`
	// Lost is how many of those keys came back without an acknowledged
	// value (absent, or holding an older one); LostKeys shows up to five
	// of them in hex. 0 is the promise kept.
	Lost     int      `json:"lost"`
	LostKeys []string `json:"lost_keys,omitempty"`
	// Unacknowledged is how many Puts failed or never returned (the
	// writes in flight when the leader died); whether they survived is
	// the engine's choice, and not checked.
	Unacknowledged int64 `json:"unacknowledged"`
	// Capped says the log stopped recording after maxAckWrites Puts, so
	// the later ones were not checked.
	Capped bool `json:"capped,omitempty"`
	// Error is why the check could not finish ("" when it did): Keys is
	// then how many were read before it stopped.
	Error string `json:"error,omitempty"`
}

// Check reads back every key with an acknowledged Put: read returns the
// values the surviving members hold for it (none when no member has it),
// and the write survived when one of them is acceptable (the file
// comment). The check stops at the first read error, or after budget.
func (l *AckLog) Check(readFrom string, budget time.Duration, read func(key []byte) ([][]byte, error)) *AckCheck {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &AckCheck{ReadFrom: readFrom, Capped: l.capped}
	deadline := time.Now().Add(budget)
	for key, ws := range l.writes {
		lastBegin := int64(-1)
		for _, w := range ws {
			switch {
			case w.acked:
				c.Acknowledged++
				lastBegin = max(lastBegin, w.begin)
			default:
				c.Unacknowledged++
			}
		}
		if lastBegin < 0 || c.Error != "" {
			continue
		}
		if time.Now().After(deadline) {
			c.Error = fmt.Sprintf("stopped after %v with %d keys read", budget, c.Keys)
			continue
		}
		vals, err := read([]byte(key))
		if err != nil {
			c.Error = fmt.Sprintf("reading key %x: %v", key, err)
			continue
		}
		c.Keys++
		if !acceptable(ws, lastBegin, vals) {
			c.Lost++
			if len(c.LostKeys) < 5 {
				c.LostKeys = append(c.LostKeys, hex.EncodeToString([]byte(key)))
			}
		}
	}
	return c
}

// acceptable reports whether one of vals is a value some write of ws
// sent that may be the key's last: unacknowledged, or acknowledged and
// ended after lastBegin, the last acknowledged write's beginning.
func acceptable(ws []ackWrite, lastBegin int64, vals [][]byte) bool {
	for _, v := range vals {
		sum := valueSum(v)
		for _, w := range ws {
			if w.sum == sum && (!w.acked || w.end > lastBegin) {
				return true
			}
		}
	}
	return false
}

// FailoverReport is the "failover" object of a replication report: what
// -kill leader did to the run.
type FailoverReport struct {
	// Killed names the leader killed, KilledAfterNs when (after the timed
	// region started, the timeline's clock).
	Killed        string `json:"killed"`
	KilledAfterNs int64  `json:"killed_after_ns"`
	// NewLeader is the member the others elected, "" when none was
	// (pg-sync: no automatic failover). ElectedAfterNs is how long after
	// the kill the members left first agreed on it, as the store saw by
	// asking them (every 10 ms); ResumedAfterNs how long after the kill
	// the first write sent to it was acknowledged: the pause a client
	// saw. Both 0 when there was none.
	NewLeader      string `json:"new_leader,omitempty"`
	ElectedAfterNs int64  `json:"elected_after_ns,omitempty"`
	ResumedAfterNs int64  `json:"resumed_after_ns,omitempty"`
	// WritesStopped says no member took writes after the kill; What says
	// in the engine's words what happened.
	WritesStopped bool   `json:"writes_stopped"`
	What          string `json:"what"`
	// AckCheck reads every acknowledged write back from the members left.
	AckCheck *AckCheck `json:"ack_check,omitempty"`
}

// failoverLine is the table's line about a leader loss, or "".
func failoverLine(f *FailoverReport) string {
	if f == nil {
		return ""
	}
	line := fmt.Sprintf("leader lost: %s killed at %s", f.Killed, fmtSeconds(f.KilledAfterNs))
	if f.NewLeader != "" {
		line += fmt.Sprintf("; %s elected %s later, writes resumed %s after the kill", f.NewLeader, fmtSeconds(f.ElectedAfterNs), fmtSeconds(f.ResumedAfterNs))
	}
	if f.WritesStopped {
		line += "; writes stopped (no automatic failover)"
	}
	if c := f.AckCheck; c != nil {
		line += fmt.Sprintf("; %d acknowledged writes (%d keys) read back from %s: %d lost", c.Acknowledged, c.Keys, c.ReadFrom, c.Lost)
		if c.Error != "" {
			line += " (check incomplete: " + c.Error + ")"
		}
	}
	return line
}

func fmtSeconds(ns int64) string {
	return fmt.Sprintf("%.2fs", float64(ns)/1e9)
}
