package harnesstest

import (
	"time"

	"kvlab/harness"
)

// SimulateDisk makes the kv engine open every store on one fresh
// in-memory filesystem whose fdatasync waits flush (and nothing else),
// and the probe's fdatasync wait flush before its real one, until the
// returned restore is called; restore drops the in-memory files. It is
// for tests (the lessons' disk check): it changes every run in the
// process (harness.SimulatedDisk), so two calls must not overlap.
func SimulateDisk(flush time.Duration) (restore func()) {
	return SimulateDiskBytes(flush, 0)
}

// SimulateDiskBytes is SimulateDisk with a flush that also costs perMiB
// for every MiB it carries, as a real disk's does: each fdatasync of kv
// and of the probe waits flush + perMiB x (bytes written to that file
// since its last fdatasync) / 1 MiB (harness.DiskSimulation).
func SimulateDiskBytes(flush, perMiB time.Duration) (restore func()) {
	old := harness.SimulatedDisk.Swap(&harness.DiskSimulation{Flush: flush, PerMiB: perMiB})
	return func() { harness.SimulatedDisk.Store(old) }
}
