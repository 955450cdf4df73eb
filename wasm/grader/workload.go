package grader

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The crash exercises' workloads are drawn at random for each grading, so
// that a store cannot be fitted to them: key names and lengths, value
// sizes from 0 bytes to several KiB, the number of Puts and which keys are
// written again all change from one Run to the next. The seed is shown
// with the results; a line "// kvlab:seed N" anywhere in the code grades
// it on workload N again.

// seedDirective is the comment that replays a workload.
var seedDirective = regexp.MustCompile(`(?m)^\s*//\s*kvlab:seed\s+(\d+)\s*$`)

// newSeed draws the seed of a grading that names none. A variable, so
// that tests can fix it.
var newSeed = func() uint64 {
	return uint64(time.Now().UnixNano())%1_000_000 + 1
}

// gradeSeed is the seed of the grading in progress, and gradeSeedGiven
// whether the code named it (set by Run; nothing in this package runs two
// gradings at once).
var (
	gradeSeed      uint64 = 1
	gradeSeedGiven bool
)

// seedOf returns the seed src asks for with a kvlab:seed line, and true,
// or a new one and false.
func seedOf(src string) (uint64, bool) {
	if m := seedDirective.FindStringSubmatch(src); m != nil {
		if n, err := strconv.ParseUint(m[1], 10, 64); err == nil {
			return n, true
		}
	}
	return newSeed(), false
}

// Bounds of a drawn workload.
const (
	workMinPuts  = 24
	workMaxPuts  = 40
	workMaxValue = 5000 // bytes; a record's lengths fit in 2 bytes
	workMaxKey   = 40
)

// keyAlphabet is what key names are drawn from: no pattern a store could
// match on.
const keyAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:./ "

// drawWorkload returns the Puts of workload seed: between workMinPuts and
// workMaxPuts of them, about a quarter writing a key again, one value
// empty, at least two of several KiB, so that the log spans tens of KiB
// and many 512-byte sectors.
func drawWorkload(seed uint64) []kv {
	rng := rand.New(rand.NewPCG(seed, 0x6b766c6162))
	n := workMinPuts + rng.IntN(workMaxPuts-workMinPuts+1)
	empty, big1, big2 := rng.IntN(n), rng.IntN(n), rng.IntN(n)
	var keys []string
	seen := map[string]bool{}
	w := make([]kv, 0, n)
	for i := range n {
		var key string
		if len(keys) > 2 && rng.IntN(4) == 0 {
			key = keys[rng.IntN(len(keys))]
		} else {
			for key == "" || seen[key] {
				key = drawKey(rng)
			}
			seen[key] = true
			keys = append(keys, key)
		}
		var size int
		switch r := rng.IntN(20); {
		case i == empty:
			size = 0
		case i == big1 || i == big2 || r < 4:
			size = 1000 + rng.IntN(workMaxValue-1000+1)
		case r < 9:
			size = 65 + rng.IntN(600)
		default:
			size = rng.IntN(65)
		}
		w = append(w, kv{key, drawValue(rng, size)})
	}
	return w
}

// drawKey returns a key of 1 to workMaxKey bytes.
func drawKey(rng *rand.Rand) string {
	n := 1 + rng.IntN(workMaxKey)
	if rng.IntN(3) > 0 {
		n = 1 + rng.IntN(12)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = keyAlphabet[rng.IntN(len(keyAlphabet))]
	}
	return string(b)
}

// drawValue returns a value of size bytes: any byte value, so that a
// store cannot use one as a separator.
func drawValue(rng *rand.Rand, size int) string {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return string(b)
}

// quote shows a key or value in a message: quoted, and cut short with its
// length when it is long.
func quote(s string) string {
	const show = 24
	if len(s) <= show {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:show]), len(s))
}

// workloadNote describes workload seed for the page.
func workloadNote(seed uint64, given bool, w []kv) string {
	keys, bytes := map[string]bool{}, 0
	for _, p := range w {
		keys[p.key] = true
		bytes += len(p.key) + len(p.value)
	}
	if given {
		return fmt.Sprintf("Workload %d (named by the `// kvlab:seed %d` line in your code; without it each Run draws one at random): %d Puts of %d keys, %s of keys and values.", seed, seed, len(w), len(keys), sizeText(bytes))
	}
	return fmt.Sprintf("Workload %d (drawn at random for this Run): %d Puts of %d keys, %s of keys and values; add the line `// kvlab:seed %d` to your code to grade it on this workload again.", seed, len(w), len(keys), sizeText(bytes), seed)
}

// sizeText is n bytes in the page's words.
func sizeText(n int) string {
	if n < 10<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}

// putText is a Put as a message quotes it.
func putText(p kv) string {
	return fmt.Sprintf("Put(%s, %s)", quote(p.key), quote(p.value))
}

// shrinkBudget bounds the reopens a failure's shrinking may spend (each
// candidate workload is graded again until its first failure, or in
// full when it passes): enough to take a failure of a few dozen Puts to
// its one or two, little beside the grading itself.
const shrinkBudget = 1500

// shrink looks for a shorter workload than work on which check still
// fails: first the Puts up to the failure, then without each run of
// Puts in turn, halving the run. It returns the recording, the failure
// and the workload it ended with (rec, f and work when nothing shorter
// fails).
func shrink(p *program, rec *recording, f *cutFailure, work []kv, check func(*recording) (*cutFailure, int)) (*recording, *cutFailure, []kv) {
	start := opens
	try := func(cand []kv) bool {
		if opens-start > shrinkBudget || len(cand) == 0 {
			return false
		}
		r2, err := record(p, cand)
		if err != nil {
			return false
		}
		f2, _ := check(r2)
		if f2 == nil {
			return false
		}
		rec, f, work = r2, f2, cand
		return true
	}
	// The Puts that started after the cut took no part in the failure.
	n := 0
	for _, pc := range rec.puts {
		if pc.before < f.c {
			n++
		}
	}
	if n < len(work) {
		try(work[:n])
	}
	for size := len(work) / 2; size >= 1; size /= 2 {
		for i := 0; i+size <= len(work); {
			cand := append(append([]kv(nil), work[:i]...), work[i+size:]...)
			if !try(cand) {
				i += size
			}
			if opens-start > shrinkBudget {
				return rec, f, work
			}
		}
	}
	return rec, f, work
}

// shrunkNote lists the Puts of a shrunk workload, for a failure's
// message.
func shrunkNote(work []kv) string {
	const show = 4
	var b strings.Builder
	fmt.Fprintf(&b, " (the workload shrunk to the %d Put(s) that still fail:", len(work))
	for i, w := range work {
		if i == show {
			fmt.Fprintf(&b, " …")
			break
		}
		fmt.Fprintf(&b, " %s", putText(w))
	}
	b.WriteString(")")
	return b.String()
}
