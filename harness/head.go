package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// A result's head. A server that runs a line files its result in the run
// archive (by kind, engine, sync, workload and conditions) and, when it
// serves others, shows it without the machine's name. All of that is
// known where the result is encoded, so ExecOutput returns it typed,
// beside the JSON: nothing after the harness decodes the JSON again to
// find it.

// Output is one line's result: JSON, exactly what Exec returns and
// -format json prints, and its Head.
type Output struct {
	JSON json.RawMessage
	Head Head
}

// Head is what a result's JSON says of itself, typed, made from the
// value the JSON was encoded from (Encode). For an array (sweep,
// -repeat, -engine a,b, -script) each list holds the items' distinct
// non-empty values in order.
type Head struct {
	// Kind is the result's "kind": bench, probe, model, crash or script;
	// for an array the kind its items share ("" if they differ).
	Kind string
	// Engines, Syncs and Workloads are the top-level "engine", "sync"
	// and "workload" fields.
	Engines, Syncs, Workloads []string
	// Probe is the conditions the result was measured under: a bench
	// result's "probe" object (its first item's, for an array), or a
	// probe's whole result; nil when it has none.
	Probe json.RawMessage
	// Public is the result as it may be shown to others: a probe's
	// without "host" and "dir", which name the machine, its user and the
	// server's process. nil when JSON itself names nothing.
	Public json.RawMessage
}

// ExecOutput is Exec for a line already parsed (with env.Limits), with
// the result's Head beside its JSON: a caller that checked the line
// before running it (a server) runs what it checked, and parses it once.
func ExecOutput(ctx context.Context, s *Spec, env Env) (Output, error) {
	if env.Limits == (Limits{}) {
		env.Limits = DefaultLimits()
	}
	v, err := execSpec(ctx, s, env)
	if err != nil {
		return Output{}, err
	}
	return Encode(v)
}

// Public is the output as others may see it: its Head.Public in place of
// its JSON (and of its probe, for a probe result), or o itself when it
// names nothing.
func (o Output) Public() Output {
	if o.Head.Public == nil {
		return o
	}
	h := o.Head
	if h.Kind == "probe" {
		h.Probe = h.Public
	}
	h.Public = nil
	return Output{JSON: o.Head.Public, Head: h}
}

// Encode encodes a result value as Exec returns it (*BenchResult or
// []*BenchResult, *ProbeResult, *ModelResult, *CrashResult,
// []*ScriptResult) and makes its Head. Any other value is an error.
func Encode(v any) (Output, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Output{}, err
	}
	o := Output{JSON: b}
	h := &o.Head
	switch v := v.(type) {
	case *BenchResult:
		err = h.addBench([]*BenchResult{v})
	case []*BenchResult:
		err = h.addBench(v)
	case *ProbeResult:
		h.Kind, h.Probe = "probe", b
		h.Public, err = json.Marshal(publicProbe{probeValue: (*probeValue)(v)})
	case *ModelResult:
		h.Kind = "model"
		h.add(&h.Syncs, v.Sync)
	case *CrashResult:
		h.Kind = "crash"
		h.add(&h.Syncs, v.Sync)
	case []*ScriptResult:
		for i, r := range v {
			h.addKind(i, r.Kind)
			h.add(&h.Engines, r.Engine)
			h.add(&h.Syncs, r.Sync)
		}
	default:
		return Output{}, fmt.Errorf("harness: a result of type %T has no head", v)
	}
	if err != nil {
		return Output{}, err
	}
	return o, nil
}

// addBench fills the head of bench results.
func (h *Head) addBench(rs []*BenchResult) error {
	for i, r := range rs {
		h.addKind(i, r.Kind)
		h.add(&h.Engines, r.Engine)
		h.add(&h.Syncs, r.Sync)
		h.add(&h.Workloads, r.Workload)
	}
	if len(rs) > 0 && rs[0].Probe != nil {
		b, err := json.Marshal(rs[0].Probe)
		if err != nil {
			return err
		}
		h.Probe = b
	}
	return nil
}

// addKind takes item i's kind: the first item's, kept while the others
// share it.
func (h *Head) addKind(i int, kind string) {
	switch {
	case i == 0:
		h.Kind = kind
	case kind != h.Kind:
		h.Kind = ""
	}
}

// add appends v to list unless it is empty or there already.
func (h *Head) add(list *[]string, v string) {
	if v != "" && !slices.Contains(*list, v) {
		*list = append(*list, v)
	}
}

// probeValue is ProbeResult's fields, without its methods.
type probeValue ProbeResult

// publicProbe encodes a probe result without host and dir: its own
// fields of those names, nil and omitted, hide the embedded ones.
type publicProbe struct {
	*probeValue
	Host *struct{} `json:"host,omitempty"`
	Dir  *struct{} `json:"dir,omitempty"`
}
