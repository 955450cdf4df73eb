package archive

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// FillFromResult sets the fields a caller can read off the run's Result:
// Kind (when empty; a sweep line's result says "bench", so a caller that
// knows it ran a sweep sets Kind itself), Engine, Sync and Workload for
// filters (an array's distinct values comma-joined, in order), Probe
// when empty (the result's "probe" conditions, its first element's for
// an array, or a probe's whole result), and Version and Host when empty.
func (r *Run) FillFromResult() {
	type head struct {
		Kind     string          `json:"kind"`
		Engine   string          `json:"engine"`
		Sync     string          `json:"sync"`
		Workload string          `json:"workload"`
		Probe    json.RawMessage `json:"probe"`
	}
	var items []head
	res := bytes.TrimSpace(r.Result)
	if len(res) > 0 && res[0] == '[' {
		json.Unmarshal(res, &items)
	} else if len(res) > 0 {
		var one head
		if json.Unmarshal(res, &one) == nil {
			items = append(items, one)
		}
	}
	var kinds, engines, syncs, workloads []string
	add := func(list *[]string, v string) {
		if v != "" && !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	for _, it := range items {
		add(&kinds, it.Kind)
		add(&engines, it.Engine)
		add(&syncs, it.Sync)
		add(&workloads, it.Workload)
	}
	if r.Kind == "" && len(kinds) == 1 {
		r.Kind = kinds[0]
	}
	r.Engine = strings.Join(engines, ",")
	r.Sync = strings.Join(syncs, ",")
	r.Workload = strings.Join(workloads, ",")
	if len(r.Probe) == 0 && len(items) > 0 {
		switch {
		case items[0].Kind == "probe":
			r.Probe = json.RawMessage(res)
		case len(items[0].Probe) > 0 && string(items[0].Probe) != "null":
			r.Probe = items[0].Probe
		}
	}
	if r.Version == "" {
		r.Version = Version()
	}
	if r.Host == "" {
		r.Host = HostID()
	}
}
