package server

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestRoomBoardBoundsAndRemove: a share with a rate or latency past its
// physical bound is refused naming the field; the presenter (and only
// the presenter) removes an entry, which then leaves the board.
func TestRoomBoardBoundsAndRemove(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Token = "sekrit" })
	ts := startServer(t, s)
	code, secret := openRoomSecret(t, ts)
	bench, err := os.ReadFile("../classroom/testdata/bench.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ old, new, field string }{
		{`"ops_per_sec": 4527.2088648182225`, `"ops_per_sec": 1.7e308`, "result.ops_per_sec"},
		{`"ops_per_sec": 4527.2088648182225`, `"ops_per_sec": -3`, "result.ops_per_sec"},
		{`"p99_ns": 447128`, `"p99_ns": 9000000000000000000`, "result.latency.put.p99_ns"},
	} {
		body := `{"result":` + strings.Replace(string(bench), c.old, c.new, 1) + `}`
		st, m := post(t, ts, "POST", "/api/rooms/"+code+"/share", body)
		if st != http.StatusBadRequest || !strings.Contains(m.str("error"), c.field+" ") || !strings.Contains(m.str("error"), "must be between 0 and") {
			t.Errorf("share with %s: %d %v, want 400 naming %s and its bounds", c.new, st, m, c.field)
		}
	}
	st, m := post(t, ts, "POST", "/api/rooms/"+code+"/share", `{"result":`+string(bench)+`,"label":"prank"}`)
	if st != http.StatusCreated {
		t.Fatalf("share: %d %v", st, m)
	}
	id := int64(m.num("id"))
	del := fmt.Sprintf("/api/rooms/%s/board/%d", code, id)
	for _, body := range []string{`{}`, `{"token":"sekrit"}`, `{"presenter":"wrong"}`} {
		if st, m := post(t, ts, "DELETE", del, body); st != http.StatusForbidden {
			t.Errorf("DELETE %s %s: %d %v, want 403", del, body, st, m)
		}
	}
	if st, m := post(t, ts, "DELETE", del, `{"presenter":"`+secret+`"}`); st != http.StatusOK || int64(m.num("removed")) != id {
		t.Fatalf("the presenter's DELETE %s: %d %v, want 200", del, st, m)
	}
	if _, b := post(t, ts, "GET", "/api/rooms/"+code+"/board?measure=always_ops_per_sec", ""); len(b["points"].([]any)) != 0 {
		t.Errorf("board after the removal: %v, want no points", b)
	}
	if st, m := post(t, ts, "DELETE", del, `{"presenter":"`+secret+`"}`); st != http.StatusNotFound {
		t.Errorf("removing it again: %d %v, want 404", st, m)
	}
	if st, _ := post(t, ts, "DELETE", "/api/rooms/"+code+"/board/x", `{"presenter":"`+secret+`"}`); st != http.StatusBadRequest {
		t.Errorf("DELETE of board entry x: %d, want 400", st)
	}
}
