package classroom

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"kvlab/harness"
)

// The class board's measures: a shared result gives a value for each it
// has. Names and units are part of the wire contract.
const (
	MeasureFdatasyncP50 = "fdatasync_p50"      // probe: write_fdatasync p50, ns
	MeasureAlwaysOps    = "always_ops_per_sec" // a bench with -sync always: ops_per_sec
	MeasureP99          = "p99"                // a bench: put p99, ns
)

// Measures lists the measure names in the order the board offers them.
var Measures = []string{MeasureFdatasyncP50, MeasureAlwaysOps, MeasureP99}

// MeasureUnit is the unit of a measure, or "" for an unknown name.
func MeasureUnit(m string) string {
	switch m {
	case MeasureFdatasyncP50, MeasureP99:
		return "ns"
	case MeasureAlwaysOps:
		return "ops/s"
	}
	return ""
}

// Share is a result checked for the board.
type Share struct {
	Kind       string             // "probe" or "bench"
	Values     map[string]float64 // by measure; a measure the result has no value for is absent
	Conditions map[string]any     // os, fs, device, rotational, ... as in the result
}

// CheckShare decodes a shared result strictly against the JSON contract
// (harness's result types, unknown fields refused): a probe, a bench, or
// an array of bench results (sweep, -repeat). Other kinds are refused
// with an error wrapping ErrBadShare; a rate or latency outside the
// physical bounds (bounds.go) with one wrapping ErrOutOfBounds.
func CheckShare(raw json.RawMessage) (*Share, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: result is missing (want a probe or bench result as labserver prints it with -format json)", ErrBadShare)
	}
	if raw[0] == '[' {
		var rs []*harness.BenchResult
		if err := strictDecode(raw, &rs); err != nil {
			return nil, fmt.Errorf("%w: result array: %v", ErrBadShare, err)
		}
		if len(rs) == 0 {
			return nil, fmt.Errorf("%w: result array is empty", ErrBadShare)
		}
		for i, r := range rs {
			if r == nil || r.Kind != "bench" {
				return nil, fmt.Errorf("%w: result[%d]: an array holds bench results only", ErrBadShare, i)
			}
			if err := checkAll(benchBounds(fmt.Sprintf("result[%d]", i), r)); err != nil {
				return nil, err
			}
		}
		return benchShare(rs), nil
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("%w: result: %v", ErrBadShare, err)
	}
	switch head.Kind {
	case "probe":
		var p harness.ProbeResult
		if err := strictDecode(raw, &p); err != nil {
			return nil, fmt.Errorf("%w: probe result: %v", ErrBadShare, err)
		}
		if err := checkAll(probeBounds(&p)); err != nil {
			return nil, err
		}
		return probeShare(&p), nil
	case "bench":
		var b harness.BenchResult
		if err := strictDecode(raw, &b); err != nil {
			return nil, fmt.Errorf("%w: bench result: %v", ErrBadShare, err)
		}
		if err := checkAll(benchBounds("result", &b)); err != nil {
			return nil, err
		}
		return benchShare([]*harness.BenchResult{&b}), nil
	}
	return nil, fmt.Errorf("%w: result of kind %q: the board takes probe and bench results", ErrBadShare, head.Kind)
}

func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

func probeShare(p *harness.ProbeResult) *Share {
	s := &Share{Kind: "probe", Values: map[string]float64{}, Conditions: map[string]any{
		"os": p.OS, "fs": p.FS, "device": p.Device, "rotational": p.Rotational,
		"kernel": p.Kernel, "cpu": p.CPU, "cores": p.Cores, "go": p.Go,
	}}
	if v := float64(p.WriteFdatasync.P50Ns); v > 0 {
		s.Values[MeasureFdatasyncP50] = v
	}
	return s
}

// benchShare takes each measure from the first result that has it.
func benchShare(rs []*harness.BenchResult) *Share {
	s := &Share{Kind: "bench", Values: map[string]float64{}, Conditions: map[string]any{}}
	first := rs[0]
	s.Conditions["engine"], s.Conditions["sync"], s.Conditions["workload"] = first.Engine, first.Sync, first.Workload
	s.Conditions["threads"], s.Conditions["value_size"] = first.Threads, first.ValueSize
	if pb := first.Probe; pb != nil {
		s.Conditions["fs"], s.Conditions["device"], s.Conditions["rotational"] = pb.FS, pb.Device, pb.Rotational
		s.Conditions["cores"], s.Conditions["go"] = pb.Cores, pb.Go
	}
	for _, r := range rs {
		if _, ok := s.Values[MeasureAlwaysOps]; !ok && r.Sync == "always" && r.OpsPerSec > 0 {
			s.Values[MeasureAlwaysOps] = r.OpsPerSec
		}
		if _, ok := s.Values[MeasureP99]; !ok {
			if l := r.Latency["put"]; l != nil && l.P99Ns > 0 {
				s.Values[MeasureP99] = float64(l.P99Ns)
			}
		}
	}
	for k, v := range s.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			delete(s.Values, k)
		}
	}
	return s
}

// MaxLabel is the longest board label.
const MaxLabel = 40

// CheckLabel allows an empty label, or up to MaxLabel letters, digits,
// spaces and '-'.
func CheckLabel(l string) error {
	if len(l) > MaxLabel {
		return fmt.Errorf("label: %d characters; at most %d letters, digits, spaces and '-'", len(l), MaxLabel)
	}
	if i := strings.IndexFunc(l, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ' ' || r == '-')
	}); i >= 0 {
		return fmt.Errorf("label: %q is not allowed; use letters, digits, spaces and '-' (at most %d)", l[i:i+1], MaxLabel)
	}
	return nil
}
