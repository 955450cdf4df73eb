package harness

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Amplification is what a run cost the storage beyond the user's own
// bytes, the three sides of the RUM trade-off: a log, an LSM and a
// B-tree each pay more on one of them. Each figure says where it came
// from: "engine" (the engine's own counters: kv's, or every byte pebble
// and SQLite wrote through the adapter's counting filesystem), "files"
// (the sizes of the store's files against the keys and values a full
// scan finds in it), "device_net" (the disk's counters, device_io, less
// what the disk did in an idle moment just before the run) or "device"
// (the disk's counters as they are, when there was no idle baseline;
// they also count anything else the machine did meanwhile). A figure the
// run cannot know is absent, with its source empty.
type Amplification struct {
	// Write is bytes written ÷ the bytes of the keys and values the
	// measured Puts stored (device_io's logical_bytes): the engine's
	// StoredBytes when it counts them (records, plus what compactions
	// and flushes wrote again), else the device's write bytes.
	Write       *float64 `json:"write,omitempty"`
	WriteSource string   `json:"write_source,omitempty"`
	// Space is bytes on disk ÷ live bytes at the end of the measured
	// part: for an engine that counts both, from the engine (kv: its
	// segments' records against the records its index points at); for an
	// ordered store (bbolt, pebble, sqlite), from its files (the bytes
	// of the files in its directory against the keys and values a scan
	// of the whole store returns, spaceByScan).
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
		} else if dev != nil && dev.NetWriteBytes != nil && *dev.NetWriteBytes > 0 {
			// Net of the idle baseline; when the baseline's other
			// writers outweighed the run (net 0), the raw count below
			// is the better (an upper) bound.
			r := *dev.NetWriteBytes / float64(logical)
			a.Write, a.WriteSource = &r, "device_net"
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

// scanSpaced lists the engines whose space amplification comes from their
// files and a full scan (spaceByScan): ordered stores whose every file
// lives in the run directory and which count no live bytes themselves.
var scanSpaced = map[string]bool{"bbolt": true, "pebble": true, "sqlite": true}

// maxScanKeys bounds the scan spaceByScan makes after a run: past it the
// store is not scanned (it would take seconds) and space is not known.
const maxScanKeys = 2_000_000

// spaceByScan measures an ordered store's space amplification after the
// measured part: the bytes of the files under dir (their sizes, as ls
// shows them) over the bytes of every key and value a scan of the whole
// store returns. It returns false when the store cannot scan, holds more
// than maxScanKeys keys, or either count is 0.
func spaceByScan(store Store, dir string, keys int) (disk, live int64, ok bool) {
	sc, isScanner := store.(Scanner)
	if !isScanner || keys > maxScanKeys {
		return 0, 0, false
	}
	if err := sc.Scan(nil, 0, func(k, v []byte) bool {
		live += int64(len(k) + len(v))
		return true
	}); err != nil {
		return 0, 0, false
	}
	disk = dirBytes(dir)
	return disk, live, disk > 0 && live > 0
}

// dirBytes is the total size of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}

// ampLine is the table's line for a run's amplifications, each with its
// source; "" when none is known.
func ampLine(a *Amplification) string {
	if a == nil {
		return ""
	}
	var parts []string
	if a.Write != nil {
		parts = append(parts, fmt.Sprintf("write %.2f (%s)", *a.Write, a.WriteSource))
	}
	if a.Space != nil {
		parts = append(parts, fmt.Sprintf("space %.2f (%s)", *a.Space, a.SpaceSource))
	}
	if a.Read != nil {
		parts = append(parts, fmt.Sprintf("read %.2f device reads per Get (%s)", *a.Read, a.ReadSource))
	}
	return "amplification: " + strings.Join(parts, "   ")
}

// walReuseLine is the table's line for a store that says whether it has
// begun reusing its WAL files (pebble's wal_files_recycled); "" for one
// that does not.
func walReuseLine(m map[string]int64) string {
	created, ok := m["wal_files_created"]
	if !ok {
		return ""
	}
	recycled := m["wal_files_recycled"]
	if at, ok := m["wal_reuse_started_ms"]; ok {
		return fmt.Sprintf("WAL reuse: began %.1f s after open; %d of %d WAL files were recycled ones (their syncs overwrite, not append)", float64(at)/1000, recycled, created)
	}
	return fmt.Sprintf("WAL reuse: not yet (%d WAL files, none recycled): every WAL sync still grows its file; a longer run reaches reuse", created)
}
