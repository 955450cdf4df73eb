package harness

import (
	"context"
	"math/rand/v2"
	"strconv"
)

// Workloads, named as in LevelDB's db_bench so results can be compared.
//
// A unit is one workload step; an op is one primitive key access. Most
// workloads do one op per unit; updaterandom does two (a Get, then a Put of
// the same key), fillbatch does -batch (B Puts of B keys, one request of a
// client that writes several keys at once), and readwhilewriting counts
// the background writer's Puts as ops but only the readers' Gets as units.
// A unit is what a user waits for, so units/s is the rate of requests
// served; ops/s is B times larger for fillbatch without anything being
// faster. The kv engine has no batch write: fillbatch's B Puts go one
// after another, each with its own sync under the policy, and a crash can
// keep some of them and not others.
//
// Each workload is one entry of the workloads table below: its name, what
// it does, the step each unit takes, and what the store must hold or be.
// The grammar, the usage text, the runner and the result all read that
// table; the one other place that names a workload is readwhilewriting's
// writer, whose Puts follow fillrandom's plan (runner.go, newWorkers).
//
// Keys are 16 bytes, a zero-padded decimal index ("0000000000001234"), as
// db_bench writes them. -keys sets how many distinct keys there are; -dist
// chooses them uniformly or with a Zipf distribution (a few hot keys).
const (
	keyLen      = 16
	zipfS       = 1.1 // Zipf exponent; Go's rand.Zipf needs s > 1
	valueWindow = 4096
	scanLen     = 10 // keys read per seekrandom unit, after the seek, as db_bench's default
)

// workload is one entry of the -workload table.
type workload struct {
	name string
	what string // what it does, in one line
	step step   // what each unit does
	// What the store must hold or be, and what the run reads and writes.
	ascending bool // the workers visit the keys in ascending order, not at random
	preload   bool // the store holds every key before warmup and measuring
	reads     bool // the workload does Gets, so a hit rate is reported
	scans     bool // the store must be a Scanner (ordered)
	writer    bool // one more goroutine Puts random keys as fast as it can while the clients run
}

// workloads is the -workload table, in the order the usage text lists it.
var workloads = []workload{
	{name: "fillseq", what: "Put keys in ascending order into an empty store", step: stepPut, ascending: true},
	{name: "fillrandom", what: "Put keys in random order into an empty store", step: stepPut},
	{name: "fillbatch", what: "Put -batch random keys (default 16) one after another per unit into an empty store: a unit is a batch, an op one Put", step: stepBatch},
	{name: "overwrite", what: "Put random keys into a store already holding all of them", step: stepPut, preload: true},
	{name: "readrandom", what: "Get random keys from a full store (hit rate reported)", step: stepGet, preload: true, reads: true},
	{name: "readwhilewriting", what: "-threads readers Get random keys while one more goroutine Puts random keys as fast as it can",
		step: stepGet, preload: true, reads: true, writer: true},
	{name: "updaterandom", what: "read-modify-write: Get a random key, then Put it", step: stepUpdate, preload: true, reads: true},
	{name: "deleterandom", what: "Delete random keys from a full store", step: stepDelete, preload: true},
	{name: "mixed", what: "half Gets, half Puts, of random keys in a full store", step: stepMixed, preload: true, reads: true},
	{name: "seekrandom", what: "range scans: seek to a random key and read the next " + strconv.Itoa(scanLen) + " keys in order (ordered engines only: the kv engine's hash index keeps no key order)",
		step: stepScan, preload: true, scans: true},
	{name: reopenWorkload, what: "load -keys keys, close, drop the store's files from the page cache, then time one Open and Close (kv: and the floor of that Open; reopen.go)",
		step: stepGet, preload: true},
}

// Workloads lists the -workload names.
var Workloads = workloadNames()

func workloadNames() []string {
	names := make([]string, len(workloads))
	for i, wl := range workloads {
		names[i] = wl.name
	}
	return names
}

// lookupWorkload returns the table entry named name.
func lookupWorkload(name string) (workload, bool) {
	for _, wl := range workloads {
		if wl.name == name {
			return wl, true
		}
	}
	return workload{}, false
}

// Dists lists the -dist names.
var Dists = []string{"uniform", "zipfian"}

// step is what one unit of a workload does, decided once per loop so the
// timed loop switches on a small integer rather than a name.
type step int

const (
	stepPut    step = iota // fillseq, fillrandom, overwrite; readwhilewriting's writer
	stepGet                // readrandom, readwhilewriting's readers
	stepDelete             // deleterandom
	stepUpdate             // updaterandom: Get, then Put
	stepMixed              // mixed: Get or Put by the plan's coin flips
	stepScan               // seekrandom: Scan scanLen keys from a random key
	stepBatch              // fillbatch: -batch Puts of the next -batch keys of the plan
)

// The -batch range of fillbatch, and its default.
const (
	defaultBatch = 16
	maxBatch     = 1024
)

// keyTable holds every key of the key space in one allocation, built before
// any clock starts. Key i is buf[i*keyLen : (i+1)*keyLen].
type keyTable struct{ buf []byte }

// buildKeyTable builds the table of n keys, and gives up when ctx is
// done: tens of millions of keys take seconds to write out, and a run
// must end with its budget.
func buildKeyTable(ctx context.Context, n int) (keyTable, error) {
	t := keyTable{buf: make([]byte, n*keyLen)}
	for i := range n {
		if i%(1<<16) == 0 && ctx.Err() != nil {
			return keyTable{}, ctx.Err()
		}
		formatKey(t.buf[i*keyLen:(i+1)*keyLen], uint64(i))
	}
	return t, nil
}

func (t keyTable) key(i uint32) []byte {
	o := int(i) * keyLen
	return t.buf[o : o+keyLen : o+keyLen]
}

// formatKey writes i as keyLen zero-padded decimal digits into dst.
func formatKey(dst []byte, i uint64) {
	for j := keyLen - 1; j >= 0; j-- {
		dst[j] = byte('0' + i%10)
		i /= 10
	}
}

// workerPlan is everything one worker needs, prepared before the timed
// region: the order in which it visits keys, the values it writes, and
// the coin flips of a mixed workload.
type workerPlan struct {
	order  []uint32 // key indices, used cyclically
	values []byte   // value i is values[off : off+valueSize], off cycling
	isRead []bool   // mixed only: whether unit i is a Get (cyclic)
}

// planWorker builds worker w's plan. quota is how many units it will do
// (or a table size to cycle through in a -duration run).
func planWorker(workload, dist string, w, threads, keys, quota, valueSize int, seed int64) workerPlan {
	r := rand.New(rand.NewPCG(uint64(seed), uint64(w)+1))
	p := workerPlan{order: make([]uint32, quota)}
	wl, _ := lookupWorkload(workload)
	switch {
	case wl.ascending:
		// Worker w writes keys w, w+threads, w+2*threads, ...: together the
		// workers write in ascending order.
		for i := range p.order {
			p.order[i] = uint32((i*threads + w) % keys)
		}
	case dist == "zipfian":
		z := rand.NewZipf(r, zipfS, 1, uint64(keys-1))
		for i := range p.order {
			p.order[i] = uint32(z.Uint64())
		}
	default:
		for i := range p.order {
			p.order[i] = uint32(r.IntN(keys))
		}
	}
	p.values = make([]byte, valueSize+valueWindow)
	for i := range p.values {
		p.values[i] = byte(r.Uint32()) // incompressible
	}
	if wl.step == stepMixed {
		p.isRead = make([]bool, min(quota, 1<<16))
		for i := range p.isRead {
			p.isRead[i] = r.IntN(2) == 0
		}
	}
	return p
}

// value returns the i-th value of the plan: a window into a random buffer,
// so consecutive values differ without building any in the timed loop.
func (p *workerPlan) value(i, valueSize int) []byte {
	o := (i * 61) % valueWindow
	return p.values[o : o+valueSize : o+valueSize]
}
