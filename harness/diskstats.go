package harness

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The disk's own counters.
//
// Timings only let a lesson infer what reached the device ("bbolt
// flushes twice per commit", "group commit shares one flush"). The
// device counts it: on Linux every block device has a line in
// /proc/diskstats (and the same numbers in /sys/block/NAME/stat) with
// the write requests it completed, the 512-byte sectors they wrote and,
// since kernel 5.5, the flush requests (cache flushes: what an
// fdatasync or a journal commit asks of the drive); also the time the
// device had at least one request in flight and the time summed over
// every request in flight, from which busy_fraction (utilization) and
// mean_in_flight (iostat's aqu-sz, a measure of saturation) follow. The runner reads the
// device under the run directory just before the wall clock starts and
// just after it stops (watchDevice), and a result carries the difference
// as device_io, with per-op ratios.
//
// Two cautions go with the numbers:
//   - they are the whole device's: anything else writing to the same disk
//     in the timed region (another process, the filesystem's own
//     writeback and journal) is in them. Quote them with the load.
//   - a filesystem's writeback may run after the clock stops, so
//     buffered writes (sync none, periodic) can show fewer device bytes
//     than they will cost; a flush is counted when it completes.
//
// Where there is no device to read (tmpfs, an overlay or other
// filesystem without a block device of its own, a container that hides
// /sys or /proc/diskstats, macOS), device_io says which and why
// ("unavailable") and carries no counts: never a zero that looks like a
// measurement.

// DeviceIO is what the block device under the run directory counted
// during the timed region: the "device_io" object of a bench result.
type DeviceIO struct {
	// Device names the whole disk(s) read, e.g. "vda", or
	// "dm-0 (vg-root) on sda" for a device-mapper volume, whose I/O is
	// counted where it lands: on the disks under it.
	Device string `json:"device,omitempty"`
	// Unavailable, when set, says why there are no counters; every
	// count below is then absent.
	Unavailable string `json:"unavailable,omitempty"`
	Source      string `json:"source,omitempty"` // "/proc/diskstats" or "/sys/block/NAME/stat"

	WriteRequests *int64 `json:"write_requests,omitempty"` // write requests completed
	WriteBytes    *int64 `json:"write_bytes,omitempty"`    // sectors written x 512
	// ReadRequests and ReadBytes are the reads that reached the device: a
	// read the page cache served is not among them (see -cache cold).
	ReadRequests *int64 `json:"read_requests,omitempty"`
	ReadBytes    *int64 `json:"read_bytes,omitempty"` // sectors read x 512
	// FlushRequests is absent when the kernel's counters have no flush
	// field (before Linux 5.5); FlushMissing then says so.
	FlushRequests *int64 `json:"flush_requests,omitempty"`
	FlushMissing  string `json:"flush_missing,omitempty"`
	// WriteCache is the disk's /sys/block/NAME/queue/write_cache: "write
	// back" (a volatile cache, which the kernel flushes for every
	// fdatasync) or "write through" (none: the kernel sends no flushes,
	// so flush_requests stays 0 however often the store syncs).
	WriteCache string `json:"write_cache,omitempty"`

	// BusyMs is the time the device had at least one request in flight
	// (diskstats field 10, "time spent doing I/Os", in ms; summed over the
	// disks under a volume). BusyFraction is BusyMs over the time between
	// the two readings: the disk's utilization. Near 1 on a disk that
	// serves one request at a time (a rotating disk) means saturated; an
	// SSD or a virtual disk serves several at once and can be "busy" 100%
	// of the time with room to spare, which MeanInFlight shows.
	BusyMs       *int64   `json:"busy_ms,omitempty"`
	BusyFraction *float64 `json:"busy_fraction,omitempty"`
	// QueueMs is the time summed over every request in flight (field 11,
	// "weighted time spent doing I/Os", ms). MeanInFlight is QueueMs over
	// the time between the readings: how many requests were in flight on
	// average (iostat's aqu-sz). Well above 1 on a disk that serves one at
	// a time, requests waited for each other: saturation.
	QueueMs      *int64   `json:"queue_ms,omitempty"`
	MeanInFlight *float64 `json:"mean_in_flight,omitempty"`

	// Per-op ratios: per primitive op of the run (ops), and device bytes
	// per logical byte (the keys and values the run's Puts stored:
	// puts x (16 + value_size)). Absent when their denominator is 0 or
	// their count is absent.
	WriteRequestsPerOp  *float64 `json:"write_requests_per_op,omitempty"`
	FlushesPerOp        *float64 `json:"flushes_per_op,omitempty"`
	LogicalBytes        int64    `json:"logical_bytes,omitempty"`
	BytesPerLogicalByte *float64 `json:"device_bytes_per_logical_byte,omitempty"`

	// The idle baseline: the same counters over IdleMs of idle time
	// before the run's store opened (idleBaselineFor: the run's -duration
	// up to 1 s, else 200 ms), when nothing of this run was writing: its
	// store's background work after the preload and warm-up is its own,
	// and counted. Whatever the device counted then was someone else's:
	// other processes, the filesystem's own writeback and journal.
	// IdleWriteRequests, IdleWriteBytes and IdleFlushRequests are the
	// baseline's raw counts.
	IdleMs            float64 `json:"idle_ms,omitempty"`
	IdleWriteRequests *int64  `json:"idle_write_requests,omitempty"`
	IdleWriteBytes    *int64  `json:"idle_write_bytes,omitempty"`
	IdleFlushRequests *int64  `json:"idle_flush_requests,omitempty"`
	IdleReadRequests  *int64  `json:"idle_read_requests,omitempty"`
	// WritebackMs is how long writing back the filesystem's dirty pages
	// took just before the baseline (syncfs: deviceWatch.settle), so that
	// an earlier run's writeback, which the kernel does when it pleases,
	// is counted neither as another writer nor in this run's counts.
	WritebackMs *float64 `json:"writeback_ms,omitempty"`
	// The counts net of the machine: each count of the timed region less
	// the baseline's count scaled to the region's length (at least 0),
	// and their per-op ratios. These, not the whole-device counts, are
	// what a lesson grades: on a shared disk the raw counts carry every
	// other writer's requests.
	NetWriteRequests      *float64 `json:"net_write_requests,omitempty"`
	NetWriteBytes         *float64 `json:"net_write_bytes,omitempty"`
	NetFlushRequests      *float64 `json:"net_flush_requests,omitempty"`
	NetReadRequests       *float64 `json:"net_read_requests,omitempty"`
	NetWriteRequestsPerOp *float64 `json:"net_write_requests_per_op,omitempty"`
	NetFlushesPerOp       *float64 `json:"net_flushes_per_op,omitempty"`
	NetBytesPerLogical    *float64 `json:"net_device_bytes_per_logical_byte,omitempty"`
	// OtherWriters is true when the baseline saw write or flush requests:
	// something else was writing to the device while this run measured,
	// and even the net counts are an estimate (its rate may not have held
	// through the run). OtherWritersNote says how much.
	OtherWriters     bool   `json:"other_writers,omitempty"`
	OtherWritersNote string `json:"other_writers_note,omitempty"`
}

// idleBaselineFor is how long the idle baseline before a run's timed
// region lasts: the run's -duration when it has one, up to 1 s, else
// 200 ms (a -ops run's length is not known before it runs; the baseline
// is scaled to the region's length).
func idleBaselineFor(duration time.Duration) time.Duration {
	if duration > 0 {
		return min(duration, time.Second)
	}
	return 200 * time.Millisecond
}

// netOf subtracts the baseline's idle count, scaled by scale (the timed
// region's length over the baseline's), from raw; never below 0.
func netOf(raw, idle int64, scale float64) float64 {
	return max(float64(raw)-float64(idle)*scale, 0)
}

// addBaseline fills d's idle and net fields from the baseline's two
// readings, idleFor apart, for a timed region of interval.
func addBaseline(d *DeviceIO, idle0, idle1 diskCounters, idleFor, interval time.Duration, ops, logical int64) {
	if idleFor <= 0 || d.WriteRequests == nil {
		return
	}
	scale := float64(interval) / float64(idleFor)
	d.IdleMs = float64(idleFor) / float64(time.Millisecond)
	iw, ib := idle1.writes-idle0.writes, (idle1.sectorsWritten-idle0.sectorsWritten)*512
	d.IdleWriteRequests, d.IdleWriteBytes = &iw, &ib
	nw, nb := netOf(*d.WriteRequests, iw, scale), netOf(*d.WriteBytes, ib, scale)
	d.NetWriteRequests, d.NetWriteBytes = &nw, &nb
	if d.ReadRequests != nil {
		ir := idle1.reads - idle0.reads
		nr := netOf(*d.ReadRequests, ir, scale)
		d.IdleReadRequests, d.NetReadRequests = &ir, &nr
	}
	per := func(n float64, of int64) *float64 {
		if of <= 0 {
			return nil
		}
		r := n / float64(of)
		return &r
	}
	d.NetWriteRequestsPerOp = per(nw, ops)
	d.NetBytesPerLogical = per(nb, logical)
	var iflush int64
	if d.FlushRequests != nil && idle0.hasFlush && idle1.hasFlush {
		iflush = idle1.flushes - idle0.flushes
		nf := netOf(*d.FlushRequests, iflush, scale)
		d.IdleFlushRequests, d.NetFlushRequests = &iflush, &nf
		d.NetFlushesPerOp = per(nf, ops)
	}
	if iw > 0 || iflush > 0 {
		d.OtherWriters = true
		d.OtherWritersNote = fmt.Sprintf("other writers were active: in %.0f ms of idle time just before the run the device completed %d write requests and %d flushes (about %.0f and %.0f over the run's length, subtracted in the net_ counts)",
			d.IdleMs, iw, iflush, float64(iw)*scale, float64(iflush)*scale)
	}
}

// diskCounters are the fields of one diskstats line a run reports.
type diskCounters struct {
	reads          int64 // field 1: reads completed
	sectorsRead    int64 // field 3: sectors read (always 512 bytes)
	writes         int64 // field 5: writes completed
	sectorsWritten int64 // field 7: sectors written (always 512 bytes)
	busyMs         int64 // field 10: ms with at least one request in flight
	queueMs        int64 // field 11: ms summed over the requests in flight
	flushes        int64 // field 16: flush requests completed (Linux >= 5.5)
	hasFlush       bool  // the line has field 16
}

// add sums two devices' counters (the disks under one volume).
func (c diskCounters) add(d diskCounters) diskCounters {
	return diskCounters{c.reads + d.reads, c.sectorsRead + d.sectorsRead, c.writes + d.writes, c.sectorsWritten + d.sectorsWritten,
		c.busyMs + d.busyMs, c.queueMs + d.queueMs, c.flushes + d.flushes, c.hasFlush && d.hasFlush}
}

// flushMissingNote is device_io.flush_missing on a kernel without the
// flush field.
const flushMissingNote = "this kernel's disk statistics have no flush field (it appeared in Linux 5.5): flushes not counted"

// parseStatFields reads the fields of a diskstats line after the device
// name, which is also the whole of a /sys/block/NAME/stat file: 11
// fields before Linux 4.18, 15 from 4.18 (discards), 17 from 5.5
// (flushes).
func parseStatFields(f []string) (diskCounters, error) {
	if len(f) < 11 {
		return diskCounters{}, fmt.Errorf("%d fields, want at least 11", len(f))
	}
	num := func(i int) (int64, error) {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("field %d %q: %w", i+1, f[i], err)
		}
		return n, nil
	}
	var c diskCounters
	var err error
	if c.reads, err = num(0); err != nil {
		return c, err
	}
	if c.sectorsRead, err = num(2); err != nil {
		return c, err
	}
	if c.writes, err = num(4); err != nil {
		return c, err
	}
	if c.sectorsWritten, err = num(6); err != nil {
		return c, err
	}
	if c.busyMs, err = num(9); err != nil {
		return c, err
	}
	if c.queueMs, err = num(10); err != nil {
		return c, err
	}
	if len(f) >= 17 {
		if c.flushes, err = num(15); err != nil {
			return c, err
		}
		c.hasFlush = true
	}
	return c, nil
}

// parseDiskstats reads /proc/diskstats: one line per device, "major minor
// name" and then the fields parseStatFields reads. It returns the
// counters by device name.
func parseDiskstats(text string) (map[string]diskCounters, error) {
	out := map[string]diskCounters{}
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("diskstats line %d: %d fields", i+1, len(f))
		}
		c, err := parseStatFields(f[3:])
		if err != nil {
			return nil, fmt.Errorf("diskstats line %d (%s): %w", i+1, f[2], err)
		}
		out[f[2]] = c
	}
	return out, nil
}

// blockDevice is the device under a directory, resolved to the whole
// disks that count its I/O.
type blockDevice struct {
	name       string   // what device_io.device says
	disks      []string // whole-disk names in diskstats, sorted
	writeCache string   // their queue/write_cache, "" when unknown; joined by "+" when they differ
}

// sysfs is where resolveDevice reads the kernel's device tree: "/sys" on
// a real system, a directory built by a test otherwise.
type sysfs string

// resolve finds the whole disks under the block device major:minor:
// /sys/dev/block/MAJ:MIN links to the device's directory; a partition
// (a directory with a "partition" file) is counted on its parent disk;
// a stacked device (device-mapper, md RAID, with a non-empty slaves/) on
// the disks under its slaves, recursively. It returns why not when the
// link is missing.
func (s sysfs) resolve(major, minor uint32) (blockDevice, error) {
	link := filepath.Join(string(s), "dev", "block", fmt.Sprintf("%d:%d", major, minor))
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		return blockDevice{}, fmt.Errorf("no %s: sysfs is not mounted here or hides the device (a container?)", link)
	}
	disks := map[string]bool{}
	if err := s.leaves(dir, disks, 0); err != nil {
		return blockDevice{}, err
	}
	d := blockDevice{disks: slices.Sorted(maps.Keys(disks))}
	var caches []string
	for _, disk := range d.disks {
		if b, err := os.ReadFile(filepath.Join(string(s), "block", disk, "queue", "write_cache")); err == nil {
			if c := strings.TrimSpace(string(b)); !slices.Contains(caches, c) {
				caches = append(caches, c)
			}
		}
	}
	d.writeCache = strings.Join(caches, "+")
	top := filepath.Base(dir)
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		top = filepath.Base(filepath.Dir(dir))
	}
	d.name = top
	if b, err := os.ReadFile(filepath.Join(dir, "dm", "name")); err == nil {
		d.name += " (" + strings.TrimSpace(string(b)) + ")"
	}
	if on := strings.Join(d.disks, "+"); on != top {
		d.name += " on " + on
	}
	return d, nil
}

// leaves adds to disks the whole disks under the device directory dir.
func (s sysfs) leaves(dir string, disks map[string]bool, depth int) error {
	if depth > 8 {
		return fmt.Errorf("%s: devices stacked more than 8 deep", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		dir = filepath.Dir(dir) // a partition's parent is its disk
	}
	slaves, _ := os.ReadDir(filepath.Join(dir, "slaves"))
	if len(slaves) == 0 {
		disks[filepath.Base(dir)] = true
		return nil
	}
	for _, sl := range slaves {
		next, err := filepath.EvalSymlinks(filepath.Join(dir, "slaves", sl.Name()))
		if err != nil {
			return fmt.Errorf("%s: slave %s: %w", dir, sl.Name(), err)
		}
		if err := s.leaves(next, disks, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// noDeviceReason says why a filesystem of type fs, whose st_dev has major
// number 0 (an anonymous device), has no block device to read.
func noDeviceReason(fs, dir string) string {
	switch fs {
	case "tmpfs", "ramfs":
		return fmt.Sprintf("%s is on %s, in memory: there is no block device, and nothing reaches a disk", dir, fs)
	case "overlay", "overlayfs", "aufs":
		return fmt.Sprintf("%s is on %s, a container's layered filesystem: its writes reach a device on the host that this process cannot name; run with -dir on a mounted volume", dir, fs)
	case "":
		return fmt.Sprintf("%s has no block device of its own (its filesystem could not be found in /proc/self/mountinfo)", dir)
	}
	return fmt.Sprintf("%s is on %s, which has no single block device of its own (anonymous st_dev)", dir, fs)
}

// deviceWatch reads a device's counters before and after a timed region.
// The runner calls start, stop and result in that order, from one
// goroutine.
type deviceWatch struct {
	dev blockDevice
	regionWatch[diskReading]
	// writeBack writes back what the filesystem under the run directory
	// holds dirty in the page cache (nil where nothing can: no device);
	// writtenBackFor is how long the last call took.
	writeBack      func() error
	writtenBackFor time.Duration
}

// settle writes back the page cache's backlog on the run's filesystem
// before the idle baseline, so that neither the baseline nor the timed
// region counts the writeback of pages an earlier run (this lab's, or
// another program's) left dirty: the kernel writes those out some 30 s
// after they were dirtied, whenever that falls. A baseline that caught it
// would call a quiet machine busy, and a timed region that caught it
// would charge the run for another's writes. A failure is not fatal: the
// baseline then sees the backlog, as it would without this step.
func (w *deviceWatch) settle() {
	if w.unavailable != "" || w.writeBack == nil {
		return
	}
	t0 := time.Now()
	if w.writeBack() == nil {
		w.writtenBackFor = time.Since(t0)
	}
}

// diskReading is one reading of a device's counters and where they came
// from.
type diskReading struct {
	counters diskCounters
	source   string
}

// result is device_io for a run of ops primitive ops whose Puts stored
// logical bytes of keys and values.
func (w *deviceWatch) result(ops, logical int64) *DeviceIO {
	if w.unavailable != "" {
		return &DeviceIO{Device: w.dev.name, Unavailable: w.unavailable}
	}
	interval := w.stopAt.Sub(w.startAt)
	d := deviceDelta(w.dev.name, w.before.source, w.before.counters, w.after.counters, ops, logical, interval)
	d.WriteCache = w.dev.writeCache
	addBaseline(d, w.idle0.counters, w.idle1.counters, w.idleFor, interval, ops, logical)
	if w.writtenBackFor > 0 && d.IdleMs > 0 {
		ms := float64(w.writtenBackFor) / float64(time.Millisecond)
		d.WritebackMs = &ms
	}
	return d
}

// deviceDelta turns two readings, interval apart, into device_io.
func deviceDelta(name, source string, before, after diskCounters, ops, logical int64, interval time.Duration) *DeviceIO {
	d := &DeviceIO{Device: name, Source: source}
	writes := after.writes - before.writes
	bytes := (after.sectorsWritten - before.sectorsWritten) * 512
	d.WriteRequests, d.WriteBytes = &writes, &bytes
	reads := after.reads - before.reads
	readBytes := (after.sectorsRead - before.sectorsRead) * 512
	d.ReadRequests, d.ReadBytes = &reads, &readBytes
	ratio := func(n, of int64) *float64 {
		if of <= 0 {
			return nil
		}
		r := float64(n) / float64(of)
		return &r
	}
	d.WriteRequestsPerOp = ratio(writes, ops)
	if before.hasFlush && after.hasFlush {
		flushes := after.flushes - before.flushes
		d.FlushRequests = &flushes
		d.FlushesPerOp = ratio(flushes, ops)
	} else {
		d.FlushMissing = flushMissingNote
	}
	d.LogicalBytes = logical
	d.BytesPerLogicalByte = ratio(bytes, logical)
	busy, queue := after.busyMs-before.busyMs, after.queueMs-before.queueMs
	d.BusyMs, d.QueueMs = &busy, &queue
	if ms := float64(interval) / float64(time.Millisecond); ms > 0 {
		bf, inFlight := float64(busy)/ms, float64(queue)/ms
		d.BusyFraction, d.MeanInFlight = &bf, &inFlight
	}
	return d
}

// readCounters returns the summed counters of disks from the diskstats
// file ("/proc/diskstats" on a real system), or from each disk's
// /sys/block/NAME/stat when diskstats does not list them (some containers
// rewrite /proc/diskstats).
func readCounters(diskstats string, sys sysfs, disks []string) (diskCounters, string, error) {
	sum := diskCounters{hasFlush: true}
	if b, err := os.ReadFile(diskstats); err == nil {
		all, err := parseDiskstats(string(b))
		if err == nil {
			found := 0
			for _, d := range disks {
				if c, ok := all[d]; ok {
					sum, found = sum.add(c), found+1
				}
			}
			if found == len(disks) {
				return sum, diskstats, nil
			}
		}
	}
	sum = diskCounters{hasFlush: true}
	var src []string
	for _, d := range disks {
		p := filepath.Join(string(sys), "block", d, "stat")
		b, err := os.ReadFile(p)
		if err != nil {
			return diskCounters{}, "", fmt.Errorf("%s is in neither /proc/diskstats nor %s: %v", d, p, err)
		}
		c, err := parseStatFields(strings.Fields(string(b)))
		if err != nil {
			return diskCounters{}, "", fmt.Errorf("%s: %w", p, err)
		}
		sum = sum.add(c)
		src = append(src, p)
	}
	return sum, strings.Join(src, ", "), nil
}
