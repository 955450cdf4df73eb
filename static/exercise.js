// exercise.js: the in-browser Go exercises. The server renders each
// ```exercise NAME block of a lesson as <div class="exercise"
// data-exercise="NAME"></div> and loads this module (its own
// <script type="module">) only on pages that have one.
//
// Everything an exercise shows (title, instructions, starting code,
// solution, test cases) comes from the Go package kvlab/wasm/grader running
// in a Web Worker (exercise-worker.js); nothing is sent to the server. The
// worker starts when the first exercise comes near the viewport.
//
// An exercise whose code is a store (measure: true) also offers "Measure
// on this disk": the editor's code goes to labserver as a run message's
// "source", and the lines of MEASURE_LINES run it natively on the server's
// disk (-engine mine, interpreted; mine-null, the interpreter alone)
// beside kv's always and group. A server that serves others (not on
// loopback, with a token, a room) refuses, and the page shows why.
//
// The student's code is kept in localStorage under kvlab:exercise:NAME:code.
// A run that has not finished LIMIT_MS after it started (or the
// exercise's own limit_ms, for the crash exercises, whose grading reopens
// the student's store at every crash point) is stopped by terminating the
// worker; a fresh one is started for the next run.

import { $$, h, store, fmtMs, fmtNs } from './dom.js';
import { exerciseKey, browserID, lessonSlug } from './session.js';
import { CellRun, Socket } from './cells.js';
import { renderLines } from './results.js';

const LIMIT_MS = 2000;

// MEASURE_LINES are what "Measure on this disk" runs: the reader's store,
// the same code on a filesystem that does nothing (the interpreter's
// cost), and kv's always and group, all on one workload with four
// clients (the reader's store takes one call at a time, so its clients
// queue; group commit shares one fdatasync among them).
const MEASURE_WORKLOAD = '-workload fillrandom -ops 1000 -threads 4';
export const MEASURE_LINES = [
  `bench -engine mine ${MEASURE_WORKLOAD}`,
  `bench -engine mine-null ${MEASURE_WORKLOAD}`,
  `bench -engine kv -sync always ${MEASURE_WORKLOAD}`,
  `bench -engine kv -sync group ${MEASURE_WORKLOAD}`,
];

// measureSocket is the websocket the Measure buttons use: the lesson
// page's own (app.js), else one of their own.
let ownSocket = null;
function measureSocket() {
  if (window.kvlab && window.kvlab.socket) return window.kvlab.socket;
  if (!ownSocket) ownSocket = new Socket();
  return ownSocket;
}
let measureCounter = 0;
const workerURL = new URL('exercise-worker.js', import.meta.url).href;

// saved is what this browser keeps for one exercise: its code, and
// whether it was attempted and passed.
const saved = {
  key: exerciseKey,
  get(name, k) { return store.get(this.key(name, k)); },
  set(name, k, v) { store.set(this.key(name, k), v); },
  del(name, k) { store.del(this.key(name, k)); },
};

// ---------- the worker

// runner owns the one Web Worker of the page. Runs are serialized: the
// worker runs one program at a time anyway, and a stop restarts it.
const runner = {
  worker: null,
  state: 'idle', // idle | loading | ready | missing | failed
  exercises: null, // name -> exercise, from the first worker that loaded
  module: null, // the compiled yaegi.wasm, handed to every later worker
  listeners: [], // called on every state change
  current: null, // {id, resolve, reject, timer, t0, limit}
  chain: Promise.resolve(),
  nextID: 1,
  startedAt: 0,
  loadMs: [], // every load, for the page and its tests
  // warmFor are the exercises of the page; on each 'ready' with no run
  // waiting, the worker grades the solution of the first one with a
  // longer time limit than LIMIT_MS (a heavy grader: the crash
  // exercises) once, so that the reader's first Run does not pay for the
  // browser compiling its code paths. warmed lists the names warmed,
  // with their ms, for the tests.
  warmFor: [],
  warmed: [],
  // minLimitMs raises every limit to at least this much. It is 0 for a
  // reader; the page's tests raise it, so that a run on a busy machine
  // is not stopped before it finishes, and put it back to 0 to check
  // the page's own limits.
  minLimitMs: 0,

  start() {
    if (this.worker) return;
    this.startedAt = performance.now();
    this.setState('loading');
    let w;
    try {
      w = new Worker(workerURL);
    } catch (err) {
      this.fail(`could not start a Web Worker: ${err.message}`);
      return;
    }
    this.worker = w;
    w.onmessage = (e) => this.onMessage(w, e.data);
    w.postMessage({ type: 'init', module: this.module });
    w.onerror = (e) => {
      e.preventDefault();
      if (w === this.worker) this.fail(`the exercise worker failed: ${e.message || 'unknown error'}`);
    };
  },

  onMessage(w, m) {
    if (w !== this.worker) return;
    switch (m.type) {
      case 'module':
        this.module = m.module;
        break;
      case 'ready': {
        this.loadMs.push(performance.now() - this.startedAt);
        if (!this.exercises) this.exercises = Object.fromEntries(m.exercises.map((ex) => [ex.name, ex]));
        this.setState('ready');
        // After the runs that waited for the worker were sent: one of
        // them pays for the compiling itself, and should not wait for a
        // warm-up first.
        const heavy = this.warmFor.find((n) => this.exercises[n] && this.exercises[n].limit_ms > LIMIT_MS);
        if (heavy) {
          setTimeout(() => {
            if (w === this.worker && !this.current) w.postMessage({ type: 'warm', name: heavy });
          }, 0);
        }
        break;
      }
      case 'warmed':
        this.warmed.push({ name: m.name, ms: m.ms });
        break;
      case 'missing':
        this.setState('missing');
        this.stopWorker();
        break;
      case 'fatal':
        this.fail(m.message);
        break;
      case 'started':
        if (this.current && this.current.id === m.id) this.current.timer = setTimeout(() => this.stop(), this.current.limit);
        break;
      case 'result':
        if (this.current && this.current.id === m.id) this.finish(w, m);
        break;
    }
  },

  // finish hands a run's result to its caller.
  finish(w, m) {
    const c = this.current;
    clearTimeout(c.timer);
    this.current = null;
    if (m.dead) {
      // The Go program itself stopped: replace the worker.
      w.terminate();
      this.worker = null;
      this.start();
    }
    c.resolve({ result: m.result, ms: performance.now() - c.t0 });
  },

  fail(message) {
    this.failMessage = message;
    this.stopWorker();
    this.setState('failed');
  },

  stopWorker() {
    if (this.worker) {
      this.worker.terminate();
      this.worker = null;
    }
    if (this.current) {
      const c = this.current;
      clearTimeout(c.timer);
      this.current = null;
      c.reject(new Error(this.failMessage || 'the worker stopped'));
    }
  },

  // stop ends a run that is over the limit and starts a fresh worker.
  stop() {
    const c = this.current;
    this.current = null;
    if (this.worker) {
      this.worker.terminate();
      this.worker = null;
    }
    if (c) c.resolve({ stopped: true, ms: performance.now() - c.t0, limit: c.limit });
    this.start();
  },

  setState(s) {
    this.state = s;
    for (const fn of this.listeners) fn(s);
  },

  whenReady() {
    this.start();
    if (this.state === 'ready') return Promise.resolve();
    return new Promise((resolve, reject) => {
      const fn = (s) => {
        if (s !== 'ready' && s !== 'missing' && s !== 'failed') return;
        this.listeners = this.listeners.filter((f) => f !== fn);
        if (s === 'ready') resolve(); else reject(new Error(s));
      };
      this.listeners.push(fn);
    });
  },

  // limitFor is how long a run of the exercise name may take.
  limitFor(name) {
    const ex = this.exercises && this.exercises[name];
    return Math.max((ex && ex.limit_ms) || LIMIT_MS, this.minLimitMs);
  },

  // run grades src; it resolves to {result, ms} or {stopped, ms, limit}.
  run(name, src) {
    const p = this.chain.then(() => this.whenReady()).then(() => new Promise((resolve, reject) => {
      const id = this.nextID++;
      this.current = { id, resolve, reject, timer: null, t0: performance.now(), limit: this.limitFor(name) };
      this.worker.postMessage({ type: 'run', id, name, src });
    }));
    this.chain = p.catch(() => {});
    return p;
  },
};

// inline renders text with `code` spans.
function inline(text) {
  return text.split(/(`[^`]*`)/).filter(Boolean)
    .map((part) => (part.length > 1 && part.startsWith('`') && part.endsWith('`') ? h('code', { text: part.slice(1, -1) }) : part));
}

// fence matches a fenced code block of an exercise's instructions: a
// line of ``` (a language may follow), the code, a line of ```.
const fence = /^```[^\n]*\n([\s\S]*?)^```[ \t]*$/m;

// instructionBlocks renders an exercise's instructions: paragraphs
// separated by blank lines, with `code` spans, and fenced code blocks as
// blocks, each line on its own line (a phone scrolls one sideways rather
// than wrapping a // comment into the next statement). split with the
// fence's group alternates prose and code.
function instructionBlocks(text) {
  return text.split(new RegExp(fence.source, 'gm')).flatMap((part, i) => {
    if (i % 2 === 1) {
      return [h('pre', { class: 'ex-code', tabindex: '0' }, h('code', { text: part.replace(/\n$/, '') }))];
    }
    return part.split(/\n\s*\n/).map((para) => para.trim()).filter(Boolean).map((para) => h('p', {}, inline(para)));
  });
}

// ---------- one exercise block

// leaveMsg is what the status line says after Esc in an editor.
const leaveMsg = 'Tab now leaves the editor.';

class Exercise {
  constructor(root) {
    this.root = root;
    this.name = root.dataset.exercise;
    root.classList.add('ex');
    root.setAttribute('aria-busy', 'true');
    this.status = h('p', { class: 'ex-loading', text: 'Loading the Go interpreter for this exercise…' });
    root.replaceChildren(this.status);
  }

  showMissing() {
    this.root.removeAttribute('aria-busy');
    this.root.replaceChildren(h('div', { class: 'ex-missing' },
      h('strong', { text: 'This exercise needs the in-browser Go interpreter, which is not built yet.' }),
      h('p', {}, 'Run ', h('code', { text: 'make wasm' }), ' (or ', h('code', { text: 'make run' }), ') in the kvlab folder, then reload this page.')));
  }

  showFailed(message) {
    this.root.removeAttribute('aria-busy');
    this.root.replaceChildren(h('div', { class: 'ex-missing' },
      h('strong', { text: 'The Go interpreter could not start.' }),
      h('p', { text: message || '' })));
  }

  build(ex) {
    if (!ex) {
      this.showFailed(`There is no exercise called “${this.name}”. Known: ${Object.keys(runner.exercises).join(', ')}.`);
      return;
    }
    this.ex = ex;
    this.root.removeAttribute('aria-busy');
    const head = h('div', { class: 'ex-head' },
      h('span', { class: 'ex-kicker', text: 'Exercise' }),
      h('h3', { class: 'ex-title', text: ex.title }),
      this.badge = h('span', { class: 'ex-badge', hidden: true, text: 'passed' }));
    const instr = h('div', { class: 'ex-instructions' }, instructionBlocks(ex.instructions));
    this.buildEditor(ex);
    this.solution = h('div', { class: 'ex-solution', hidden: true },
      h('div', { class: 'ex-solution-head', text: 'A model solution (your code above is unchanged)' }),
      h('pre', {}, h('code', { text: ex.solution })));
    this.results = h('div', { class: 'ex-results', 'aria-live': 'polite' });
    this.measured = h('div', { class: 'ex-measured', 'aria-live': 'polite' });
    this.root.replaceChildren(head, instr, this.editor, this.keyHint, this.buildActions(), this.solution, this.results, this.measured);
    if (saved.get(this.name, 'attempted')) this.solBtn.hidden = false;
    if (saved.get(this.name, 'passed')) this.badge.hidden = false;
  }

  buildEditor(ex) {
    const code = saved.get(this.name, 'code');
    // Tab indents, so the way out by keyboard (Esc, then Tab, as in
    // CodeMirror) is written under the editor and is its description.
    const hintID = `ex-keys-${this.name}`;
    this.keyHint = h('p', { class: 'ex-keyhint', id: hintID },
      h('kbd', { text: 'Tab' }), ' indents, ', h('kbd', { text: 'Shift' }), '+', h('kbd', { text: 'Tab' }), ' outdents. To leave the editor by keyboard, press ',
      h('kbd', { text: 'Esc' }), ', then ', h('kbd', { text: 'Tab' }), ' (or ', h('kbd', { text: 'Shift' }), '+', h('kbd', { text: 'Tab' }), ').');
    this.editor = h('textarea', {
      class: 'ex-editor', spellcheck: 'false', autocapitalize: 'off', autocomplete: 'off',
      'aria-label': `Go code for ${ex.title}`, 'aria-describedby': hintID, wrap: 'off',
    });
    this.editor.value = code !== null ? code : ex.stub;
    this.fitEditor();
    this.editor.addEventListener('input', () => {
      saved.set(this.name, 'code', this.editor.value);
      this.fitEditor();
    });
    this.editor.addEventListener('keydown', (e) => this.onKey(e));
  }

  buildActions() {
    this.runBtn = h('button', { type: 'button', class: 'btn run ex-run', text: 'Run tests', onclick: () => this.run() });
    this.solBtn = h('button', { type: 'button', class: 'btn ex-show-solution', text: 'Show solution', hidden: true, onclick: () => this.toggleSolution() });
    this.resetBtn = h('button', { type: 'button', class: 'btn ex-reset', text: 'Reset', onclick: () => this.reset() });
    this.msg = h('span', { class: 'ex-msg', role: 'status' });
    this.measureBtn = h('button', {
      type: 'button', class: 'btn ex-measure', text: 'Measure on this disk', hidden: !this.ex.measure,
      title: 'run your store natively on the disk of the machine serving this page, beside kv always and group',
      onclick: () => this.measure(),
    });
    return h('div', { class: 'ex-actions' }, this.runBtn, this.solBtn, this.resetBtn, this.measureBtn,
      h('span', { class: 'ex-keys' }, h('kbd', { text: 'Ctrl' }), '+', h('kbd', { text: 'Enter' }), ' runs'), this.msg);
  }

  fitEditor() {
    const lines = this.editor.value.split('\n').length;
    this.editor.rows = Math.min(Math.max(lines + 1, 8), 40);
  }

  // onKey gives the textarea the few editor keys Go needs: Tab indents
  // (Escape first lets the next Tab leave the editor, and says so to a
  // screen reader), Enter keeps the indentation, Ctrl/Cmd+Enter or
  // Shift+Enter runs the tests.
  onKey(e) {
    if (e.key === 'Escape') {
      this.tabEscapes = true;
      this.msg.textContent = leaveMsg;
      return;
    }
    if (this.msg.textContent === leaveMsg) this.msg.textContent = '';
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey || e.shiftKey)) {
      e.preventDefault();
      this.run();
      return;
    }
    if (e.key === 'Tab' && !this.tabEscapes && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      this.indent(e.shiftKey);
      return;
    }
    this.tabEscapes = false;
    if (e.key === 'Enter' && !e.altKey) {
      e.preventDefault();
      this.newline();
    }
  }

  // indent inserts a tab, or indents (outdent: removes one tab from)
  // every selected line.
  indent(outdent) {
    const ta = this.editor;
    const start = ta.selectionStart, end = ta.selectionEnd, v = ta.value;
    if (start === end && !outdent) {
      this.replace(start, end, '\t', start + 1, start + 1);
      return;
    }
    const lineStart = v.lastIndexOf('\n', start - 1) + 1;
    const block = v.slice(lineStart, end);
    const changed = block.split('\n').map((l) => (outdent ? l.replace(/^\t/, '') : `\t${l}`)).join('\n');
    this.replace(lineStart, end, changed, start === end ? Math.max(lineStart, start + (changed.length - block.length)) : lineStart, lineStart + changed.length);
  }

  // newline keeps the line's indentation, one tab more after { or (.
  newline() {
    const ta = this.editor;
    const start = ta.selectionStart, v = ta.value;
    const lineStart = v.lastIndexOf('\n', start - 1) + 1;
    let indent = /^[\t ]*/.exec(v.slice(lineStart, start))[0];
    if (/[{(]\s*$/.test(v.slice(lineStart, start))) indent += '\t';
    this.replace(start, ta.selectionEnd, `\n${indent}`, start + 1 + indent.length, start + 1 + indent.length);
  }

  // replace edits the textarea so that undo still works where supported.
  replace(start, end, text, selStart, selEnd) {
    const ta = this.editor;
    ta.setSelectionRange(start, end);
    let done = false;
    try {
      done = document.execCommand && document.execCommand('insertText', false, text);
    } catch {
      done = false;
    }
    if (!done) {
      ta.setRangeText(text, start, end, 'end');
      ta.dispatchEvent(new Event('input'));
    }
    ta.setSelectionRange(selStart, selEnd);
  }

  reset() {
    const changed = this.editor.value !== this.ex.stub;
    if (changed && !window.confirm(`Discard your code for “${this.ex.title}” and start again from the starting code?`)) return;
    this.editor.value = this.ex.stub;
    saved.del(this.name, 'code');
    this.fitEditor();
    this.results.replaceChildren();
    this.msg.textContent = '';
  }

  toggleSolution() {
    this.solution.hidden = !this.solution.hidden;
    this.solBtn.textContent = this.solution.hidden ? 'Show solution' : 'Hide solution';
  }

  async run() {
    if (this.running) return;
    this.running = true;
    this.runBtn.disabled = true;
    this.root.classList.add('ex-running');
    this.msg.textContent = runner.state === 'ready' ? 'Running…' : 'Loading the Go interpreter…';
    saved.set(this.name, 'code', this.editor.value);
    saved.set(this.name, 'attempted', '1');
    this.ranSrc = this.editor.value; // the code a timeline's lines are of
    this.solBtn.hidden = false;
    try {
      const out = await runner.run(this.name, this.editor.value);
      this.root.dataset.runMs = String(Math.round(out.ms));
      if (out.stopped) this.showStopped(out.limit); else this.showResult(out.result, out.ms);
    } catch (err) {
      this.msg.textContent = '';
      this.results.replaceChildren(h('div', { class: 'ex-error' }, `Could not run the tests: ${err.message}`));
    } finally {
      this.running = false;
      this.runBtn.disabled = false;
      this.root.classList.remove('ex-running');
    }
  }

  // measure runs the editor's code on the server's disk (MEASURE_LINES);
  // pressed again while it runs, it cancels.
  measure() {
    if (this.measuring) {
      this.measuring.cancel();
      return;
    }
    saved.set(this.name, 'code', this.editor.value);
    // The archive records the run as this lesson's exercise (its /runs row
    // says "exercise NAME", not "a cell").
    const fields = { cell: MEASURE_LINES.join('\n'), source: this.editor.value, browser: browserID(), lesson: lessonSlug(), cell_id: `exercise-${this.name}` };
    const run = new CellRun(measureSocket(), `measure-${this.name}-${++measureCounter}`, fields, (m, r) => this.showMeasure(m, r));
    this.measuring = run;
    this.measureBtn.textContent = 'Cancel measuring';
    this.root.dataset.measure = 'running';
    this.showMeasure({ type: 'sent' }, run);
    run.start();
  }

  // showMeasure draws a measuring run as it goes and when it is done.
  showMeasure(m, run) {
    const head = h('div', { class: 'ex-output-head', text: 'Your store on this disk' });
    const note = h('p', { class: 'ex-note' },
      'Your code runs in the Go interpreter, natively on the disk of the machine serving this page, under your own durability rule (sync "own"). ',
      'The mine-null line is the same code on a filesystem that does nothing: the interpreter\'s own cost, already inside your figures. ',
      'Four clients; your store takes one call at a time.');
    let status = '';
    if (!run.finished) {
      status = run.current == null ? 'Waiting for the disk…' : `Measuring: line ${run.current + 1} of ${run.lines.length} (${run.lines[run.current].spec})…`;
    }
    const parts = [head, note];
    if (status) parts.push(h('p', { class: 'ex-msg', text: status }));
    for (const e of run.errors) parts.push(h('div', { class: 'ex-error', role: 'alert', text: e }));
    const syncs = syncsPerPut(run.lines[0] && run.lines[0].result);
    if (syncs) parts.push(h('p', { class: 'ex-summary', text: syncs }));
    const cost = interpreterCost(run.lines[0] && run.lines[0].result, run.lines[1] && run.lines[1].result);
    if (cost) parts.push(h('p', { class: 'ex-summary ex-interp', text: cost }));
    parts.push(renderLines(run.lines));
    this.measured.replaceChildren(...parts);
    if (run.finished) {
      this.measuring = null;
      this.measureBtn.textContent = 'Measure on this disk';
      this.root.dataset.measure = run.errors.length || run.lines.some((l) => l.error) ? 'error' : (run.cancelled ? 'cancelled' : 'done');
    }
  }

  showStopped(limit) {
    this.msg.textContent = '';
    this.results.replaceChildren(h('div', { class: 'ex-error ex-stopped' },
      h('strong', { text: `stopped after ${Math.round(limit / 1000)} s: does your loop end?` }),
      h('p', { text: 'The interpreter was stopped and a fresh one is starting; your code is kept.' })));
    this.root.dataset.state = 'stopped';
  }

  showResult(r, ms) {
    this.root.dataset.state = r.passed ? 'passed' : (r.error ? 'error' : 'failed');
    this.msg.textContent = `ran in ${fmtMs(ms)}`;
    if (r.passed) {
      saved.set(this.name, 'passed', '1');
      this.badge.hidden = false;
    }
    const parts = r.error ? [this.errorBox(r.error)] : this.grades(r);
    if (r.notes && r.notes.length > 0 && !r.error) parts.push(h('div', { class: 'ex-notes' }, r.notes.map((n) => h('p', {}, inline(n)))));
    if (r.output) parts.push(h('div', { class: 'ex-output' }, h('div', { class: 'ex-output-head', text: 'Your code printed' }), h('pre', { text: r.output })));
    this.results.replaceChildren(...parts);
  }

  // errorBox shows a compile error (and selects its line) or why the
  // tests could not run.
  errorBox(err) {
    const where = err.line > 0 ? `line ${err.line}, column ${err.col}: ` : '';
    if (err.line > 0) this.selectLine(err.line);
    return h('div', { class: 'ex-error ex-compile' },
      h('strong', { text: err.line > 0 ? 'Your code does not compile' : 'The tests could not run' }),
      h('p', {}, h('span', { class: 'ex-pos', text: where }), err.msg));
  }

  // grades are the summary and the tables of a run that compiled.
  grades(r) {
    const pass = r.cases.filter((c) => c.pass).length;
    let summary = r.passed ? `All ${r.cases.length} cases pass.` : `${pass} of ${r.cases.length} cases pass.`;
    if (r.mutants.length > 0) {
      const caught = r.mutants.filter((m) => m.caught).length;
      summary = `${r.cases.length} row${r.cases.length === 1 ? '' : 's'}, ${pass} hold for the correct Percentile; ${caught} of ${r.mutants.length} broken versions caught.${r.passed ? ' Passed.' : ''}`;
    }
    const parts = [h('p', { class: `ex-summary ${r.passed ? 'ex-ok' : 'ex-bad'}`, text: summary }), casesTable(r)];
    if (r.mutants.length > 0) parts.push(mutantsTable(r.mutants));
    r.cases.forEach((c, i) => {
      if (c.timeline && !c.pass) parts.push(this.timelineBox(c.timeline, i + 1));
    });
    return parts;
  }

  // timelineBox draws a failing crash row's timeline: the operations the
  // store did up to the power cut (writes as bars over their file), what
  // the cut kept of each, the reopen, and the line of the code that
  // issued the operation whose promise broke.
  timelineBox(t, row) {
    const src = (this.ranSrc || '').split('\n');
    const parts = [h('p', { class: 'ex-subhead', text: `What your store did in row ${row}, the failing case shrunk (${t.mode} mode)` })];
    if (t.line > 0 && t.line <= src.length) {
      const where = t.blame_in_recovery ? `the recovering Open's operation ${t.blame}` : `operation ${t.blame}`;
      parts.push(h('p', { class: 'ex-blame' }, 'The promise that broke: ', h('code', { text: t.blame_op }), ` (${where}), issued by `,
        h('button', { type: 'button', class: 'ex-line-link', text: `line ${t.line}`, title: 'select this line in the editor', onclick: () => this.selectLine(t.line) }),
        ' of your code:'));
      const from = Math.max(1, t.line - 2), to = Math.min(src.length, t.line + 2);
      const lines = [];
      for (let n = from; n <= to; n++) {
        const text = `${String(n).padStart(String(to).length)}  ${src[n - 1]}`;
        lines.push(n === t.line ? h('mark', { class: 'ex-blame-line', text }) : h('span', { class: 'ex-code-line', text }));
      }
      parts.push(h('pre', { class: 'ex-blame-code', tabindex: '0' }, lines));
    }
    // The extent of each file over the timeline, to scale the bars.
    const extent = {};
    for (const s of t.steps) {
      if (s.file) extent[s.file] = Math.max(extent[s.file] || 0, s.size || 0, (s.off || 0) + (s.len || 0));
    }
    const items = t.steps.map((s) => {
      const cls = ['ex-step', `ex-step-${s.n > 0 ? 'op' : s.kind}`];
      if (s.n > 0) cls.push(`ex-kind-${s.kind}`);
      if (s.fate) cls.push(`ex-fate-${s.fate}`);
      if (s.phase) cls.push(`ex-phase-${s.phase}`);
      if (s.blame) cls.push('ex-blame-step');
      if (s.err) cls.push('ex-step-err');
      if (!(s.n > 0)) {
        const mark = s.kind === 'cut' ? '⚡ ' : (s.kind === 'return' ? '↩ ' : (s.kind === 'result' ? '✗ ' : ''));
        return h('li', { class: cls.join(' ') }, h('span', { class: 'ex-step-text', text: mark + s.text }));
      }
      let bar = null;
      if (s.kind === 'write' && extent[s.file] > 0) {
        const x = extent[s.file];
        bar = h('span', { class: 'ex-bar', title: `${s.file}: bytes ${s.off}–${s.off + s.len} of ${x}` },
          h('span', { class: 'ex-bar-fill', style: `left:${(100 * s.off) / x}%;width:${Math.max((100 * s.len) / x, 1)}%` }));
      }
      return h('li', { class: cls.join(' ') },
        h('span', { class: 'ex-step-n', text: String(s.n) }),
        h('span', { class: 'ex-step-text', text: s.text }),
        bar,
        s.line > 0 ? h('button', { type: 'button', class: 'ex-line-link ex-step-line', text: `line ${s.line}`, onclick: () => this.selectLine(s.line) }) : null,
        s.fate ? h('span', { class: 'ex-fate', text: s.blame ? `${s.fate} · broke its promise` : s.fate }) : (s.blame ? h('span', { class: 'ex-fate', text: 'broke its promise' }) : null));
    });
    parts.push(h('ol', { class: 'ex-steps' }, items));
    return h('div', { class: 'ex-timeline', 'data-row': String(row) }, parts);
  }

  selectLine(line) {
    const lines = this.editor.value.split('\n');
    if (line > lines.length) return;
    let start = 0;
    for (let i = 0; i < line - 1; i++) start += lines[i].length + 1;
    this.editor.focus({ preventScroll: true });
    this.editor.setSelectionRange(start, start + lines[line - 1].length);
  }
}

// syncsPerPut says how often the reader's store synced per Put on the
// real disk, as the grader counts it in the browser.
function syncsPerPut(res) {
  if (!res || !res.latency || !res.latency.put || !res.latency.put.count) return '';
  const puts = res.latency.put.count;
  const by = res.fsyncs_by_cause || {};
  return `Your store: ${(res.fsyncs / puts).toFixed(2)} syncs per Put on this disk (${res.fsyncs} for ${puts} Puts: ${by.fdatasync || 0} fdatasync, ${by['fsync-dir'] || 0} directory fsync).`;
}

// interpreterCost compares the reader's store on the disk (mine) with the
// same code on a filesystem that does nothing (mine-null), by the time
// per Put of each (one over its Puts per second: the clients queue for
// the store, so a Put's latency counts the wait as well).
function interpreterCost(mine, none) {
  const perPut = (r) => (r && r.latency && r.latency.put && r.ops_per_sec > 0 ? 1e9 / r.ops_per_sec : null);
  const a = perPut(mine), b = perPut(none);
  if (a == null || b == null) return '';
  return `The interpreter's own cost (mine-null): ${fmtNs(b)} per Put, ${Math.round((100 * b) / a)}% of your store's ${fmtNs(a)} per Put on this disk (one over the Puts per second).`;
}

function casesTable(r) {
  const isRows = r.mutants.length > 0;
  const head = h('thead', {}, h('tr', {},
    h('th', { text: '#' }), h('th', { text: 'input' }), h('th', { text: 'want' }),
    h('th', { text: isRows ? 'correct Percentile gives' : 'got' }), h('th', { text: '' }), h('th', { text: 'hint' })));
  const rows = r.cases.map((c, i) => h('tr', { class: c.pass ? 'ex-pass' : 'ex-fail' },
    h('td', { class: 'ex-num', text: String(i + 1) }),
    h('td', {}, h('code', { text: c.input }), c.note ? h('div', { class: 'ex-note', text: c.note }) : null),
    h('td', {}, h('code', { text: c.want })),
    h('td', {}, h('code', { text: c.got })),
    h('td', { class: 'ex-verdict', text: c.pass ? '✓ pass' : '✗ fail' }),
    h('td', { class: 'ex-hint', text: c.pass ? '' : c.hint })));
  return h('div', { class: 'ex-table-wrap' }, h('table', { class: 'ex-table' }, head, h('tbody', {}, rows)));
}

function mutantsTable(mutants) {
  const head = h('thead', {}, h('tr', {},
    h('th', { text: 'broken version' }), h('th', { text: 'what it gets wrong' }), h('th', { text: '' }), h('th', { text: 'caught by rows / how to catch it' })));
  const rows = mutants.map((m) => h('tr', { class: m.caught ? 'ex-pass' : 'ex-fail' },
    h('td', {}, h('code', { text: m.name })),
    h('td', { text: m.description }),
    h('td', { class: 'ex-verdict', text: m.caught ? '✓ caught' : '✗ survived' }),
    h('td', { class: 'ex-hint', text: m.caught ? m.caught_by.join(', ') : m.hint })));
  return h('div', { class: 'ex-table-wrap' }, h('p', { class: 'ex-subhead', text: 'Broken versions' }), h('table', { class: 'ex-table ex-mutants' }, head, h('tbody', {}, rows)));
}

// ---------- wiring

// setupExercises makes every exercise block of the page live and starts
// the worker when one is close to being seen.
export function setupExercises() {
  const blocks = $$('.exercise[data-exercise]');
  if (blocks.length === 0) return;
  const exercises = blocks.map((b) => new Exercise(b));
  runner.warmFor = blocks.map((b) => b.dataset.exercise);
  runner.listeners.push((s) => onRunnerState(exercises, s));
  if ('IntersectionObserver' in window) {
    const io = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) {
        io.disconnect();
        runner.start();
      }
    }, { rootMargin: '800px 0px' });
    blocks.forEach((b) => io.observe(b));
  } else {
    runner.start();
  }
  // For the page's own tests and the curious: load and run timings.
  window.kvlabExercises = { runner, limitMs: LIMIT_MS };
}

function onRunnerState(exercises, s) {
  if (s === 'ready' && !exercises[0].ex && !exercises[0].built) {
    for (const x of exercises) {
      x.built = true;
      x.build(runner.exercises[x.name]);
    }
  } else if (s === 'missing') {
    exercises.forEach((x) => x.showMissing());
  } else if (s === 'failed') {
    for (const x of exercises) {
      if (!x.built) x.showFailed(runner.failMessage);
      else if (!x.running) x.msg.textContent = `The Go interpreter stopped: ${runner.failMessage}`;
    }
  }
}

setupExercises();
