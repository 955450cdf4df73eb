package peers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"kvlab/harness"
)

// TestScriptRefusalsPeers: a script that ranges is refused on the
// engines that cannot read keys in order (Redis and kvserver), before
// anything runs or connects, naming the engine, the operation and the
// engines that can; -index is kv's alone.
func TestScriptRefusalsPeers(t *testing.T) {
	lines := map[string]string{
		"bench -script cart -engine redis -ops 10":                      "-engine redis cannot run kv.range",
		"bench -script scan -engine kv,kvserver -index ordered -ops 10": "-engine kvserver cannot run kv.scan",
		"bench -script cart -engine pebble -index ordered":              "-index ordered: applies to -engine kv only",
	}
	for line, want := range lines {
		_, err := harness.Exec(context.Background(), line, harness.Env{Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "pebble") && strings.Contains(want, "cannot run") {
			t.Errorf("%s: err = %v, want it to contain %q and name the engines that can", line, err, want)
		}
	}
}

// TestScriptOnOrderedPeers runs the cart (ranges, puts, deletes) on
// bbolt, pebble and sqlite, and the batch script on pebble, whose mput
// is a native atomic batch.
func TestScriptOnOrderedPeers(t *testing.T) {
	for _, line := range []string{
		"bench -script cart -engine bbolt,pebble,sqlite -sync none -ops 60 -items 5 -users 10",
		"bench -script batch -engine pebble,bbolt -sync none -ops 40 -items 100 -batch 8",
	} {
		out, err := harness.Exec(context.Background(), line, harness.Env{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var rs []harness.ScriptResult
		if err := json.Unmarshal(out, &rs); err != nil {
			t.Fatal(err)
		}
		for _, r := range rs[1:] {
			if r.Units != int64(map[bool]int{true: 40, false: 60}[strings.Contains(line, "batch")]) {
				t.Errorf("%s on %s: %d units", r.Script, r.Engine, r.Units)
			}
			if r.Script == "cart" && (r.ByOp["range"].Calls == 0 || !r.Native["range"]) {
				t.Errorf("cart on %s: range %+v native %v; want native ranges", r.Engine, r.ByOp["range"], r.Native["range"])
			}
			if r.Script == "batch" && (!r.Native["mput"] || r.ByOp["mput"].Ops != 8*r.ByOp["mput"].Calls) {
				t.Errorf("batch on %s: native %v, mput %+v", r.Engine, r.Native, r.ByOp["mput"])
			}
		}
	}
}
