package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DecodeResult turns a JSON result, as ExecSpec returns it or an archive
// keeps it, back into the value Write prints: *BenchResult or
// []*BenchResult, *ProbeResult, *ModelResult, *CrashResult or
// []*ScriptResult (bench -script), chosen by
// its "kind" field. So a stored run prints the same table it printed
// when it ran.
func DecodeResult(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("harness: empty result")
	}
	if raw[0] == '[' {
		var kinds []struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &kinds); err == nil && len(kinds) > 0 && kinds[0].Kind == "script" {
			var ss []*ScriptResult
			if err := json.Unmarshal(raw, &ss); err != nil {
				return nil, fmt.Errorf("harness: script results: %w", err)
			}
			return ss, nil
		}
		var rs []*BenchResult
		if err := json.Unmarshal(raw, &rs); err != nil {
			return nil, fmt.Errorf("harness: result array: %w", err)
		}
		for _, r := range rs {
			if r == nil || r.Kind != "bench" {
				return nil, fmt.Errorf("harness: a result array holds bench results only")
			}
		}
		return rs, nil
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("harness: result: %w", err)
	}
	var v any
	switch head.Kind {
	case "bench":
		v = new(BenchResult)
	case "probe":
		v = new(ProbeResult)
	case "model":
		v = new(ModelResult)
	case "crash":
		v = new(CrashResult)
	default:
		return nil, fmt.Errorf("harness: result of kind %q: known kinds are bench, probe, model, crash", head.Kind)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("harness: %s result: %w", head.Kind, err)
	}
	return v, nil
}
