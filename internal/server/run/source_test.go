package run

import (
	"context"
	"strings"
	"testing"

	"kvlab/harness"
	_ "kvlab/harness/mine" // registers -engine mine
)

// A room's run is refused, whoever asks: the presenter's (a run message
// with "room") and a follower's.
func TestMineRefusedInARoom(t *testing.T) {
	svc := NewService(context.Background(), Config{})
	lines := []string{"bench -engine kv -ops 10", "bench -engine mine -ops 100"}
	var specs []*harness.Spec
	for _, l := range lines {
		sp, err := harness.ParseSpec(l, harness.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, sp)
	}
	for _, tt := range []struct {
		name string
		o    *Owner
		m    Msg
	}{
		{"presenter", svc.Owner(nil, "127.0.0.1", "", false), Msg{Room: "ABCD"}},
		{"follower", svc.Owner(nil, "127.0.0.1", "", true), Msg{}},
	} {
		bad, err := tt.o.checkSource(tt.m, specs, nil)
		if bad != 1 || err == nil || !strings.Contains(err.Error(), "a room's runs") {
			t.Errorf("%s: line %d, error %v; want line 1 refused for a room", tt.name, bad, err)
		}
	}
	if bad, err := svc.Owner(nil, "127.0.0.1", "", false).checkSource(Msg{}, specs, nil); bad != -1 || err != nil {
		t.Errorf("outside a room: line %d, error %v; want it allowed", bad, err)
	}
}

// A server that serves others runs no reader's code, and says why.
func TestMineRefusedWhereTheServerSaysSo(t *testing.T) {
	svc := NewService(context.Background(), Config{NoReaderCode: "this server has a token"})
	sp, err := harness.ParseSpec("bench -engine mine -ops 100", harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	bad, err := svc.Owner(nil, "127.0.0.1", "", false).checkSource(Msg{Source: "package x"}, []*harness.Spec{sp}, nil)
	if bad != 0 || err == nil || !strings.Contains(err.Error(), "this server has a token") {
		t.Errorf("line %d, error %v; want line 0 refused with the server's reason", bad, err)
	}
}

// readerScript is a reader's own workload script, as a page's script
// editor sends it.
const readerScript = `return { name = "mine", run = function(ctx) kv.put("n", "x"); local v = kv.get("n"); assert(v == nil or v == "x") end }`

// A room's run of a reader's script is refused, whoever asks, naming the
// line; the lesson's own script beside it is not what is refused.
func TestScriptMineRefusedInARoom(t *testing.T) {
	svc := NewService(context.Background(), Config{})
	var specs []*harness.Spec
	for _, l := range []string{"bench -script cart -engine kv -ops 10", "bench -script mine -engine kv -ops 10"} {
		sp, err := harness.ParseSpec(l, harness.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, sp)
	}
	for _, follower := range []bool{false, true} {
		c := svc.Owner(nil, "127.0.0.1", "", follower)
		m := Msg{Script: readerScript}
		if !c.follower {
			m.Room = "ABCD"
		}
		bad, err := c.checkSource(m, specs, nil)
		if bad != 1 || err == nil || !strings.Contains(err.Error(), "-script mine") || !strings.Contains(err.Error(), "a room's runs") {
			t.Errorf("follower %v: line %d, error %v; want line 1 refused for a room", c.follower, bad, err)
		}
	}
	if bad, err := svc.Owner(nil, "127.0.0.1", "", false).checkSource(Msg{Script: readerScript}, specs, nil); bad != -1 || err != nil {
		t.Errorf("outside a room: line %d, error %v; want it allowed", bad, err)
	}
}
