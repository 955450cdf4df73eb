package harness

// Amplification is what a run cost the storage beyond the user's own
// bytes, the three sides of the RUM trade-off: a log, an LSM and a
// B-tree each pay more on one of them. Each figure says where it came
// from: "engine" (the engine's own counters) or "device" (the disk's,
// device_io, which also count anything else the machine did meanwhile).
// A figure the run cannot know is absent, with its source empty.
type Amplification struct {
	// Write is bytes written ÷ the bytes of the keys and values the
	// measured Puts stored (device_io's logical_bytes): the engine's
	// StoredBytes when it counts them (records, plus what compactions
	// and flushes wrote again), else the device's write bytes.
	Write       *float64 `json:"write,omitempty"`
	WriteSource string   `json:"write_source,omitempty"`
	// Space is bytes on disk ÷ live bytes at the end of the measured
	// part, for an engine that counts both (kv: its segments' records
	// against the records its index points at).
	Space       *float64 `json:"space,omitempty"`
	SpaceSource string   `json:"space_source,omitempty"`
	// Read is device read requests per Get: the reads the page cache
	// did not serve (-cache cold makes them the engine's own).
	Read       *float64 `json:"read,omitempty"`
	ReadSource string   `json:"read_source,omitempty"`
}

// amplification computes a run's Amplification from the store's counters
// either side of the measured part, its device counters, the logical
// bytes its Puts stored and its Gets. It returns nil when it knows none
// of the three.
func amplification(before, after StoreStats, dev *DeviceIO, logical, gets int64) *Amplification {
	a := &Amplification{}
	ratio := func(n, of int64) *float64 {
		r := float64(n) / float64(of)
		return &r
	}
	if logical > 0 {
		if stored := after.StoredBytes - before.StoredBytes; after.StoredBytes > 0 {
			a.Write, a.WriteSource = ratio(stored, logical), "engine"
		} else if dev != nil && dev.WriteBytes != nil {
			a.Write, a.WriteSource = ratio(*dev.WriteBytes, logical), "device"
		}
	}
	if disk, live := after.Metrics["disk_bytes"], after.Metrics["live_bytes"]; disk > 0 && live > 0 {
		a.Space, a.SpaceSource = ratio(disk, live), "engine"
	}
	if gets > 0 && dev != nil && dev.ReadRequests != nil {
		a.Read, a.ReadSource = ratio(*dev.ReadRequests, gets), "device"
	}
	if a.Write == nil && a.Space == nil && a.Read == nil {
		return nil
	}
	return a
}
