// Package runq is the disk's one runner: every line the server measures
// (a cell's, a run: quiz's, a presenter's run for a room, a follower's)
// waits in one queue and runs alone, since two fsync benchmarks running at
// once would each report the other's noise.
//
// A Job is checked lines (CheckLines parses each line once; the parsed
// specs travel with the job to the harness and to the archive), a Sink
// that hears the job's messages, and a Class that places it in the queue:
// presenters' and cells' runs go ahead of room followers' waiting runs,
// in the order they came. The queue knows the class, not what a room is.
//
// Runner.Submit queues a job or refuses it (the queue is full, the runner
// has stopped); a refused job's error and its done go to its own sink,
// the same audience its results would have had. The runner takes jobs in
// order, runs each line in a fresh directory under the time budget of
// the whole job, records each finished line in the run archive after
// its measurement, and then sends the result with its run_id.
// A result comes from the harness with its typed head beside its JSON
// (harness.Output): the record's kind, filter fields and conditions, and
// the public form a server that serves others records and sends, are
// read off the head; the JSON is passed on, never decoded.
// Close cancels every job, waiting or running, and waits for the runner.
//
// Files:
//
//	job.go       Class, Sink, Job, Origin
//	queue.go     the FIFO by class, its refusals
//	runner.go    Config, Runner: Submit, Cancel, Close, the run loop, and
//	             recording each finished line in the run archive
//	check.go     CheckLines and CheckCell: a job's lines against the limits and the budget
//	budget.go    what one job may cost as a whole
//	addresses.go which servers a line may name by an address (-allow-engine)
//	messages.go  the messages a job's sink hears
//	errors.go    the refusals
package runq
