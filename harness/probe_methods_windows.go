package harness

import "context"

// ProbeMethods on Windows lists Windows' ways of making a write durable,
// each reported as not measured: the timing code (probe_methods_unix.go)
// is POSIX open flags and calls. `probe` without -methods times
// write+FlushFileBuffers, the engine's own flush here.
func ProbeMethods(ctx context.Context, dir string, cfg ProbeConfig) ([]SyncMethodCost, error) {
	const why = "not measured on Windows by this build: probe without -methods times write+FlushFileBuffers"
	var rows []SyncMethodCost
	for _, size := range methodSizes {
		for _, m := range []string{"write+FlushFileBuffers", "FILE_FLAG_WRITE_THROUGH write", "FILE_FLAG_NO_BUFFERING|FILE_FLAG_WRITE_THROUGH write"} {
			for _, place := range []string{"append", "overwrite"} {
				rows = append(rows, SyncMethodCost{Method: m, Placement: place, WriteSize: size, Refused: why})
			}
		}
	}
	return rows, nil
}
