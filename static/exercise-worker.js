// exercise-worker.js: the Web Worker that hosts the Go interpreter for the
// in-browser exercises. exercise.js starts it on pages with an exercise.
// A classic worker script, not a module: it loads wasm_exec.js with
// importScripts.
//
// It loads wasm_exec.js and yaegi.wasm from wasm/ next to this file (built
// by `make wasm` from ./wasm/worker), waits until the Go side publishes
// kvlabGrader, and then answers the page:
//
//   in:  {type: 'init', module}                    first; module is a compiled
//                                                   yaegi.wasm from an earlier worker, or null
//        {type: 'run', id, name, src}
//        {type: 'warm', name}                       grade the model solution of name once
//                                                   and drop the result (see warm)
//   out: {type: 'module', module}                   the compiled wasm, for the next worker
//        {type: 'ready', exercises, load_ms}       once, when it can grade
//        {type: 'missing', what}                    the wasm was not built (HTTP 404)
//        {type: 'fatal', message}                   anything else that stops it loading
//        {type: 'started', id}                      a run begins (the page's time limit starts here)
//        {type: 'warmed', name, ms}                 the warm-up of name ended
//        {type: 'result', id, result, run_ms, dead} a run ended; dead: the Go
//                                                   program itself stopped (a
//                                                   fatal error), start a new worker
//
// A run is synchronous inside the wasm: a loop that never ends never
// returns, so the page enforces the time limit by terminating this worker
// and starting a new one.
'use strict';

const base = new URL('wasm/', self.location.href);
let grader = null;
let go = null;
const pending = [];

// wasm_exec.js prints the Go program's stdout and stderr with console.log.
// Keep the tail, to explain a fatal error ("all goroutines are asleep").
let logTail = '';
const consoleLog = console.log.bind(console);
console.log = (...args) => {
  logTail = `${logTail}${args.join(' ')}\n`.slice(-4096);
  consoleLog(...args);
};

function fatalText() {
  const m = /fatal error: ([^\n]*)/.exec(logTail);
  return m ? m[1] : 'the Go program exited';
}

let booting = false;

self.onmessage = (e) => {
  const msg = e.data;
  if (msg && msg.type === 'init') {
    if (booting) return;
    booting = true;
    boot(msg.module || null).catch((err) => {
      self.postMessage({ type: 'fatal', message: String(err && err.message ? err.message : err) });
    });
  } else if (grader) {
    handle(msg);
  } else {
    pending.push(msg);
  }
};

function handle(msg) {
  if (msg && msg.type === 'warm') {
    warm(String(msg.name));
    return;
  }
  if (!msg || msg.type !== 'run') return;
  self.postMessage({ type: 'started', id: msg.id });
  const t0 = performance.now();
  let result;
  let problem = '';
  try {
    result = go.exited ? undefined : grader.run(String(msg.name), String(msg.src));
  } catch (err) {
    problem = String(err);
  }
  const dead = go.exited || result === undefined;
  if (dead) {
    problem = problem || fatalText();
    const text = `Your code stopped the Go interpreter (${problem}). A receive from a channel nobody sends on does this. A fresh interpreter is starting; run again when you have changed the code.`;
    result = {
      exercise: msg.name, passed: false, summary: text, cases: [], mutants: [], notes: [], output: '',
      error: { line: 0, col: 0, msg: text, text },
    };
  }
  self.postMessage({ type: 'result', id: msg.id, result, run_ms: performance.now() - t0, dead });
}

// warm grades the model solution of exercise name and drops the result.
// The first grading in a fresh worker pays for the browser compiling the
// grader's code paths: for the crash exercises, seconds on a slow machine
// (the Go side warms only the quick percentile grader before 'ready').
// The page asks for it once the worker is ready, while the reader reads;
// a Run clicked meanwhile waits for it, as it would have paid for the
// compiling itself, and its time limit starts only with its own 'started'.
function warm(name) {
  const t0 = performance.now();
  const ex = grader.exercises().find((e) => e.name === name);
  if (ex && !go.exited) {
    try {
      grader.run(name, ex.solution);
    } catch {
      // A warm-up that fails leaves the first Run to pay, nothing worse.
    }
  }
  self.postMessage({ type: 'warmed', name, ms: performance.now() - t0 });
}

// boot loads the Go program. Given a module compiled by an earlier worker
// (the page keeps it), a restart skips the download and the compile.
async function boot(module) {
  const t0 = performance.now();
  const wasmExecURL = new URL('wasm_exec.js', base).href;
  const head = await fetch(wasmExecURL, { method: 'HEAD' }).catch(() => null);
  if (head && head.status === 404) {
    self.postMessage({ type: 'missing', what: 'wasm_exec.js' });
    return;
  }
  importScripts(wasmExecURL);
  if (!module) {
    module = await compile();
    if (!module) return;
  }
  go = new Go();
  const ready = new Promise((resolve) => { self.kvlabGraderReady = resolve; });
  const instance = await WebAssembly.instantiate(module, go.importObject);
  const exited = go.run(instance).then(() => { throw new Error('the Go interpreter exited'); });
  await Promise.race([ready, exited]);
  grader = self.kvlabGrader;
  self.postMessage({ type: 'ready', exercises: grader.exercises(), load_ms: performance.now() - t0 });
  while (pending.length > 0) handle(pending.shift());
}

// compile downloads and compiles yaegi.wasm and hands the module to the
// page for the next worker; null when it was not built.
async function compile() {
  const resp = await fetch(new URL('yaegi.wasm', base).href);
  if (resp.status === 404) {
    self.postMessage({ type: 'missing', what: 'yaegi.wasm' });
    return null;
  }
  if (!resp.ok) throw new Error(`loading yaegi.wasm: HTTP ${resp.status}`);
  const type = resp.headers.get('Content-Type') || '';
  const module = WebAssembly.compileStreaming && type.startsWith('application/wasm')
    ? await WebAssembly.compileStreaming(resp)
    : await WebAssembly.compile(await resp.arrayBuffer());
  try {
    self.postMessage({ type: 'module', module });
  } catch {
    // A browser that cannot pass modules between threads downloads again.
  }
  return module;
}
