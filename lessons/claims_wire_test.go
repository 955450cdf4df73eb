package lessons_test

import (
	"strings"
	"testing"
)

// marginsHold checks timing relations on a cell's runs, each written as a
// margin that is below 1 when the relation (named in what, in order)
// holds, on the median of three runs when the first run breaks one
// (medianOfRuns).
func marginsHold(t *testing.T, prefix, cell string, margins func([]any) []float64, what ...string) {
	t.Helper()
	holds := func(m float64) bool { return m < 1 }
	for i, m := range medianOfRuns(t, prefix, cell, margins, holds) {
		if !holds(m) {
			t.Errorf("%s%s: %s does not hold: margin %.2f (median of 3 runs), want below 1", prefix, cell, what[i], m)
		}
	}
}

// Lesson 11, "The same engine behind a socket": under none nearly all of a
// Put's time over the wire is the trip. The client's median is several
// times the in-process one, the server's own median is below the
// client's, and the difference (the hop) is microseconds.
func TestWireHop(t *testing.T) {
	quizByID(t, lessonByPrefix(t, "11-"), "hop-us")
	margins := func(rs []any) []float64 {
		kv, srv := rs[0].([]any)[0], rs[0].([]any)[1]
		client, server := num(t, srv, "latency.put.p50_ns"), num(t, srv, "server_latency.put.p50_ns")
		return []float64{
			5 * num(t, kv, "latency.put.p50_ns") / client, // the wire at least 5x the engine alone
			server / client,          // the server's part below the client's
			2000 / (client - server), // the hop at least 2 µs
		}
	}
	marginsHold(t, "11-", "hop", margins, "wire >= 5x in-process", "server < client", "hop >= 2 µs")
}

// "The wire beside a flush": under always the flush still dominates: the
// wire takes a share of the throughput, not most of it, and kvserver's
// own time (its fdatasync included) is most of the client's.
func TestWireBesideAFlush(t *testing.T) {
	quizByID(t, lessonByPrefix(t, "11-"), "hop-always-ratio")
	margins := func(rs []any) []float64 {
		kv, srv := rs[0].([]any)[0], rs[0].([]any)[1]
		return []float64{
			0.4 * num(t, kv, "ops_per_sec") / num(t, srv, "ops_per_sec"),                       // kvserver keeps at least 0.4 of kv's ops/s
			0.5 * num(t, srv, "latency.put.p50_ns") / num(t, srv, "server_latency.put.p50_ns"), // the server's median at least half the client's
		}
	}
	marginsHold(t, "11-", "hop-always", margins, "kvserver >= 0.4x kv's ops/s", "server p50 >= half the client's")
}

// "Connections share a flush": 16 connections under group commit do more
// than twice the ops/s of one, with fewer fdatasyncs per Put: they share
// flushes.
func TestConnectionsShareAFlush(t *testing.T) {
	quizByID(t, lessonByPrefix(t, "11-"), "connections-gain")
	margins := func(rs []any) []float64 {
		sw := rs[0].([]any)
		one, many := sw[0], sw[2]
		perPut := func(r any) float64 { return num(t, r, "fsyncs") / num(t, r, "ops") }
		return []float64{
			2 * num(t, one, "ops_per_sec") / num(t, many, "ops_per_sec"), // 16 connections at least 2x one
			2 * perPut(many) / perPut(one),                               // at most half the flushes per Put
		}
	}
	marginsHold(t, "11-", "connections", margins, "16 connections >= 2x one", "at most half the fdatasyncs per Put")
}

// "A pipeline is a batch": under group, 16 connections one SET at a
// time put at most 16 SETs in a flush (one each), and pipelining 16 deep
// puts more than 16 in one, with more ops/s; the throughput gains less
// than the sharing. Under always the same pipeline still makes one
// fdatasync per SET, and each SET waits in the server's queue: the
// client's median is many times the server's own.
func TestPipelineIsABatch(t *testing.T) {
	l := lessonByPrefix(t, "11-")
	quizByID(t, l, "pipeline-gain")
	if sec := section(t, l, "A pipeline is a batch"); !strings.Contains(sec, "144 SETs per fsync") {
		t.Errorf("the pipeline section does not quote Redis's SETs per fsync")
	}
	perFlush := func(r any) float64 { return num(t, r, "ops") / max(num(t, r, "fsyncs"), 1) }
	rs := cellResults(t, "11-", "pipeline")
	one, piped, always := rs[0], rs[1], rs[2]
	if p, ok := lookup(piped, "pipeline"); !ok || p != 16 {
		t.Errorf("the pipelined line's result says pipeline %v, want 16", p)
	}
	if pf := perFlush(one); pf > 16 {
		t.Errorf("16 connections one SET at a time: %.1f SETs per fdatasync, more than the 16 in flight", pf)
	}
	if pf := perFlush(piped); pf <= 16 {
		t.Errorf("16 connections pipelining 16 deep: %.1f SETs per fdatasync, want more than the 16 connections alone could share", pf)
	}
	if f, n := num(t, always, "fsyncs"), num(t, always, "ops"); f < n || f > 1.02*n+2 {
		t.Errorf("always, pipelined: %v fdatasyncs for %v SETs, want one each", f, n)
	}
	marginsHold(t, "11-", "pipeline", func(rs []any) []float64 {
		one, piped, always := rs[0], rs[1], rs[2]
		opsGain := num(t, piped, "ops_per_sec") / num(t, one, "ops_per_sec")
		return []float64{
			1.5 / opsGain, // the pipeline at least 1.5x the ops/s
			opsGain / (perFlush(piped) / perFlush(one)),                                            // the ops/s gain below the sharing's
			4 * num(t, always, "server_latency.put.p50_ns") / num(t, always, "latency.put.p50_ns"), // the queue: client p50 at least 4x the server's
		}
	}, "pipelined >= 1.5x the ops/s", "ops/s gains less than SETs per flush", "always: client p50 >= 4x the server's")
}

// "Real systems beside kv": under always kv makes one fdatasync per Put,
// SQLite one per commit plus a few (checkpoints), and SQLite's ops/s is
// within a small factor of kv's.
func TestPeersUnderAlways(t *testing.T) {
	quizByID(t, lessonByPrefix(t, "11-"), "sqlite-vs-kv")
	rs := cellResults(t, "11-", "peers")
	pair := rs[0].([]any)
	kv, sq := pair[0], pair[1]
	if f, n := num(t, kv, "fsyncs"), num(t, kv, "ops"); f != n {
		t.Errorf("kv always: %v fdatasyncs for %v Puts, want one each", f, n)
	}
	if f, n := num(t, sq, "fsyncs"), num(t, sq, "ops"); f < n || f > 1.1*n {
		t.Errorf("sqlite always: %v syncs for %v Puts, want one per commit and a few more (at most 10%% more)", f, n)
	}
	if x := num(t, sq, "ops_per_sec") / num(t, kv, "ops_per_sec"); x < 0.1 || x > 10 {
		t.Errorf("sqlite is %.2fx kv's ops/s; the lesson says within a small factor", x)
	}
	if len(rs) > 1 {
		if lat := num(t, rs[1], "latency.put.p50_ns"); lat <= num(t, rs[1], "server_latency.put.p50_ns") {
			t.Errorf("redis: client p50 %v ns not above the server's own time: the client's carries the flush and the trip", lat)
		}
	}
}

// "Each system's knob": under NORMAL SQLite syncs only at checkpoints
// (hundreds of Puts per sync, where FULL makes one per commit), and
// taking the flush off the write path gains several times FULL's ops/s.
func TestSQLiteKnob(t *testing.T) {
	l := lessonByPrefix(t, "11-")
	quizByID(t, l, "sqlite-normal-gain")
	if sec := section(t, l, "Each system's knob, and what it gives up"); !strings.Contains(sec, "every few hundred Puts") {
		t.Errorf("the knobs section does not say how far apart NORMAL's syncs are")
	}
	rs := cellResults(t, "11-", "knobs")
	full, normal := rs[0], rs[1]
	if f, n := num(t, full, "fsyncs"), num(t, full, "ops"); f < n {
		t.Errorf("FULL: %v syncs for %v Puts, want at least one per commit", f, n)
	}
	if per := num(t, normal, "ops") / max(num(t, normal, "fsyncs"), 1); per < 50 {
		t.Errorf("NORMAL: %.0f Puts per sync; the lesson says the syncs are the checkpoints', a couple of hundred Puts apart", per)
	}
	marginsHold(t, "11-", "knobs", func(rs []any) []float64 {
		return []float64{2 * num(t, rs[0], "ops_per_sec") / num(t, rs[1], "ops_per_sec")}
	}, "NORMAL at least 2x FULL's ops/s")
}
