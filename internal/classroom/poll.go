package classroom

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Poll states. A poll moves forward: open -> measuring -> closed. A run
// that fails leaves it measuring for good (Measured stays nil), so a
// prediction can never follow a started measurement. The one way back is
// Reopen: a measurement the run queue refused never started (nothing
// ran, no one saw a result), so the poll is open again.
const (
	PollOpen      = "open"
	PollMeasuring = "measuring"
	PollClosed    = "closed"
)

// MaxPrediction bounds a prediction's magnitude.
const MaxPrediction = 1e15

// Poll is one quiz opened to a room. It is not safe for concurrent use:
// the room's lock guards it.
type Poll struct {
	Key      string // "p1", "p2", ... within the room
	ArchID   int64  // its row in the archive
	Quiz     string
	Question string
	Unit     string

	State          string
	Opened         time.Time
	MeasureStarted time.Time // zero while open
	Measured       *float64  // the quiz's answer computed from the run; nil until known
	RunID          int64     // the archived run the measurement came from; 0 until known
	// Busy says why the measurement's runs were made on a machine too
	// busy to judge a prediction by (quiz.Busy), "" when they were not:
	// the room still sees the figure, but no one is told how far off
	// they were.
	Busy string
	// Updates spaces out the prediction-driven updates.
	Updates     Throttle
	predictions map[string]float64
	// Pending counts ballots accepted while the poll was open whose
	// store has not finished: a measurement waits for them (Wait) after
	// closing the poll, so every accepted ballot is stored before its
	// run. Add only while the poll is open, under the room's lock.
	Pending sync.WaitGroup
	// The caps' counts (Admit), kept in memory only: the browsers that
	// voted from each address, and each browser's ballots.
	voters  map[string]map[string]bool
	ballots map[string]int
}

// NewPoll returns an open poll.
func NewPoll(key, quiz, question, unit string, opened time.Time) *Poll {
	return &Poll{Key: key, Quiz: quiz, Question: question, Unit: unit, State: PollOpen, Opened: opened, predictions: map[string]float64{},
		voters: map[string]map[string]bool{}, ballots: map[string]int{}}
}

// Admit counts a ballot of browser from addr, or refuses it (an error
// wrapping ErrBallotCap) when addr's browsers already voted perAddr
// times in this poll (a new browser), or browser already cast perBrowser
// ballots in it.
func (p *Poll) Admit(addr, browser string, perAddr, perBrowser int) error {
	if p.ballots[browser] >= perBrowser {
		return fmt.Errorf("%w: this browser already voted %d times in poll %s, the most one browser may", ErrBallotCap, p.ballots[browser], p.Key)
	}
	vs := p.voters[addr]
	if !vs[browser] && len(vs) >= perAddr {
		return fmt.Errorf("%w: %d browsers from this address already voted in poll %s, the most one address may", ErrBallotCap, len(vs), p.Key)
	}
	if vs == nil {
		vs = map[string]bool{}
		p.voters[addr] = vs
	}
	vs[browser] = true
	p.ballots[browser]++
	return nil
}

// CheckPrediction refuses a value that is not finite or too large.
func CheckPrediction(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > MaxPrediction {
		return fmt.Errorf("value %v: a prediction must be a finite number between -1e15 and 1e15", v)
	}
	return nil
}

// Predict stores browser's prediction, replacing an earlier one. It
// returns an error wrapping ErrPredictionsClosed once the measurement
// has started.
func (p *Poll) Predict(browser string, v float64) error {
	if p.State != PollOpen {
		return fmt.Errorf("%w: poll %s: the measurement started at %s; predictions are closed", ErrPredictionsClosed, p.Quiz, p.MeasureStarted.Format("15:04:05"))
	}
	if err := CheckPrediction(v); err != nil {
		return err
	}
	p.predictions[browser] = v
	return nil
}

// Restore puts a stored prediction in the poll whatever the state: a
// reload from the archive, or a ballot accepted while the poll was open
// whose store finished after the measurement closed it (Pending).
func (p *Poll) Restore(browser string, v float64) { p.predictions[browser] = v }

// Prediction returns browser's prediction.
func (p *Poll) Prediction(browser string) (float64, bool) {
	v, ok := p.predictions[browser]
	return v, ok
}

// StartMeasuring closes the poll to predictions. It reports false when
// the poll was not open (already measuring or closed).
func (p *Poll) StartMeasuring(at time.Time) bool {
	if p.State != PollOpen {
		return false
	}
	p.State, p.MeasureStarted = PollMeasuring, at
	return true
}

// Reopen opens a measuring poll again whose run was refused before it
// was queued. It reports false (and changes nothing) for a poll that is
// not measuring or already has its measured value.
func (p *Poll) Reopen() bool {
	if p.State != PollMeasuring || p.Measured != nil {
		return false
	}
	p.State, p.MeasureStarted = PollOpen, time.Time{}
	return true
}

// Finish records the measured value, and why the machine was too busy
// to judge predictions by it ("" when it was not), and closes the poll.
func (p *Poll) Finish(measured float64, runID int64, busy string) {
	p.Measured, p.RunID, p.Busy, p.State = &measured, runID, busy, PollClosed
}

// Throttle spaces out updates: at most one per interval goes out at
// once, and the ones between are merged into one later flush. It is not
// safe for concurrent use: its owner's lock guards it.
type Throttle struct {
	last    time.Time // when an update last went out
	pending bool      // a flush is scheduled
}

// Now decides whether an update goes out now (at least every has passed
// since the last one), or is left to a later flush; pending reports that
// a flush was already scheduled, so the caller need not schedule one.
func (t *Throttle) Now(now time.Time, every time.Duration) (sendNow, pending bool) {
	if !t.pending && now.Sub(t.last) >= every {
		t.last = now
		return true, false
	}
	pending = t.pending
	t.pending = true
	return false, pending
}

// Flushed notes that the scheduled update went out at now.
func (t *Throttle) Flushed(now time.Time) { t.last, t.pending = now, false }

// PollView is the poll object of the wire contract: no browser ids.
type PollView struct {
	ID               string     `json:"id"`
	Quiz             string     `json:"quiz"`
	Question         string     `json:"question"`
	Unit             string     `json:"unit"`
	State            string     `json:"state"`
	Count            int        `json:"count"`
	Histogram        Histogram  `json:"histogram"`
	Measured         *float64   `json:"measured"`
	Busy             string     `json:"busy,omitempty"`
	RunID            *int64     `json:"run_id"`
	OpenedAt         time.Time  `json:"opened_at"`
	MeasureStartedAt *time.Time `json:"measure_started_at"`
}

// View returns the poll as the room sees it.
func (p *Poll) View() PollView {
	v := PollView{ID: p.Key, Quiz: p.Quiz, Question: p.Question, Unit: p.Unit, State: p.State,
		Count: len(p.predictions), Measured: p.Measured, Busy: p.Busy, OpenedAt: p.Opened}
	if p.RunID != 0 {
		id := p.RunID
		v.RunID = &id
	}
	if !p.MeasureStarted.IsZero() {
		t := p.MeasureStarted
		v.MeasureStartedAt = &t
	}
	vals := make([]float64, 0, len(p.predictions))
	for _, x := range p.predictions {
		vals = append(vals, x)
	}
	v.Histogram = NewHistogram(vals, p.Measured)
	return v
}

// Bins is the number of histogram bins.
const Bins = 10

// Histogram is Bins bins: Edges has Bins+1 entries, Counts Bins. Both are
// empty when there is nothing to show. Values outside the edges are not
// in any bin: Below and Above count them.
type Histogram struct {
	Edges  []float64 `json:"edges"`
	Counts []int     `json:"counts"`
	Below  int       `json:"below"` // values under Edges[0]
	Above  int       `json:"above"` // values over Edges[Bins]
	Log    bool      `json:"log"`   // the edges are spaced by a constant factor, not a constant step
}

// Spread is how many robust standard deviations (1.4826 × the median
// absolute deviation, else the interquartile range ÷ 1.349) each side of
// the median the histogram's range reaches.
const Spread = 4

// NewHistogram bins vals between robust ends, so that no few ballots,
// however extreme, squash the rest into one bin, whatever the number of
// ballots: the range is the median ± Spread robust standard deviations
// of the ballots (with measured, once known, counted as one more), its
// ends the smallest and largest ballots within that reach, widened to
// include measured.
// Ballots outside it (1e15 among answers near 500) are counted in Below
// and Above, in no bin. When every ballot and measured are positive the
// work is done on their logarithms and the bins are logarithmic (each
// edge a constant factor above the one before: predictions of a rate or
// a latency differ by factors); else linear. Non-finite values are left
// out.
func NewHistogram(vals []float64, measured *float64) Histogram {
	h := Histogram{Edges: []float64{}, Counts: []int{}}
	finite := make([]float64, 0, len(vals))
	for _, x := range vals {
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			finite = append(finite, x)
		}
	}
	if measured != nil && (math.IsInf(*measured, 0) || math.IsNaN(*measured)) {
		measured = nil
	}
	if len(finite) == 0 && measured == nil {
		return h
	}
	sorted := slices.Clone(finite)
	slices.Sort(sorted)
	basis := slices.Clone(sorted)
	if measured != nil {
		basis = append(basis, *measured)
		slices.Sort(basis)
	}
	h.Log = basis[0] > 0
	// u maps a value into the space the range is worked out in.
	u := func(x float64) float64 { return x }
	if h.Log {
		u = math.Log
	}
	us := make([]float64, len(basis))
	for i, x := range basis {
		us[i] = u(x)
	}
	mid, s := robustSpread(us)
	// Halves, so that a reach near ±1.7e308 cannot overflow.
	reachLo, reachHi := 2*(mid/2-Spread*s/2), 2*(mid/2+Spread*s/2)
	// The ends are the smallest and largest ballots within reach (the
	// median's ballot always is), widened to include measured.
	var lo, hi float64
	found := false
	for _, x := range sorted {
		if ux := u(x); ux >= reachLo && ux <= reachHi {
			if !found {
				lo, found = x, true
			}
			hi = x
		}
	}
	switch {
	case !found && measured != nil:
		lo, hi = *measured, *measured
	case !found: // cannot be: at least half the ballots are within reach
		lo, hi = sorted[0], sorted[len(sorted)-1]
	}
	if measured != nil {
		lo, hi = math.Min(lo, *measured), math.Max(hi, *measured)
	}
	if lo == hi {
		if h.Log {
			lo, hi = lo/1.5, hi*1.5
		} else {
			d := math.Max(math.Abs(lo)*0.1, 0.5)
			lo, hi = lo-d, hi+d
		}
	}
	h.Edges = make([]float64, Bins+1)
	for i := range h.Edges {
		f := float64(i) / Bins
		if h.Log {
			h.Edges[i] = math.Exp(math.Log(lo)*(1-f) + math.Log(hi)*f)
		} else {
			h.Edges[i] = lo*(1-f) + hi*f
		}
	}
	h.Edges[0], h.Edges[Bins] = lo, hi
	h.Counts = make([]int, Bins)
	for _, x := range sorted {
		switch {
		case x < lo:
			h.Below++
		case x > hi:
			h.Above++
		default:
			// Bin i holds [Edges[i], Edges[i+1]); the last also its top edge.
			i, found := slices.BinarySearch(h.Edges, x)
			if !found {
				i--
			}
			h.Counts[min(max(i, 0), Bins-1)]++
		}
	}
	return h
}

// robustSpread returns the median of sorted and a robust standard
// deviation of it: 1.4826 × the median absolute deviation from the
// median, or when that is 0 (more than half the values equal) the
// interquartile range ÷ 1.349, or when that is 0 too, 0. Neither moves
// however far a minority of the values lies.
func robustSpread(sorted []float64) (mid, s float64) {
	mid = median(sorted)
	dev := make([]float64, len(sorted))
	for i, x := range sorted {
		dev[i] = math.Abs(x/2-mid/2) * 2
	}
	slices.Sort(dev)
	if mad := median(dev); mad > 0 {
		return mid, 1.4826 * mad
	}
	n := len(sorted)
	q1, q3 := median(sorted[:n/2]), median(sorted[(n+1)/2:])
	if n < 4 || !(q3 > q1) {
		return mid, 0
	}
	return mid, (q3/2 - q1/2) * 2 / 1.349
}

// median is the middle value of sorted, or the mean of the two middle
// values; 0 for none.
func median(sorted []float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return sorted[n/2]
	}
	return sorted[n/2-1]/2 + sorted[n/2]/2
}
