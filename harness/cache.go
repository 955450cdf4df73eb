package harness

import (
	"io/fs"
	"path/filepath"
)

// Reads that miss memory: -cache cold.
//
// A read benchmark on a store that fits in RAM measures the page cache,
// not the disk: the preload just wrote every value, so every page is
// still in memory, and readrandom's p50 is a memcpy. Real stores are
// often larger than memory, and the reads that miss are the ones that
// cost. -cache cold makes them miss on purpose: after the warmup, just
// before the wall clock starts, the runner writes back and evicts every
// file of the run directory from the page cache (evictCache). On Linux
// that is fdatasync (the kernel does not drop dirty pages) then
// posix_fadvise(POSIX_FADV_DONTNEED), per file; no root is needed, and
// the rest of the machine's cache is untouched.
//
// Eviction is a request, not a promise: a page a process has mapped
// stays (bbolt reads through mmap), and a store's own in-process cache
// (pebble's block cache) is not the kernel's to drop. So the runner then
// asks the kernel which pages are still resident (mincore(2) on a
// read-only mapping of each file) and reports the share as
// cache.resident_after: a cold run with resident_after near 1 was not
// cold. device_io.read_requests, from the disk's own counters, shows
// the misses as the device saw them.

// CacheReport is the "cache" object of a -cache cold bench result: what
// was evicted before the timed region and what stayed.
type CacheReport struct {
	Mode  string `json:"mode"`  // "cold"
	Files int    `json:"files"` // files in the run directory
	Bytes int64  `json:"bytes"` // their total size
	// ResidentAfter is the share of those bytes' pages still in the page
	// cache after eviction (0 = all evicted), by mincore(2). Absent when
	// it could not be asked.
	ResidentAfter *float64 `json:"resident_after,omitempty"`
	// Unavailable says why nothing could be evicted (another OS); the
	// run then measured a warm cache, and says so.
	Unavailable string `json:"unavailable,omitempty"`
	// Note says what eviction cannot reach for this engine.
	Note string `json:"note,omitempty"`
}

// CacheModes are the values -cache takes.
var CacheModes = []string{"warm", "cold"}

// cacheNotes say, per engine, what page-cache eviction cannot reach.
var cacheNotes = map[string]string{
	"bbolt":  "bbolt reads through mmap: pages the open store has mapped stay resident (resident_after counts them)",
	"pebble": "pebble's own block cache, inside the process, is not the page cache: eviction does not empty it",
}

// evictCache writes back and drops from the page cache every regular
// file under dir, then measures what stayed (the file comment).
func evictCache(dir, engine string) *CacheReport {
	c := &CacheReport{Mode: "cold", Note: cacheNotes[engine]}
	var resident, pages int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		size, res, total, err := evictFile(path)
		if err != nil {
			return err
		}
		c.Files++
		c.Bytes += size
		if total >= 0 {
			resident, pages = resident+res, pages+total
		}
		return nil
	})
	if err != nil {
		c.Unavailable = "-cache cold: " + err.Error()
		return c
	}
	if pages > 0 {
		share := float64(resident) / float64(pages)
		c.ResidentAfter = &share
	} else if c.Bytes == 0 {
		zero := 0.0
		c.ResidentAfter = &zero
	}
	return c
}
