//go:build unix

package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Timing the sync methods (probe_methods.go has the table and the
// method lists) with POSIX calls: open(2) with the method's flags, an
// aligned buffer from mmap(2), pwrite(2) and the method's sync.

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
		region = max(regionFor(cfg.Iterations, size, methodRegion), int64(size))
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
