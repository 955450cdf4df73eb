package harness

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"kvlab/engine"
	"kvlab/engine/crashtest"
)

// The crash tools' verdicts: each clause of ok is needed (a report that
// breaks only it is not ok, and the table says BROKEN), -points honours
// -seed and -write-buffer, and a cancelled run is never ok.

// TestCrashVerdictClauses breaks one clause of each verdict at a time: a
// verdict that dropped the clause would call the report ok.
func TestCrashVerdictClauses(t *testing.T) {
	points := []struct {
		name   string
		break_ func(r *crashtest.PointsReport)
	}{
		{"lost", func(r *crashtest.PointsReport) { r.Lost = 1 }},
		{"corrupt", func(r *crashtest.PointsReport) { r.Corrupt = 1 }},
		{"unwritten", func(r *crashtest.PointsReport) { r.Unwritten = 1 }},
		{"failed reopens", func(r *crashtest.PointsReport) { r.Failed = 1 }},
		{"inconsistent", func(r *crashtest.PointsReport) { r.Inconsistent = 1 }},
		{"undetected damage", func(r *crashtest.PointsReport) { r.Undetected = 1 }},
		{"a torn atomic batch", func(r *crashtest.PointsReport) { r.TornBatches = 1 }},
	}
	if (crashtest.PointsReport{}).OK() != true {
		t.Fatal("an empty points report is not ok")
	}
	for _, c := range points {
		var r crashtest.PointsReport
		c.break_(&r)
		if r.OK() {
			t.Errorf("-points: a report with %s is ok", c.name)
		}
	}

	good := crashtest.SyncFailReport{FirstError: "EIO", Tried: 10, SameError: 10, DurableSeqAtFailure: 5, DurableSeqAfter: 5}
	if !good.OK() {
		t.Fatal("a sticky sync failure report is not ok")
	}
	fails := []struct {
		name   string
		break_ func(r *crashtest.SyncFailReport)
	}{
		{"no failure seen", func(r *crashtest.SyncFailReport) { r.FirstError = "" }},
		{"a Put acknowledged after", func(r *crashtest.SyncFailReport) { r.AckedAfter = 1 }},
		{"a Put refused with another error", func(r *crashtest.SyncFailReport) { r.SameError = 9 }},
		{"DurableSeq moved", func(r *crashtest.SyncFailReport) { r.DurableSeqAfter = 6 }},
		{"a durable write lost", func(r *crashtest.SyncFailReport) { r.Lost = 1 }},
		{"an undurable write returned", func(r *crashtest.SyncFailReport) { r.ReturnedUndurable = 1 }},
		{"the reopen failed", func(r *crashtest.SyncFailReport) { r.ReopenError = "boom" }},
	}
	for _, c := range fails {
		r := good
		c.break_(&r)
		if r.OK() {
			t.Errorf("-fail-sync: a report with %s is ok", c.name)
		}
		res := &CrashResult{Spec: "crash -fail-sync 1000", OK: r.OK(), SyncFailure: &r}
		var b strings.Builder
		if err := Write(&b, "table", res); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "sticky error BROKEN") {
			t.Errorf("-fail-sync with %s: the table does not say BROKEN:\n%s", c.name, b.String())
		}
	}

	trials := []struct {
		name   string
		break_ func(r *crashtest.Report)
	}{
		{"lost", func(r *crashtest.Report) { r.Lost = 1 }},
		{"lost written", func(r *crashtest.Report) { r.LostWritten = 1 }},
		{"corrupt", func(r *crashtest.Report) { r.Corrupt = 1 }},
		{"unwritten", func(r *crashtest.Report) { r.Unwritten = 1 }},
		{"failed reopens", func(r *crashtest.Report) { r.Failed = 1 }},
	}
	for _, c := range trials {
		var r crashtest.Report
		c.break_(&r)
		if r.OK() {
			t.Errorf("trials: a report with %s is ok", c.name)
		}
	}
}

// TestCrashPointsHonoursSeedAndWriteBuffer: -seed draws another workload
// and -write-buffer changes what reaches the filesystem; a -points that
// ignored either would give the same enumeration.
func TestCrashPointsHonoursSeedAndWriteBuffer(t *testing.T) {
	base := "crash -sync batch:16 -power -power-mode reorder -points"
	counts := func(line string) string {
		r := execAs[*CrashResult](t, line)
		if !r.OK {
			t.Errorf("%s: not ok: %v", line, r.CrashPoints.Findings)
		}
		// What the workload fixes: the points and the writes acknowledged
		// over them (which points lose what also depends on the cuts'
		// random choices).
		b, _ := json.Marshal([]any{r.CrashPoints.Points, r.Writes, r.DurableAcked})
		return string(b)
	}
	one, two, buffered := counts(base+" -seed 1"), counts(base+" -seed 2"), counts(base+" -seed 1 -write-buffer 300")
	if one == two {
		t.Errorf("-seed 1 and -seed 2 enumerate alike (%s): the seed is not used", one)
	}
	if one == buffered {
		t.Errorf("-write-buffer 300 enumerates as no buffer (%s): the buffer is not used", one)
	}
}

// TestCrashCancelledIsNotOK: a run stopped before its end is cancelled and
// not ok, whatever it saw before the stop: the figures cover part of the
// work, and the verdict cannot speak for the rest.
func TestCrashCancelledIsNotOK(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := engine.ParseSync("batch:16")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"crash -sync batch:16 -power -power-mode reorder -points", "crash -sync batch:16 -power -trials 3"} {
		s, err := ParseSpec(line, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		var r *CrashResult
		if s.Points {
			r, err = pointsLine(ctx, s, p, engine.PowerReorder)
		} else {
			r, err = crashLine(ctx, s, t.TempDir(), Env{})
		}
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if !r.Cancelled || r.OK {
			t.Errorf("%s, cancelled before it began: cancelled %v, ok %v; want true, false", line, r.Cancelled, r.OK)
		}
		var b strings.Builder
		if err := Write(&b, "table", r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "CANCELLED") || !strings.Contains(b.String(), "invariant NOT DECIDED") {
			t.Errorf("%s, cancelled: the table does not say so, or says HELD:\n%s", line, b.String())
		}
	}
}

// TestCrashPointsRepeats runs crash -points three times with one seed
// under the policies whose points lose acknowledged writes (so that what
// a cut keeps of unsynced data matters) and compares the whole verdicts:
// a seed must name one enumeration. A power cut that met the files in
// the order of a map, each drawing its share of the unsynced data from
// the one generator, gave different by_lost_acked from run to run.
func TestCrashPointsRepeats(t *testing.T) {
	for _, line := range []string{
		"crash -sync none -power -power-mode prefix -points -seed 3",
		"crash -sync none -power -power-mode reorder -points -seed 3",
		"crash -sync periodic:10ms -power -power-mode prefix -points -seed 3",
		"crash -sync batch:16 -power -power-mode pages -points -seed 3 -write-buffer 300",
		"crash -sync always -power -power-mode dirent -points -seed 3",
		// group: its flusher records how far the segment is synced before
		// it wakes the waiting Put, which then decides whether to write a
		// sync mark (TestGroupSyncedRecordedBeforeTheWake).
		"crash -sync group -power -power-mode prefix -points -seed 3",
	} {
		first, err := json.Marshal(execJSON(t, line))
		if err != nil {
			t.Fatal(err)
		}
		for run := 2; run <= 3; run++ {
			again, err := json.Marshal(execJSON(t, line))
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(first) {
				t.Errorf("%s: run %d gave\n%s\nwhere run 1 gave\n%s", line, run, again, first)
				break
			}
		}
	}
}
