package harness

import (
	"strings"
	"testing"
)

// crashPointsFields are the contract fields of a crash -points result.
var crashPointsFields = []string{"crash_points.workload", "crash_points.points", "crash_points.intact",
	"crash_points.by_lost_acked", "crash_points.max_lost_acked", "crash_points.damaged", "crash_points.undetected_damage", "crash_points.inconsistent"}

// TestCrashPoints runs crash -points under three policies and checks what
// the enumeration promises: every point keeps the invariant; always, whose
// every acknowledged write is durable, survives every point whole; batch:N
// loses at most N-1 acknowledged writes at any point, and some points do
// lose them; and the counts per point add up to the points.
func TestCrashPoints(t *testing.T) {
	for _, tt := range []struct {
		sync    string
		maxLoss float64 // the most one point may lose
		loses   bool    // some point must lose an acknowledged write
	}{
		{"always", 0, false},
		{"batch:16", 15, true},
		{"periodic:10ms", pointsTick, true}, // the timer fires every pointsTick writes
	} {
		line := "crash -sync " + tt.sync + " -power -power-mode reorder -points"
		v := execJSON(t, line)
		requireFields(t, line, v, append(crashFields[:9:9], crashPointsFields...))
		get := func(path string) float64 { return numAt(v, path) }
		if ok, _ := lookup(v, "ok"); ok != true {
			f, _ := lookup(v, "crash_points.findings")
			t.Errorf("%s: ok = %v, want true (findings %v)", line, ok, f)
		}
		points, intact := get("crash_points.points"), get("crash_points.intact")
		if points < 50 {
			t.Errorf("%s: %v crash points, want one per filesystem operation of the workload (at least 50)", line, points)
		}
		by, _ := lookup(v, "crash_points.by_lost_acked")
		var sum, lost float64
		for n, c := range by.([]any) {
			sum += c.(float64)
			lost += float64(n) * c.(float64)
		}
		if sum != points || by.([]any)[0].(float64) != intact {
			t.Errorf("%s: by_lost_acked %v adds up to %v points with %v intact, want %v points, %v intact", line, by, sum, by.([]any)[0], points, intact)
		}
		if got := get("lost_acked"); got != lost {
			t.Errorf("%s: lost_acked %v, want the sum over by_lost_acked, %v", line, got, lost)
		}
		if m := get("crash_points.max_lost_acked"); m > tt.maxLoss || m != float64(len(by.([]any))-1) {
			t.Errorf("%s: max_lost_acked %v with by_lost_acked %v, want at most %v", line, m, by, tt.maxLoss)
		}
		if tt.loses == (intact == points) {
			t.Errorf("%s: %v of %v points intact; want some points to lose acknowledged writes: %v", line, intact, points, tt.loses)
		}
		if d := get("crash_points.damaged"); d == 0 && tt.sync == "always" {
			t.Errorf("%s: no crash image was checked with damage", line)
		}
		if tr := get("trials"); tr != 0 {
			t.Errorf("%s: trials %v, want 0 (-points runs no trials)", line, tr)
		}
	}
	// The table names the points and the workload.
	r := execAs[*CrashResult](t, "crash -sync batch:16 -power -power-mode reorder -points")
	var b strings.Builder
	if err := Write(&b, "table", r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"after each of the", "filesystem operations of a fixed workload (120 writes", "any subset of the unsynced 512 B sectors", "acknowledged writes lost per point: 0 at", "invariant HELD"} {
		if !strings.Contains(out, want) {
			t.Errorf("crash -points table does not say %q:\n%s", want, out)
		}
	}
}

// syncFailureFields are the contract fields of a crash -fail-sync result.
var syncFailureFields = []string{"sync_failure.fail_after", "sync_failure.acked", "sync_failure.durable_acked", "sync_failure.put_mean_ns",
	"sync_failure.failed_sync", "sync_failure.first_error", "sync_failure.tried_after", "sync_failure.acked_after", "sync_failure.same_error_after",
	"sync_failure.durable_seq_at_failure", "sync_failure.durable_seq_after", "sync_failure.recovered", "sync_failure.lost",
	"sync_failure.lost_acked", "sync_failure.returned_undurable"}

// TestCrashFailSync runs crash -fail-sync under three policies: the store
// acknowledges nothing after the failed fdatasync, and the acknowledged
// writes it loses are those no fdatasync covered: none under always, the
// last 15 under batch:16, every one since the last timer sync under
// periodic.
func TestCrashFailSync(t *testing.T) {
	for _, tt := range []struct {
		sync string
		lost float64 // lost_acked; -1: at least one
	}{
		{"always", 0},
		{"batch:16", 15},
		{"periodic:10ms", -1},
	} {
		line := "crash -sync " + tt.sync + " -fail-sync 1000"
		v := execJSON(t, line)
		requireFields(t, line, v, append(crashFields[:9:9], syncFailureFields...))
		get := func(path string) float64 { return numAt(v, path) }
		if ok, _ := lookup(v, "ok"); ok != true {
			t.Errorf("%s: ok = %v, want true", line, ok)
		}
		if got := get("sync_failure.acked_after"); got != 0 || get("sync_failure.same_error_after") != 10 {
			t.Errorf("%s: %v Puts acknowledged after the failure, %v refused with the first error; want 0 and 10", line, got, get("sync_failure.same_error_after"))
		}
		lost := get("lost_acked")
		if (tt.lost >= 0 && lost != tt.lost) || (tt.lost < 0 && lost < 1) {
			t.Errorf("%s: lost_acked %v, want %v (-1: some)", line, lost, tt.lost)
		}
		if w, d := get("writes"), get("durable_acked"); lost != w-d || get("recovered") != d {
			t.Errorf("%s: writes %v, durable_acked %v, recovered %v, lost_acked %v: want every durable write back and the rest lost", line, w, d, get("recovered"), lost)
		}
	}
	r := execAs[*CrashResult](t, "crash -sync batch:16 -fail-sync 1000")
	var b strings.Builder
	if err := Write(&b, "table", r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fails with EIO", "1007 Puts acknowledged", "992 of them covered", "0 of 10 Puts acknowledged", "992 acknowledged writes back, 15 lost", "sticky error HELD"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("crash -fail-sync table does not say %q:\n%s", want, b.String())
		}
	}
}

// numAt is the number at path in decoded JSON v, or 0.
func numAt(v any, path string) float64 {
	x, _ := lookup(v, path)
	f, _ := x.(float64)
	return f
}
