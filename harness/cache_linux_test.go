package harness

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestCacheCold: -cache cold empties the page cache of the store's files
// after the warmup: mincore finds (almost) none of their pages resident
// before the clock starts, the device itself counts reads in the timed
// region (where the run directory has a device), and the table says so. A
// warm run carries no cache object. A read of a warm 2 MiB store reaches
// the device about never; of a cold one, at least once per few pages.
func TestCacheCold(t *testing.T) {
	dir := t.TempDir()
	run := func(cache string) *BenchResult {
		raw, err := Exec(context.Background(), "bench -engine kv -sync none -workload readrandom -keys 16000 -ops 4000 -cache "+cache, Env{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		var r BenchResult
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	if warm := run("warm"); warm.Cache != nil {
		t.Errorf("a warm run carries cache %+v, want none", warm.Cache)
	}
	r := run("cold")
	c := r.Cache
	if c == nil || c.Mode != "cold" || c.Unavailable != "" || c.Files < 1 || c.Bytes < 16000*(16+128) {
		t.Fatalf("cache %+v, want cold, at least one file holding the 16000 records", c)
	}
	if c.ResidentAfter == nil {
		t.Errorf("no resident_after: mincore was not asked")
	} else if *c.ResidentAfter > 0.05 {
		t.Errorf("resident_after %.3f, want at most 5%% of the pages still cached", *c.ResidentAfter)
	}
	if d := r.DeviceIO; d != nil && d.Unavailable == "" && (d.ReadRequests == nil || *d.ReadRequests == 0) {
		t.Errorf("device %s counted no reads in a cold read run", d.Device)
	}
	if line := cacheLine(c); !strings.HasPrefix(line, "page cache: cold: ") || !strings.Contains(line, "still resident (mincore)") {
		t.Errorf("table line %q", line)
	}
}
