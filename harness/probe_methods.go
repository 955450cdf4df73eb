package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"
)

// The sync-primitive table: `probe -methods`.
//
// PostgreSQL's pg_test_fsync times each way of making a write durable
// on one directory, because they differ by factors on the same disk and
// the fastest is not always the one that is safe. `probe -methods` does
// the same with percentiles, for each method this OS has (the method
// lists are in probe_methods_linux.go, probe_methods_darwin.go and
// probe_methods_other.go):
//
//   - write+fdatasync: the engine's own sync on Linux;
//   - write+fsync: also flushes the file's metadata (timestamps);
//   - O_DSYNC write: the file is opened with O_DSYNC, so every write(2)
//     returns only once it is durable, as if fdatasync followed it;
//   - O_DIRECT|O_DSYNC write: the same, bypassing the page cache; the
//     kernel requires aligned buffers, offsets and sizes, so these write
//     whole 4 KiB blocks (a 128-byte row writes 4 KiB and says so);
//   - write+F_FULLFSYNC (macOS): the only call there that asks the drive
//     to empty its volatile cache; its fsync(2) does not.
//
// Each method is timed two ways: appending to a new, empty file (every
// durable write also persists the file's new size: the metadata a
// journal must commit) and overwriting a region that was written and
// synced before the clock started (the data only; what the kv engine does
// in its zero-filled segments). Both write sequentially; the overwrite
// wraps around at the end of its region. Each at 128 B and 8 KiB.
//
// A method the OS or the filesystem refuses (O_DIRECT on a filesystem
// without direct I/O returns EINVAL from open(2) or the first write) is
// a row with "refused" and the error, never a silent gap.

// SyncMethodCost is one row of the table: a method, a placement and a
// write size, with its latencies (write and sync together) or why it
// could not be measured.
type SyncMethodCost struct {
	Method    string `json:"method"`     // e.g. "write+fdatasync", "O_DSYNC write"
	Placement string `json:"placement"`  // "append" or "overwrite"
	WriteSize int    `json:"write_size"` // bytes per write, after alignment
	// Refused, when set, is the error the OS or filesystem answered
	// with; the figures are then zero.
	Refused string `json:"refused,omitempty"`
	// Note says what to keep in mind about this method here, e.g. that
	// macOS's fsync does not flush the drive's cache.
	Note string `json:"note,omitempty"`
	ProbeCost
}

// syncMethod is one way of making a write durable.
type syncMethod struct {
	name  string
	flags int                // added to the open flags, e.g. O_DSYNC
	align int                // writes are rounded up to this (O_DIRECT); 0 = as asked
	sync  func(fd int) error // after each write; nil when the open flags make the write durable
	// refused is set when this OS has no such method: why.
	refused string
	note    string
}

// methodSizes are the write sizes the table measures each method at: a
// small record and a database page.
var methodSizes = []int{128, 8 << 10}

// openFile opens a file for the methods; tests replace it to see how a
// refusal is reported.
type openFile func(path string, flags int, perm uint32) (int, error)

// ProbeMethods times every sync method of this OS on dir, appending and
// overwriting, at each of methodSizes; cfg gives the iterations and time
// per row.
func ProbeMethods(ctx context.Context, dir string, cfg ProbeConfig) ([]SyncMethodCost, error) {
	return probeMethods(ctx, dir, cfg, syncMethods(), unix.Open)
}

func probeMethods(ctx context.Context, dir string, cfg ProbeConfig, methods []syncMethod, open openFile) ([]SyncMethodCost, error) {
	tmp, err := os.MkdirTemp(dir, "kvlab-methods-")
	if err != nil {
		return nil, fmt.Errorf("probe -methods: -dir %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	var rows []SyncMethodCost
	for _, size := range methodSizes {
		for _, m := range methods {
			for _, place := range []string{"append", "overwrite"} {
				row := SyncMethodCost{Method: m.name, Placement: place, WriteSize: alignUp(size, m.align), Note: m.note}
				if m.refused != "" {
					row.Refused = m.refused
				} else {
					path := filepath.Join(tmp, fmt.Sprintf("%s-%d", place, len(rows)))
					cost, refused, err := timeMethod(ctx, path, m, place == "overwrite", row.WriteSize, cfg, open)
					if err != nil {
						return nil, err
					}
					row.ProbeCost, row.Refused = cost, refused
					os.Remove(path)
				}
				rows = append(rows, row)
				if ctx.Err() != nil {
					return rows, ctx.Err()
				}
			}
		}
	}
	return rows, nil
}

func alignUp(n, align int) int {
	if align <= 0 {
		return n
	}
	return (n + align - 1) / align * align
}

// timeMethod times m writing size-byte blocks into a file at path: at a
// growing offset of an empty file, or sequentially over a region written
// and synced first. An error from open(2), the preparation or a timed
// write or sync is the method being refused, returned as refused; err is
// for what is not about the method (the context).
func timeMethod(ctx context.Context, path string, m syncMethod, overwrite bool, size int, cfg ProbeConfig, open openFile) (c ProbeCost, refused string, err error) {
	fd, err := open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|m.flags, 0o600)
	if err != nil {
		return c, fmt.Sprintf("open: %v", err), nil
	}
	defer unix.Close(fd)
	// Page-aligned memory, as O_DIRECT requires.
	buf, err := unix.Mmap(-1, 0, alignUp(size, 4096), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return c, "", fmt.Errorf("probe -methods: buffer: %w", err)
	}
	defer unix.Munmap(buf)
	buf = buf[:size]
	region := int64(0) // the overwrite's region; 0 when appending
	if overwrite {
		region = min(int64(cfg.Iterations)*int64(size), 64<<20)
		region = max(region/int64(size), 1) * int64(size)
		for off := int64(0); off < region; off += int64(size) {
			if err := pwriteAll(fd, buf, off); err != nil {
				return c, fmt.Sprintf("preparing the region to overwrite: %v", err), nil
			}
		}
		if err := unix.Fsync(fd); err != nil {
			return c, fmt.Sprintf("fsync after preparing: %v", err), nil
		}
	}
	for i := range buf {
		buf[i] = byte(i)
	}
	lat := make([]int64, 0, cfg.Iterations)
	t0 := time.Now()
	off := int64(0)
	for len(lat) < cfg.Iterations && time.Since(t0) < cfg.MaxTime && ctx.Err() == nil {
		if overwrite && off >= region {
			off = 0
		}
		start := time.Now()
		if err := pwriteAll(fd, buf, off); err != nil {
			return ProbeCost{}, fmt.Sprintf("write %d B at offset %d: %v", size, off, err), nil
		}
		if m.sync != nil {
			if err := m.sync(fd); err != nil {
				return ProbeCost{}, fmt.Sprintf("sync: %v", err), nil
			}
		}
		lat = append(lat, int64(time.Since(start)))
		off += int64(size)
	}
	return costOf(lat, time.Since(t0)), "", ctx.Err()
}

// pwriteAll writes all of b at off.
func pwriteAll(fd int, b []byte, off int64) error {
	n, err := unix.Pwrite(fd, b, off)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// writeMethodsTable prints the rows of probe -methods, if any.
func writeMethodsTable(w io.Writer, rows []SyncMethodCost) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "sync methods: each write(2) and its sync timed together; append grows a new file, overwrite rewrites space written and synced before")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "method\tplace\tsize\tp50\tp99\tmax\tops/s\t")
	var notes []string
	for _, r := range rows {
		size := FormatBytes(int64(r.WriteSize))
		if r.Refused != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\trefused\t\t\t\t\n", r.Method, r.Placement, size)
			notes = append(notes, fmt.Sprintf("%s, %s, %s refused: %s", r.Method, r.Placement, size, r.Refused))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t\n", r.Method, r.Placement, size, FormatNs(float64(r.P50Ns)),
			FormatNs(float64(r.P99Ns)), FormatNs(float64(r.MaxNs)), r.OpsPerSec)
		if r.Note != "" && !slices.Contains(notes, r.Method+": "+r.Note) {
			notes = append(notes, r.Method+": "+r.Note)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
	return nil
}
