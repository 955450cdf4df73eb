package lessons_test

// Lesson 7's claims about the crash-point enumeration (crash -points),
// checked on the results of its cell.

import (
	"strings"
	"testing"
)

// Lesson 7, "A power cut after every operation": after every point of
// every line the invariant held and no damaged record went unnoticed;
// always survives every point whole; batch:16 loses at most 15 at one
// point, and a point right after its fdatasync does lose them all; none
// loses more at its worst point than batch:16 can, yet survives a larger
// share of its points.
func TestCrashPointsClaims(t *testing.T) {
	l := lessonByPrefix(t, "07-")
	body := flat(section(t, l, "A power cut after every operation"))
	for _, want := range []string{"goes on acknowledging Puts into its write buffer", "none survives an even larger share of its points than batch:16, yet its worst point loses more", "A crash point is an operation, not a stretch of time"} {
		if !strings.Contains(body+" "+flat(quizByID(t, l, "points-vs-moments").Explain), want) {
			t.Errorf("lesson 7's crash-point section does not say %q", want)
		}
	}
	rs := cellResults(t, "07-", "points")
	if len(rs) != 4 {
		t.Fatalf("points cell: %d results, want 4 (always, batch:16 and none at every point, batch:16 at random moments)", len(rs))
	}
	for i, r := range rs[:3] {
		if ok, _ := r.(map[string]any)["ok"].(bool); !ok {
			t.Errorf("points line %d: ok false: a point broke the invariant", i)
		}
		for _, f := range []string{"lost", "corrupt", "unwritten", "crash_points.undetected_damage", "crash_points.inconsistent"} {
			if n := num(t, r, f); n != 0 {
				t.Errorf("points line %d: %s %v, want 0", i, f, n)
			}
		}
		if d := num(t, r, "crash_points.damaged"); i < 2 && d == 0 {
			t.Errorf("points line %d: no crash image was checked with a damaged record", i)
		}
	}
	always, batch, none := rs[0], rs[1], rs[2]
	if p, in := num(t, always, "crash_points.points"), num(t, always, "crash_points.intact"); in != p {
		t.Errorf("always: %v of %v points intact, want every one", in, p)
	}
	if m := num(t, batch, "crash_points.max_lost_acked"); m != 15 {
		t.Errorf("batch:16: at most %v acknowledged writes lost at one point; the lesson says a point right after an fdatasync costs the next 15", m)
	}
	if nm, bm := num(t, none, "crash_points.max_lost_acked"), num(t, batch, "crash_points.max_lost_acked"); nm <= bm || nm < 20 || nm > 30 {
		t.Errorf("none lost at most %v at one point, batch:16 %v; the lesson says none's worst point is the worse, about 25 writes: the stretch between two compactions", nm, bm)
	}
	share := func(r any) float64 { return num(t, r, "crash_points.intact") / num(t, r, "crash_points.points") }
	if share(none) <= share(batch) {
		t.Errorf("none survives %.2f of its points, batch:16 %.2f; the lesson says none survives the larger share", share(none), share(batch))
	}
	// "Most points lose nothing, so the loss per point is several times
	// smaller" than per random cut.
	if share(batch) <= 0.5 {
		t.Errorf("batch:16 survives %.2f of its points; the lesson says most", share(batch))
	}
	random := rs[3]
	if ok, _ := random.(map[string]any)["ok"].(bool); !ok || num(t, random, "lost") != 0 {
		t.Errorf("batch:16 at random moments: ok %v, lost %v", ok, num(t, random, "lost"))
	}
	perCut := num(t, random, "lost_acked") / float64(len(random.(map[string]any)["per_trial"].([]any)))
	perPoint := num(t, batch, "lost_acked") / num(t, batch, "crash_points.points")
	t.Logf("batch:16: %.2f lost per random cut, %.2f per crash point", perCut, perPoint)
	if perCut < 2*perPoint {
		t.Errorf("batch:16: %.2f acknowledged writes lost per random cut, %.2f per crash point; the lesson says several times more per random cut", perCut, perPoint)
	}
	t.Logf("intact: always %v/%v, batch:16 %v/%v (max %v), none %v/%v (max %v)",
		num(t, always, "crash_points.intact"), num(t, always, "crash_points.points"),
		num(t, batch, "crash_points.intact"), num(t, batch, "crash_points.points"), num(t, batch, "crash_points.max_lost_acked"),
		num(t, none, "crash_points.intact"), num(t, none, "crash_points.points"), num(t, none, "crash_points.max_lost_acked"))
}

// Lesson 7, "When fdatasync fails", on the fsync-fails cell: after the
// failed fdatasync no Put is acknowledged though the fault is gone, each
// is refused with the first error, DurableSeq stays; the reopen in the
// same boot returns every durable write and none of the others; always
// loses nothing acknowledged, batch:16 the 15 since its last fdatasync,
// periodic:10ms more than that, after a few good timer syncs.
func TestFsyncFailsCellClaims(t *testing.T) {
	rs := cellResults(t, "07-", "fsync-fails")
	if len(rs) != 3 {
		t.Fatalf("fsync-fails: %d results, want 3 (always, batch:16, periodic:10ms)", len(rs))
	}
	for i, r := range rs {
		if ok, _ := r.(map[string]any)["ok"].(bool); !ok {
			t.Errorf("fsync-fails line %d: ok false", i)
		}
		if a, s := num(t, r, "sync_failure.acked_after"), num(t, r, "sync_failure.same_error_after"); a != 0 || s != 10 {
			t.Errorf("fsync-fails line %d: %v Puts acknowledged after the failure and %v refused with the first error; the lesson says 0 of 10 and all 10", i, a, s)
		}
		if at, after := num(t, r, "sync_failure.durable_seq_at_failure"), num(t, r, "sync_failure.durable_seq_after"); at != after {
			t.Errorf("fsync-fails line %d: DurableSeq moved from %v to %v after the failure", i, at, after)
		}
		if l, u := num(t, r, "lost"), num(t, r, "sync_failure.returned_undurable"); l != 0 || u != 0 {
			t.Errorf("fsync-fails line %d: the reopen lost %v durable writes and returned %v that no fdatasync covered; the lesson says 0 and 0", i, l, u)
		}
	}
	if l := num(t, rs[0], "lost_acked"); l != 0 {
		t.Errorf("always lost %v acknowledged writes to the failure; the lesson says none", l)
	}
	if l := num(t, rs[1], "lost_acked"); l != 15 {
		t.Errorf("batch:16 lost %v acknowledged writes to the failure; the lesson says the 15 since its last fdatasync", l)
	}
	p := rs[2]
	if d := num(t, p, "durable_acked"); d == 0 {
		t.Errorf("periodic:10ms: no timer fdatasync succeeded before the fault; the lesson says a few did")
	}
	if l := num(t, p, "lost_acked"); l <= 15 {
		t.Errorf("periodic:10ms lost %v acknowledged writes, no more than batch:16; the lesson's quiz expects the most", l)
	}
	t.Logf("periodic:10ms lost %v acknowledged writes, %.1f ms of Puts", num(t, p, "lost_acked"), num(t, p, "lost_acked")*num(t, p, "sync_failure.put_mean_ns")/1e6)
}
