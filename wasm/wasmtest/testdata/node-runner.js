// node-runner.js runs exercise jobs against the yaegi worker wasm the way
// the page does: the wasm lives in a worker thread, each job has a time
// limit, and a job over the limit terminates the worker and starts a fresh
// one.
//
//   node node-runner.js WASM_EXEC_JS YAEGI_WASM JOBS_JSON
//
// JOBS_JSON is an array of {name, src, limit_ms}. The output is one JSON
// object: {ready_ms, results: [{result | timed_out, dead, run_ms, restart_ms}]}.
// dead means the Go program itself stopped (a fatal error such as "all
// goroutines are asleep"); the runner then starts a fresh worker too.
"use strict";

const { Worker, isMainThread, parentPort, workerData } = require("worker_threads");
const fs = require("fs");

if (!isMainThread) {
	// Worker side: load wasm_exec.js and the wasm, then grade on request.
	globalThis.require = require;
	globalThis.path = require("path");
	globalThis.TextEncoder = require("util").TextEncoder;
	globalThis.TextDecoder = require("util").TextDecoder;
	globalThis.performance ??= require("perf_hooks").performance;
	globalThis.crypto ??= require("crypto").webcrypto;
	require(workerData.wasmExec);
	// As exercise-worker.js: remember the Go runtime's fatal error, if any.
	// (Under Node the runtime writes it with fs.writeSync to fd 2; in a
	// browser wasm_exec.js turns the same write into console.log.)
	let stderr = "";
	globalThis.fs = Object.assign(Object.create(fs), {
		writeSync(fd, buf, ...rest) {
			if (fd === 2) {
				stderr = (stderr + new TextDecoder().decode(buf)).slice(-4096);
			}
			return fs.writeSync(fd, buf, ...rest);
		},
	});
	const fatal = () => {
		const m = /fatal error: ([^\n]*)/.exec(stderr);
		return m ? m[1] : "the Go program exited";
	};
	globalThis.kvlabGraderReady = () => parentPort.postMessage({ type: "ready" });
	const go = new Go();
	parentPort.on("message", (job) => {
		parentPort.postMessage({ type: "started" });
		let result = go.exited ? undefined : globalThis.kvlabGrader.run(job.name, job.src);
		let dead = false;
		if (go.exited || result === undefined) {
			dead = true;
			result = { passed: false, cases: [], error: { line: 0, col: 0, msg: "crashed: " + fatal() } };
		}
		parentPort.postMessage({ type: "result", result, dead });
	});
	WebAssembly.instantiate(fs.readFileSync(workerData.wasm), go.importObject)
		.then((r) => go.run(r.instance))
		.catch((err) => parentPort.postMessage({ type: "fatal", message: String(err) }));
	return;
}

const [wasmExec, wasm, jobsFile] = process.argv.slice(2).map((p) => require("path").resolve(p));
const jobs = JSON.parse(fs.readFileSync(jobsFile, "utf8"));

function start() {
	const t0 = performance.now();
	const w = new Worker(__filename, { workerData: { wasmExec, wasm } });
	const ready = new Promise((resolve, reject) => {
		w.once("message", (m) => (m.type === "ready" ? resolve(performance.now() - t0) : reject(new Error(m.message))));
		w.once("error", reject);
	});
	return { w, ready };
}

function run(w, job) {
	return new Promise((resolve) => {
		// As in the page: the time from posting to the result is what the
		// student waits; the limit counts from the moment the run starts.
		const t0 = performance.now();
		let timer;
		const onMessage = (m) => {
			if (m.type === "started") {
				timer = setTimeout(() => {
					w.off("message", onMessage);
					resolve({ timed_out: true, run_ms: performance.now() - t0 });
				}, job.limit_ms);
				return;
			}
			clearTimeout(timer);
			w.off("message", onMessage);
			resolve({ result: m.result, dead: m.dead, run_ms: performance.now() - t0 });
		};
		w.on("message", onMessage);
		w.postMessage({ name: job.name, src: job.src });
	});
}

(async () => {
	let cur = start();
	const out = { ready_ms: await cur.ready, results: [] };
	for (const job of jobs) {
		const r = await run(cur.w, job);
		if (r.timed_out || r.dead) {
			await cur.w.terminate();
			cur = start();
			r.restart_ms = await cur.ready;
		}
		out.results.push(r);
	}
	await cur.w.terminate();
	process.stdout.write(JSON.stringify(out));
})().catch((err) => {
	console.error(err);
	process.exit(1);
});
