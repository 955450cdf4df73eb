package harness

import (
	"fmt"
	"io"
	"kvlab/harness/calc"
	"slices"
	"text/tabwriter"
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

// methodRegion caps the region an overwrite row writes and syncs
// before its clock starts, and then rewrites in a loop: 16 MiB, the size
// of pg_test_fsync's test file, quick to prepare on a slow disk; a
// second of 8 KiB durable writes at a few thousand per second stays
// inside it.
const methodRegion = 16 << 20

// methodSizes are the write sizes the table measures each method at: a
// small record and a database page.
var methodSizes = []int{128, 8 << 10}

// openFile opens a file for the methods; tests replace it to see how a
// refusal is reported.
type openFile func(path string, flags int, perm uint32) (int, error)

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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t\n", r.Method, r.Placement, size, calc.FormatNs(float64(r.P50Ns)),
			calc.FormatNs(float64(r.P99Ns)), calc.FormatNs(float64(r.MaxNs)), r.OpsPerSec)
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

// alignUp rounds n up to a multiple of align (n itself when align is 0).
func alignUp(n, align int) int {
	if align <= 0 {
		return n
	}
	return (n + align - 1) / align * align
}
