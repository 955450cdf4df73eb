package harness

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The samples in testdata/diskstats were recorded on this project's
// development machine (Linux 6.18, ext4 on a virtio disk, vda) around 50
// write+fdatasync calls of 4 KiB in place. The 5.4 and 4.4 layouts are the
// same two readings cut to the fields those kernels print (15 and 11
// after the device name; Documentation/admin-guide/iostats.rst): 4.18 to
// 5.4 have the discard fields but no flush field, older kernels neither.
func TestDeviceIOFromRecordedDiskstats(t *testing.T) {
	for _, c := range []struct {
		layout      string
		wantFlushes int64 // -1: absent
	}{
		{"linux-6.18", 50},
		{"linux-5.4-layout", -1},
		{"linux-4.4-layout", -1},
	} {
		t.Run(c.layout, func(t *testing.T) {
			read := func(when string) diskCounters {
				t.Helper()
				b, err := os.ReadFile(filepath.Join("testdata", "diskstats", c.layout+"-"+when+".txt"))
				if err != nil {
					t.Fatal(err)
				}
				all, err := parseDiskstats(string(b))
				if err != nil {
					t.Fatal(err)
				}
				if len(all) != 10 {
					t.Errorf("%d devices, want 10 (loop0-7, vda, zram0)", len(all))
				}
				return all["vda"]
			}
			d := deviceDelta("vda", "/proc/diskstats", read("before"), read("after"), 50, 50*4096, time.Second)
			if *d.WriteRequests != 115 || *d.WriteBytes != 520*512 {
				t.Errorf("writes %d, bytes %d; want 115 and %d (520 sectors)", *d.WriteRequests, *d.WriteBytes, 520*512)
			}
			if got := *d.BytesPerLogicalByte; got != 520*512/(50*4096.0) {
				t.Errorf("device bytes per logical byte %g, want %g", got, 520*512/(50*4096.0))
			}
			if got := *d.WriteRequestsPerOp; got != 115/50.0 {
				t.Errorf("write requests per op %g, want 2.3", got)
			}
			// Fields 10 and 11 are in every layout: as recorded, busy 0 ms
			// and 11 ms summed over the requests in flight; over one
			// second, a utilization of 0 and 0.011 in flight.
			if *d.BusyMs != 0 || *d.QueueMs != 11 || *d.BusyFraction != 0 || *d.MeanInFlight != 0.011 {
				t.Errorf("busy %d ms (%g), queue %d ms (%g in flight); want 0 ms (0), 11 ms (0.011)", *d.BusyMs, *d.BusyFraction, *d.QueueMs, *d.MeanInFlight)
			}
			switch {
			case c.wantFlushes < 0 && (d.FlushRequests != nil || d.FlushesPerOp != nil || !strings.Contains(d.FlushMissing, "5.5")):
				t.Errorf("kernel without the flush field: flush_requests %v, flushes_per_op %v, flush_missing %q; want both absent and a note naming 5.5", d.FlushRequests, d.FlushesPerOp, d.FlushMissing)
			case c.wantFlushes >= 0 && (d.FlushRequests == nil || *d.FlushRequests != c.wantFlushes || *d.FlushesPerOp != 1 || d.FlushMissing != ""):
				t.Errorf("flush_requests %v, flushes_per_op %v, flush_missing %q; want %d, 1, none", d.FlushRequests, d.FlushesPerOp, d.FlushMissing, c.wantFlushes)
			}
		})
	}
}

// /sys/block/NAME/stat is a diskstats line without "major minor name".
func TestParseSysBlockStat(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "diskstats", "sys-block-vda-stat.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseStatFields(strings.Fields(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if want := (diskCounters{reads: 47191, sectorsRead: 3049906, writes: 499940, sectorsWritten: 22245064, busyMs: 61960, queueMs: 229211, flushes: 194913, hasFlush: true}); c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
}

// Bad lines are errors that say which line and field, not zeros.
func TestParseDiskstatsErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"   8 0 sda 1 2 3\n", "line 1 (sda): 3 fields, want at least 11"},
		{"   8 0 sda 1 2 3 4 x 6 7 8 9 10 11\n", `line 1 (sda): field 5 "x"`},
		{"\n 8 0\n", "line 2: 2 fields"},
	} {
		_, err := parseDiskstats(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseDiskstats(%q): %v, want an error containing %q", c.text, err, c.want)
		}
	}
}

// fakeSys builds a sysfs tree under a temporary directory: devices under
// devices/, the dev/block/MAJ:MIN links, partitions, slaves and dm names,
// as the kernel lays them out.
type fakeSys struct {
	t    *testing.T
	root string
}

func newFakeSys(t *testing.T) fakeSys {
	return fakeSys{t, t.TempDir()}
}

// dev creates the device directory rel (e.g. "devices/pci0/block/sda/sda1")
// with the number majmin, and returns its path.
func (f fakeSys) dev(rel, majmin string) string {
	f.t.Helper()
	dir := filepath.Join(f.root, rel)
	for _, err := range []error{
		os.MkdirAll(dir, 0o755),
		os.MkdirAll(filepath.Join(f.root, "dev", "block"), 0o755),
		os.Symlink(dir, filepath.Join(f.root, "dev", "block", majmin)),
	} {
		if err != nil {
			f.t.Fatal(err)
		}
	}
	return dir
}

func (f fakeSys) file(path, text string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f fakeSys) slave(dev, target string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Join(dev, "slaves"), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dev, "slaves", filepath.Base(target))); err != nil {
		f.t.Fatal(err)
	}
}

// A run directory's device resolves to the whole disks that count its
// I/O: a partition to its disk, a device-mapper volume to the disks under
// it (through a partition), an md RAID to each member's disk.
func TestResolveBlockDevice(t *testing.T) {
	f := newFakeSys(t)
	vda := f.dev("devices/pci0/virtio1/block/vda", "254:0")
	sda := f.dev("devices/pci0/ata1/block/sda", "8:0")
	sda1 := f.dev("devices/pci0/ata1/block/sda/sda1", "8:1")
	f.file(filepath.Join(sda1, "partition"), "1\n")
	sda2 := f.dev("devices/pci0/ata1/block/sda/sda2", "8:2")
	f.file(filepath.Join(sda2, "partition"), "2\n")
	dm := f.dev("devices/virtual/block/dm-0", "253:0")
	f.file(filepath.Join(dm, "dm", "name"), "vg-root\n")
	f.slave(dm, sda2)
	sdb := f.dev("devices/pci0/ata2/block/sdb", "8:16")
	sdb1 := f.dev("devices/pci0/ata2/block/sdb/sdb1", "8:17")
	f.file(filepath.Join(sdb1, "partition"), "1\n")
	md := f.dev("devices/virtual/block/md0", "9:0")
	f.slave(md, sdb1)
	f.slave(md, sda1)
	// /sys/block/NAME links every disk; queue/write_cache is read there.
	for name, dir := range map[string]string{"vda": vda, "sda": sda, "sdb": sdb} {
		os.MkdirAll(filepath.Join(f.root, "block"), 0o755)
		os.Symlink(dir, filepath.Join(f.root, "block", name))
	}
	f.file(filepath.Join(vda, "queue", "write_cache"), "write back\n")
	f.file(filepath.Join(sda, "queue", "write_cache"), "write through\n")
	f.file(filepath.Join(sdb, "queue", "write_cache"), "write back\n")

	for _, c := range []struct {
		majmin   [2]uint32
		name     string
		disks    string
		cache    string
		errMatch string
	}{
		{[2]uint32{254, 0}, "vda", "vda", "write back", ""},
		{[2]uint32{8, 1}, "sda", "sda", "write through", ""},
		{[2]uint32{253, 0}, "dm-0 (vg-root) on sda", "sda", "write through", ""},
		{[2]uint32{9, 0}, "md0 on sda+sdb", "sda,sdb", "write through+write back", ""},
		{[2]uint32{7, 3}, "", "", "", "no " + filepath.Join(f.root, "dev", "block", "7:3") + ": sysfs is not mounted here or hides the device"},
	} {
		d, err := sysfs(f.root).resolve(c.majmin[0], c.majmin[1])
		if c.errMatch != "" {
			if err == nil || !strings.Contains(err.Error(), c.errMatch) {
				t.Errorf("%d:%d: err %v, want one containing %q", c.majmin[0], c.majmin[1], err, c.errMatch)
			}
			continue
		}
		if err != nil {
			t.Errorf("%d:%d: %v", c.majmin[0], c.majmin[1], err)
			continue
		}
		if d.name != c.name || strings.Join(d.disks, ",") != c.disks || d.writeCache != c.cache {
			t.Errorf("%d:%d: name %q, disks %v, write cache %q; want %q, %s, %q", c.majmin[0], c.majmin[1], d.name, d.disks, d.writeCache, c.name, c.disks, c.cache)
		}
	}
}

// The counters of a volume on several disks are their sum; a disk that
// /proc/diskstats does not list is read from /sys/block/NAME/stat; one in
// neither is an error naming both.
func TestReadCountersSumsAndFallsBack(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "diskstats")
	os.WriteFile(ds, []byte(
		"   8       0 sda 1 0 0 0 10 0 100 0 0 0 0 0 0 0 0 5 0\n"+
			"   8      16 sdb 1 0 0 0 20 0 200 0 0 0 0 0 0 0 0 7 0\n"), 0o644)
	sys := sysfs(filepath.Join(dir, "sys"))
	os.MkdirAll(filepath.Join(string(sys), "block", "sdc"), 0o755)
	os.WriteFile(filepath.Join(string(sys), "block", "sdc", "stat"), []byte("1 0 0 0 30 0 300 0 0 0 0 0 0 0 0 11 0\n"), 0o644)

	c, src, err := readCounters(ds, sys, []string{"sda", "sdb"})
	if err != nil || src != ds || c != (diskCounters{reads: 2, writes: 30, sectorsWritten: 300, flushes: 12, hasFlush: true}) {
		t.Errorf("sda+sdb: %+v from %s, %v; want 30 writes, 300 sectors, 12 flushes from %s", c, src, err, ds)
	}
	c, src, err = readCounters(ds, sys, []string{"sdc"})
	if err != nil || !strings.HasSuffix(src, "block/sdc/stat") || c.writes != 30 || c.flushes != 11 {
		t.Errorf("sdc: %+v from %s, %v; want 30 writes, 11 flushes from its stat file", c, src, err)
	}
	if _, _, err = readCounters(ds, sys, []string{"sdd"}); err == nil || !strings.Contains(err.Error(), "sdd is in neither /proc/diskstats nor") {
		t.Errorf("sdd: %v, want an error naming both places", err)
	}
}

// A real run carries device_io: the counters of the disk under its
// directory, or why there are none, never an empty object. On tmpfs
// (/dev/shm on Linux) it says tmpfs.
func TestRunCarriesDeviceIO(t *testing.T) {
	r := bench(t, "bench -engine kv -sync always -workload fillrandom -ops 50 -warmup 0 -dir "+t.TempDir())
	d := r.DeviceIO
	if d == nil {
		t.Fatal("no device_io")
	}
	if (d.Unavailable == "") == (d.WriteRequests == nil) {
		t.Fatalf("device_io %+v: want either counters or a reason, not both or neither", d)
	}
	if runtime.GOOS != "linux" {
		if !strings.Contains(d.Unavailable, runtime.GOOS) {
			t.Errorf("on %s: unavailable %q, want it to name the OS", runtime.GOOS, d.Unavailable)
		}
		return
	}
	if d.Unavailable == "" && (d.Device == "" || d.Source == "" || *d.WriteRequests < 0 || d.LogicalBytes != 50*(16+128)) {
		t.Errorf("device_io %+v: want a device, a source, counts >= 0, logical bytes %d", d, 50*(16+128))
	}
	if fs, _, _ := fsAndDevice("/dev/shm"); fs == "tmpfs" {
		shm, err := os.MkdirTemp("/dev/shm", "kvlab-test-")
		if err != nil {
			t.Skip(err)
		}
		defer os.RemoveAll(shm)
		r := bench(t, "bench -engine kv -sync always -workload fillrandom -ops 20 -warmup 0 -dir "+shm)
		if d := r.DeviceIO; d == nil || d.WriteRequests != nil || !strings.Contains(d.Unavailable, "tmpfs") {
			t.Errorf("on tmpfs: device_io %+v, want no counters and a reason naming tmpfs", d)
		}
	}
}

// The table's device line: the counts with their ratios, the missing
// flush field said in words, or why there are no counters.
func TestDeviceLine(t *testing.T) {
	before := diskCounters{writes: 100, sectorsWritten: 800, flushes: 10, hasFlush: true}
	after := diskCounters{writes: 300, sectorsWritten: 8800, flushes: 110, hasFlush: true}
	read := after
	read.reads, read.sectorsRead = 40, 320
	old := after
	old.hasFlush = false
	for _, c := range []struct {
		name string
		d    *DeviceIO
		want string
	}{
		{"none", nil, ""},
		{"counts", deviceDelta("vda", "/proc/diskstats", before, after, 100, 4096, time.Second),
			"device vda: 200 write requests (2 per op), 3.9 MiB written (1e+03 device bytes per logical byte), 100 flushes (1 per op); the whole device's counts, other writers included"},
		{"reads", deviceDelta("vda", "/proc/diskstats", before, read, 100, 4096, time.Second),
			"device vda: 200 write requests (2 per op), 3.9 MiB written (1e+03 device bytes per logical byte), 40 read requests (160.0 KiB), 100 flushes (1 per op); the whole device's counts, other writers included"},
		{"no flush field", deviceDelta("sda", "/proc/diskstats", before, old, 100, 0, time.Second),
			"device sda: 200 write requests (2 per op), 3.9 MiB written; " + flushMissingNote + "; the whole device's counts, other writers included"},
		{"unavailable", &DeviceIO{Unavailable: "/x is on tmpfs"}, "device counters: none (/x is on tmpfs)"},
		{"write through", func() *DeviceIO {
			d := deviceDelta("sda", "/proc/diskstats", before, before, 100, 0, time.Second)
			d.WriteCache = "write through"
			return d
		}(), "device sda: 0 write requests (0 per op), 0 B written, 0 flushes (0 per op) (a write-through disk: the kernel sends it no flushes); the whole device's counts, other writers included"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := deviceLine(c.d); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
