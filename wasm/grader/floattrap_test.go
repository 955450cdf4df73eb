package grader

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"

	"kvlab/gohost"
	"kvlab/harness/calc"
)

// caseIndex finds a calc.PercentileCases row by name.
func caseIndex(name string) int {
	for i, c := range calc.PercentileCases {
		if c.Name == name {
			return i
		}
	}
	panic("no percentile case " + strconv.Quote(name))
}

// naiveFloat are the float formulas lesson 2 warns about, each with a
// plain ceiling: every one must fail a case of the shared table, and every
// case it fails must carry a note, so the trap is taught, not hidden.
var naiveFloat = []struct {
	name string
	rank func(p float64, n int) int
}{
	{"ceil(p/100*n)", func(p float64, n int) int { return int(math.Ceil(p / 100 * float64(n))) }},
	{"ceil(p*n/100)", func(p float64, n int) int { return int(math.Ceil(p * float64(n) / 100)) }},
	{"ceil(p*0.01*n)", func(p float64, n int) int { return int(math.Ceil(p * 0.01 * float64(n))) }},
}

func TestTableCatchesEveryNaiveFloatFormula(t *testing.T) {
	for _, f := range naiveFloat {
		fn := func(s []int64, p float64) int64 { return pick(s, f.rank(clampP(p), len(s))-1, true) }
		failed := 0
		for _, c := range calc.PercentileCases {
			if got, err := callPercentile(fn, c.In, c.P); err == nil && got == strconv.FormatInt(c.Want, 10) {
				continue
			}
			failed++
			if c.Note == "" {
				t.Errorf("%s fails case %q, which has no note: a float-trap case must say what float64 gets wrong", f.name, c.Name)
			}
		}
		if failed == 0 {
			t.Errorf("%s passes every case of calc.PercentileCases: the table does not catch it", f.name)
		}
		// The page shows the note on the row, pass or fail.
		r := Run("percentile", percentileSolution)
		for i, c := range calc.PercentileCases {
			if r.Cases[i].Note != c.Note {
				t.Errorf("case %d note %q, want %q", i+1, r.Cases[i].Note, c.Note)
			}
		}
	}
	// The float-rank mutant of percentile-tests is such a formula.
	if m := mutants[0]; m.name != "float-rank" {
		t.Fatalf("mutants[0] is %s, want float-rank first", m.name)
	}
}

// exactRank is the oracle: ceil(p/100 × n) for p = pm/1000 (p read as
// the decimal it was written as), in integer arithmetic. ratRank is the
// same in math/big.Rat; the sweep checks the two agree on its random pairs.
func exactRank(pm int64, n int64) int64 { return (pm*n + 99_999) / 100_000 }

func ratRank(pm int64, n int64) int64 {
	r := new(big.Rat).SetFrac(big.NewInt(pm*n), big.NewInt(100_000))
	q := new(big.Int).Quo(r.Num(), r.Denom()) // floor, r >= 0
	if new(big.Rat).SetInt(q).Cmp(r) < 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// statedRank is the formula the exercise's instructions (and lesson 2)
// state, written out as they write it.
func statedRank(p float64, n int) int64 {
	pm := int64(math.Round(p * 1000000))
	return (pm*int64(n) + 99999999) / 100000000
}

// TestRankAgreesWithExactOracle sweeps (p, n) pairs — every p with up to
// three decimals at n up to 10^6, every n up to 2000 at the common
// percentiles, and random pairs — and checks calc.Rank, the formula the
// instructions state and the reference Solution (interpreted, as a student's
// code is) against exact rational arithmetic.
func TestRankAgreesWithExactOracle(t *testing.T) {
	prog, ce := load(percentileSolution, gohost.Prelude{})
	if ce != nil {
		t.Fatal(ce)
	}
	fn, ce := prog.Function("Percentile", (func([]int64, float64) int64)(nil), percentileSig)
	if ce != nil {
		t.Fatal(ce)
	}
	solution := fn.Interface().(func([]int64, float64) int64)
	const maxN = 1_000_000
	ones := make([]int64, maxN) // 1..maxN: Percentile of 1..n returns the rank
	for i := range ones {
		ones[i] = int64(i + 1)
	}
	wrong := 0
	check := func(pm, n int64, viaSolution, viaRat bool) {
		if wrong > 20 {
			return
		}
		p := float64(pm) / 1000
		want := exactRank(pm, n)
		if viaRat {
			if r := ratRank(pm, n); r != want {
				wrong++
				t.Errorf("oracles disagree at pm=%d n=%d: integer %d, big.Rat %d", pm, n, want, r)
			}
		}
		got := map[string]int64{"calc.Rank": calc.Rank(p, n), "stated formula": statedRank(p, int(n))}
		if viaSolution {
			got["Solution"] = solution(ones[:n], p)
			if want == 0 {
				want = 1 // rank 0 (p = 0) reads the first value, 1
			}
			if got["calc.Rank"] == 0 {
				got["calc.Rank"], got["stated formula"] = 1, 1
			}
		}
		for who, g := range got {
			if g != want {
				wrong++
				t.Errorf("%s: p=%s n=%d gives %d, want %d (exact)", who, strconv.FormatFloat(p, 'f', -1, 64), n, g, want)
			}
		}
	}
	// Every p in 0.000..100.000 at sizes around the boundaries that matter.
	sizes := []int64{1, 2, 3, 7, 10, 50, 99, 100, 101, 250, 999, 1000, 1001, 41000, 65536, 99999, 100000, 999999, maxN}
	for _, n := range sizes {
		for pm := int64(0); pm <= 100_000; pm++ {
			check(pm, n, pm%(97+n%89) == 0, false)
		}
	}
	// Every n up to 2000 at the common percentiles.
	common := []int64{0, 1, 10, 100, 1000, 5000, 10000, 25000, 50000, 75000, 90000, 95000, 99000, 99500, 99900, 99950, 99990, 99999, 100000, 14000, 64400, 33333, 66667}
	for n := int64(1); n <= 2000; n++ {
		for _, pm := range common {
			check(pm, n, n%7 == 0, false)
		}
	}
	// Random pairs over the whole range.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 100_000 {
		if i%10 == 0 {
			check(rng.Int64N(100_001), 1+rng.Int64N(maxN), true, true)
			continue
		}
		check(rng.Int64N(100_001), 1+rng.Int64N(maxN), false, true)
	}
}
