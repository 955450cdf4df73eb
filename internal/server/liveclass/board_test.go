package liveclass

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"kvlab/internal/server/guard"
)

// TestRoomBoardBoundsAndRemove: a share with a rate or latency past its
// physical bound is refused naming the field; the presenter (and only
// the presenter) removes an entry, which then leaves the board.
func TestRoomBoardBoundsAndRemove(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Guard = guard.New(guard.Config{Token: "sekrit"}) })
	code, secret := r.open(t)
	bench, err := os.ReadFile("../../classroom/testdata/bench.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ old, new, field string }{
		{`"ops_per_sec": 4527.2088648182225`, `"ops_per_sec": 1.7e308`, "result.ops_per_sec"},
		{`"ops_per_sec": 4527.2088648182225`, `"ops_per_sec": -3`, "result.ops_per_sec"},
		{`"p99_ns": 447128`, `"p99_ns": 9000000000000000000`, "result.latency.put.p99_ns"},
	} {
		body := `{"result":` + strings.Replace(string(bench), c.old, c.new, 1) + `}`
		st, m := r.call(t, "POST", "/api/rooms/"+code+"/share", body)
		if st != http.StatusBadRequest || !strings.Contains(str(m, "error"), c.field+" ") || !strings.Contains(str(m, "error"), "must be between 0 and") {
			t.Errorf("share with %s: %d %v, want 400 naming %s and its bounds", c.new, st, m, c.field)
		}
	}
	st, m := r.call(t, "POST", "/api/rooms/"+code+"/share", `{"result":`+string(bench)+`,"label":"prank"}`)
	if st != http.StatusCreated {
		t.Fatalf("share: %d %v", st, m)
	}
	id := int64(num(m, "id"))
	del := fmt.Sprintf("/api/rooms/%s/board/%d", code, id)
	for _, body := range []string{`{}`, `{"token":"sekrit"}`, `{"presenter":"wrong"}`} {
		if st, m := r.call(t, "DELETE", del, body); st != http.StatusForbidden {
			t.Errorf("DELETE %s %s: %d %v, want 403", del, body, st, m)
		}
	}
	if st, m := r.call(t, "DELETE", del, `{"presenter":"`+secret+`"}`); st != http.StatusOK || int64(num(m, "removed")) != id {
		t.Fatalf("the presenter's DELETE %s: %d %v, want 200", del, st, m)
	}
	if _, b := r.call(t, "GET", "/api/rooms/"+code+"/board?measure=always_ops_per_sec", ""); len(b["points"].([]any)) != 0 {
		t.Errorf("board after the removal: %v, want no points", b)
	}
	if st, m := r.call(t, "DELETE", del, `{"presenter":"`+secret+`"}`); st != http.StatusNotFound {
		t.Errorf("removing it again: %d %v, want 404", st, m)
	}
	if st, _ := r.call(t, "DELETE", "/api/rooms/"+code+"/board/x", `{"presenter":"`+secret+`"}`); st != http.StatusBadRequest {
		t.Errorf("DELETE of board entry x: %d, want 400", st)
	}
}
