// Package calc holds the pure arithmetic of the lab: the nearest-rank
// percentile, the table of cases every implementation of it must pass, and
// the batch/periodic durability model.
//
// It imports nothing that touches a disk, a clock or the operating system,
// so the same code runs in the harness, in its tests, and compiled to
// WebAssembly in the browser exercises (which load PercentileCases as the
// students' unit-test table).
package calc
