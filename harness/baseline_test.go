package harness

import (
	"strings"
	"testing"
	"time"
)

// A device shared with another writer: the timed region's raw counts
// carry that writer's requests; the idle baseline just before the region
// measures its rate, and the net counts take it out, with a flag.
func TestDeviceBaselineNetsOutOtherWriters(t *testing.T) {
	// Counters as the fake device reports them, one reading per call:
	// idle start, idle end (300 ms later: 30 writes, 6 flushes by
	// someone else), region start, region end (600 ms later: the run's
	// 200 writes and 100 flushes plus the other writer's 60 and 12).
	readings := []diskCounters{
		{writes: 1000, sectorsWritten: 8000, flushes: 500, hasFlush: true},
		{writes: 1030, sectorsWritten: 8240, flushes: 506, hasFlush: true},
		{writes: 1030, sectorsWritten: 8240, flushes: 506, hasFlush: true},
		{writes: 1290, sectorsWritten: 10320, flushes: 618, hasFlush: true},
	}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []time.Duration{0, 300 * time.Millisecond, 0, 600 * time.Millisecond}
	n := 0
	w := &deviceWatch{dev: blockDevice{name: "vda"}}
	w.read = func() (diskReading, error) {
		clock = clock.Add(steps[n])
		r := diskReading{counters: readings[n], source: "fake"}
		n++
		return r, nil
	}
	slept := time.Duration(0)
	w.baseline(300*time.Millisecond, func(d time.Duration) { slept = d })
	w.start()
	w.stop()
	// The watch stamps readings with the real clock; set the intervals
	// the fake device's readings were taken at.
	w.idleFor, w.startAt, w.stopAt = 300*time.Millisecond, clock.Add(-600*time.Millisecond), clock
	d := w.result(100, 100*144)
	if slept != 300*time.Millisecond {
		t.Errorf("baseline slept %v, want 300ms", slept)
	}
	if *d.FlushRequests != 112 || *d.WriteRequests != 260 {
		t.Fatalf("raw flushes %d writes %d, want 112 and 260 (the whole device's)", *d.FlushRequests, *d.WriteRequests)
	}
	if *d.IdleFlushRequests != 6 || *d.IdleWriteRequests != 30 || d.IdleMs != 300 {
		t.Errorf("idle %d flushes %d writes over %v ms, want 6, 30, 300", *d.IdleFlushRequests, *d.IdleWriteRequests, d.IdleMs)
	}
	if *d.NetFlushRequests != 100 || *d.NetWriteRequests != 200 || *d.NetFlushesPerOp != 1 || *d.NetWriteRequestsPerOp != 2 {
		t.Errorf("net flushes %v writes %v (per op %v, %v), want 100, 200, 1, 2", *d.NetFlushRequests, *d.NetWriteRequests, *d.NetFlushesPerOp, *d.NetWriteRequestsPerOp)
	}
	if !d.OtherWriters || !strings.Contains(d.OtherWritersNote, "other writers were active") {
		t.Errorf("other_writers %v (%q), want flagged", d.OtherWriters, d.OtherWritersNote)
	}
	// A quiet baseline: net equals raw, no flag.
	q := &DeviceIO{}
	raw, flush := int64(50), int64(10)
	bytes := int64(4096)
	q.WriteRequests, q.WriteBytes, q.FlushRequests = &raw, &bytes, &flush
	same := diskCounters{writes: 7, flushes: 3, hasFlush: true}
	addBaseline(q, same, same, time.Second, time.Second, 10, 100)
	if q.OtherWriters || *q.NetFlushRequests != 10 || *q.NetFlushesPerOp != 1 {
		t.Errorf("quiet baseline: %+v, want net = raw and no flag", q)
	}
	// Another program reading: 30 reads in 300 ms of idle time are
	// about 60 of a 600 ms run's 100.
	r := &DeviceIO{}
	reads := int64(100)
	r.WriteRequests, r.WriteBytes, r.ReadRequests = &raw, &bytes, &reads
	addBaseline(r, diskCounters{reads: 5}, diskCounters{reads: 35}, 300*time.Millisecond, 600*time.Millisecond, 10, 100)
	if r.IdleReadRequests == nil || *r.IdleReadRequests != 30 || *r.NetReadRequests != 40 {
		t.Errorf("idle reads %v net %v, want 30 and 40", r.IdleReadRequests, r.NetReadRequests)
	}
}

// Other programs' share of the processors: the idle baseline reads
// /proc/stat over the same idle time the device's does; whatever ran
// then that was not this process (a busy loop, a build) is
// idle_busy_fraction. Over 300 ms on two cores (60 ticks) another
// program ran 45 ticks and this process 3: 0.75 of the machine.
func TestCPUBaselineIsOtherProgramsShare(t *testing.T) {
	readings := []cpuTicks{
		{user: 1000, idle: 5000, cores: 2, self: 100},
		{user: 1048, idle: 5012, cores: 2, self: 103}, // idle: 48 busy ticks, 3 of them ours, 12 idle
		{user: 1048, idle: 5012, cores: 2, self: 103},
		{user: 1100, idle: 5060, cores: 2, self: 150},
	}
	n := 0
	w := &cpuWatch{regionWatch: regionWatch[cpuTicks]{read: func() (cpuTicks, error) {
		r := readings[n]
		n++
		return r, nil
	}}}
	slept := time.Duration(0)
	w.baseline(300*time.Millisecond, func(d time.Duration) { slept = d })
	w.start()
	w.stop()
	w.idleFor = 300 * time.Millisecond
	u := w.result()
	if slept != 300*time.Millisecond || u.IdleMs != 300 {
		t.Errorf("slept %v, idle_ms %v, want 300 ms", slept, u.IdleMs)
	}
	if u.IdleBusyFraction == nil || *u.IdleBusyFraction != 0.75 {
		t.Errorf("idle_busy_fraction %v, want (48 - 3) / 60 = 0.75", u.IdleBusyFraction)
	}
	// Without a baseline (a run whose directory has no device): absent.
	w2 := &cpuWatch{regionWatch: regionWatch[cpuTicks]{read: w.read}}
	n = 2
	w2.start()
	w2.stop()
	if u := w2.result(); u.IdleBusyFraction != nil || u.IdleMs != 0 {
		t.Errorf("no baseline: idle_busy_fraction %v idle_ms %v, want absent", u.IdleBusyFraction, u.IdleMs)
	}
}
