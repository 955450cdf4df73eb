package liveclass

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"kvlab/harness"
)

// A probe's public form, which the harness makes beside its JSON and
// the runner records and sends in room mode, hides what Redact hides
// from a shared result: decoded, the two are the same object, with the
// conditions and without host and dir. A bench result has no public
// form of its own: it names nothing, and Redact leaves it as it is.
func TestPublicFormIsRedacted(t *testing.T) {
	exec := func(line string) harness.Output {
		sp, err := harness.ParseSpec(line, harness.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		o, err := harness.ExecOutput(context.Background(), sp, harness.Env{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return o
	}
	probe := exec("probe -ops 20 -duration 50ms")
	var redacted, public map[string]any
	if err := json.Unmarshal(Redact(probe.JSON), &redacted); err != nil {
		t.Fatal(err)
	}
	pub := probe.Public()
	if err := json.Unmarshal(pub.JSON, &public); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(public, redacted) {
		t.Errorf("probe's public form %s,\nwant what Redact makes of it %s", pub.JSON, Redact(probe.JSON))
	}
	if _, ok := public["host"]; ok || public["dir"] != nil || public["fs"] == nil || public["kind"] != "probe" {
		t.Errorf("probe's public form %s, want its conditions without host and dir", pub.JSON)
	}
	if string(pub.Head.Probe) != string(pub.JSON) || pub.Head.Public != nil {
		t.Errorf("public probe's head: probe %s public %s, want the public result as its conditions", pub.Head.Probe, pub.Head.Public)
	}
	bench := exec("bench -engine null -ops 50 -warmup 0")
	if bench.Head.Public != nil || string(bench.Public().JSON) != string(bench.JSON) || string(Redact(bench.JSON)) != string(bench.JSON) {
		t.Errorf("bench result: public form %s, want the result itself %s", bench.Public().JSON, bench.JSON)
	}
}
