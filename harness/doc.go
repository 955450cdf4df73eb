// Package harness measures anything that does key-value operations, with
// the measuring discipline built in rather than left to the reader.
//
// Read it in this order:
//
//   - percentile.go: the nearest-rank percentile every number comes from
//     (the arithmetic itself, its shared test table and the durability
//     model live in the pure subpackage calc, which the browser
//     exercises load too).
//   - latency.go: how per-operation latencies are kept (exact samples up to
//     a cap, then a per-worker HdrHistogram) and summarized; pool.go
//     pools the runs of a -repeat into one summary, because a p99 cannot
//     be averaged.
//   - store.go: the seam between the harness and a store (Store, OpenFunc,
//     RegisterEngine) and the null store that measures the harness itself;
//     store_kv.go plugs in the lab's engine, and the subpackage peers
//     plugs in bbolt and pebble.
//   - workload.go: the db_bench workloads (one table: each one's step and
//     what the store must hold) and key distributions, and how keys and
//     values are prepared before any clock starts.
//   - runner.go: one run, step by step (open and preload, workers,
//     warmup, measure, result), and the timed loop: one outer wall clock, per-op
//     latency, prompt cancellation, open loop; pacer.go wakes an open
//     loop's workers on time and accounts for its own lateness (the
//     pacer lag, and who was late: generator or store); progress.go watches it once
//     a second; result.go is what a run reports; synctimes.go times every
//     fdatasync of the timed region, for the fsync distribution.
//   - probe.go and model.go: what this disk costs, and what that predicts.
//   - crash.go: the engine's crash test as a command.
//   - grammar.go, spec.go, exec.go, report.go, cli.go: the run-spec
//     grammar shared by the command line, the lesson cells and the
//     quizzes (grammar.go is its table: every command and flag; spec.go
//     parses a line into a Spec and prints it back), the entry point the
//     server calls (ExecSpec), how results are printed, and
//     RunCLIRecorded.
//
// The timing rules, enforced by construction: keys and values are built
// before the timer starts; throughput is operations divided by one outer
// wall clock; a warmup runs before measuring; every clock read is
// monotonic; percentiles come from sorted samples. The -dishonest-* flags
// break one rule each, for the lessons that show what breaking it does;
// a result measured that way lists the broken rule in its "dishonest"
// field.
package harness
