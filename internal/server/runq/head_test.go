package runq

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"kvlab/harness"
	"kvlab/harness/calc"
	"kvlab/harness/script"
	"kvlab/internal/archive"
)

// headCases are results of every kind the harness makes: real lines
// where they are quick, and typed values for the ones that would take a
// re-executed binary (crash) or a peer (a replication model).
func headCases(t *testing.T) map[string]harness.Output {
	t.Helper()
	out := map[string]harness.Output{}
	for name, line := range map[string]string{
		"bench":           "bench -engine null -ops 50 -warmup 0",
		"bench -repeat":   "bench -engine null -ops 50 -warmup 0 -repeat 2",
		"bench two":       "bench -engine null,kv -sync none -ops 50 -warmup 0",
		"sweep":           "sweep -engine null -threads 1,2 -ops 50 -warmup 0",
		"probe":           "probe -ops 20 -duration 50ms",
		"model":           "model -sync batch:8 -t-write 2us -t-fsync 1ms",
		"script":          "bench -script cart -engine null -items 5 -users 10 -ops 20",
		"script two":      "bench -script cart -engine null,kv -index ordered -sync none -items 5 -users 10 -ops 20",
		"bench workloads": "bench -engine null -workload readrandom -ops 50 -warmup 0",
	} {
		sp, err := harness.ParseSpec(line, harness.DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		o, err := harness.ExecOutput(context.Background(), sp, harness.Env{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out[name] = o
	}
	for name, v := range map[string]any{
		"crash": &harness.CrashResult{Kind: "crash", Spec: "crash -sync always -trials 1", Sync: "always", Trials: 1, OK: true,
			CrashPoints: &harness.CrashPoints{Workload: "three puts"}},
		"model replication": &harness.ModelResult{Kind: "model", Source: "given",
			Replication: []harness.ReplicationPrediction{{Engine: "etcd", Sync: "always", Replicas: 3}}},
		"model periodic": &harness.ModelResult{Kind: "model", Prediction: calc.Prediction{Sync: "periodic:10ms"}, Source: "given"},
		"script result":  []*harness.ScriptResult{{Kind: "script", Engine: "kv", Sync: "none", Result: script.Result{Units: 3}}},
	} {
		o, err := harness.Encode(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = o
	}
	return out
}

// The head the harness makes beside a result says what the result's JSON
// says: a run the runner files from the head (describe) has the filter
// fields and conditions of one filed by decoding the JSON
// (archive.Run.FillFromResult, what the command line does), and the
// head's kind is the JSON's, for every kind of result and for its
// public form. A head that drifted from its JSON would file runs under
// the wrong engine or conditions.
func TestHeadAgreesWithJSON(t *testing.T) {
	sp, err := harness.ParseSpec("bench -engine null", harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range headCases(t) {
		for _, o := range []harness.Output{o, o.Public()} {
			fromJSON := archive.Run{Result: o.JSON, Version: "v", Host: "h"}
			fromJSON.FillFromResult()
			fromHead := archive.Run{Result: o.JSON, Version: "v", Host: "h"}
			describe(&fromHead, sp, o.Head)
			if fromJSON.Kind != o.Head.Kind || o.Head.Kind == "" {
				t.Errorf("%s: head's kind %q, JSON's %q", name, o.Head.Kind, fromJSON.Kind)
			}
			fromHead.Kind, fromHead.SpecFull = fromJSON.Kind, fromJSON.SpecFull
			if !reflect.DeepEqual(fromJSON, fromHead) {
				t.Errorf("%s: filed from the head as engine %q sync %q workload %q probe %s;\nfrom the JSON as engine %q sync %q workload %q probe %s\n(JSON %.300s)",
					name, fromHead.Engine, fromHead.Sync, fromHead.Workload, fromHead.Probe,
					fromJSON.Engine, fromJSON.Sync, fromJSON.Workload, fromJSON.Probe, o.JSON)
			}
		}
	}
}

// The JSON beside a head is exactly what the harness's Exec returns (and
// -format json prints): Encode adds a head, never changes the bytes.
func TestOutputJSONIsEncodedResult(t *testing.T) {
	v := &harness.BenchResult{Kind: "bench", Engine: "kv", Sync: "always", Workload: "fillrandom",
		Probe: &harness.ProbeBrief{FS: "ext4", Device: "vda", Cores: 2, Go: "go1"}}
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	o, err := harness.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(o.JSON) != string(want) {
		t.Errorf("Encode's JSON %s, want json.Marshal's %s", o.JSON, want)
	}
	if o.Head.Public != nil || string(o.Public().JSON) != string(want) {
		t.Errorf("a bench result's public form %s, want the result itself", o.Public().JSON)
	}
	if _, err := harness.Encode(map[string]int{"x": 1}); err == nil {
		t.Error("Encode of a value that is no result: no error")
	}
}
