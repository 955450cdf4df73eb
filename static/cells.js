// cells.js: running cells over the /ws websocket. Socket is the page's
// one connection; CellRun is one run of a cell's text, folding the
// server's messages (queued, started, progress, result, error, done) into
// per-line state any page can draw with results.js; Cell is a lesson
// page's cell: its editor, buttons, state line and output.

import { $, $$, h, store, fmtInt, fmtNs, fmtRate, svg, specCode } from './dom.js';
import { sparkline } from './charts.js';
import { renderLines, cellLinks } from './results.js';
import { lessonSlug, resultsKey, updateProgress, needToken, token, forgetToken, browserID } from './session.js';

// GO_SPACE is what Go's strings.TrimSpace trims (unicode.IsSpace).
// JavaScript's trim() is not the same set: it keeps U+0085, which Go
// trims, and trims U+FEFF, which Go keeps.
const GO_SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const TRIM = new RegExp(`^${GO_SPACE}+|${GO_SPACE}+$`, 'g');

// splitCellLines splits a cell's text into the lines the server runs,
// exactly as lesson.CellLines does: each line trimmed, blank lines and
// lines starting with # left out. The server numbers its messages' lines
// this way (internal/lesson/testdata/celllines.json holds the cases both
// must agree on).
export function splitCellLines(text) {
  return text.split('\n').map((l) => l.replace(TRIM, '')).filter((l) => l && !l.startsWith('#'));
}

// showConn shows a connection's state (connecting, connected,
// disconnected...) in a bar's status element, when there is one.
export function showConn(el, st) {
  if (!el) return;
  el.hidden = false;
  el.dataset.state = st;
  el.textContent = st;
}

// Socket is the page's websocket to labserver, opened on the first send
// and again after it closes. Messages go to the handler registered for
// their id; when the connection drops, every handler gets {type: 'lost'}.
// status, when given, is an element that shows the connection's state.
export class Socket {
  constructor(status) { this.ws = null; this.pending = []; this.handlers = new Map(); this.conn = status || null; }
  url() {
    const t = token(false);
    return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/ws${t ? `?token=${encodeURIComponent(t)}` : ''}`;
  }
  ensure() {
    if (this.ws && (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING)) return;
    this.ws = new WebSocket(this.url());
    this.status('connecting');
    this.ws.onopen = () => { this.status('connected'); for (const m of this.pending.splice(0)) this.ws.send(JSON.stringify(m)); };
    this.ws.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch { return; }
      const fn = this.handlers.get(m.id);
      if (fn) fn(m);
      else if (m.type === 'error') console.warn('labserver:', m.message);
    };
    this.ws.onclose = () => {
      this.status('disconnected');
      this.ws = null;
      for (const [id, fn] of this.handlers) fn({ type: 'lost', id });
    };
  }
  status(st) { showConn(this.conn, st); }
  send(m) {
    this.ensure();
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m)); else this.pending.push(m);
  }
  on(id, fn) { this.handlers.set(id, fn); }
  off(id) { this.handlers.delete(id); }
}

// scriptFor is the text of the script editor (a ```lua mine block) that
// comes last before the cell el, when the cell's text runs -script mine;
// else null. The server runs it only where a reader's own code may run.
export function scriptFor(el, text) {
  if (!/(^|\s)-script[ =]+mine(\s|$)/m.test(text)) return null;
  let found = null;
  for (const ed of document.querySelectorAll('textarea.lab-script-src')) {
    if (ed.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) found = ed;
  }
  return found ? found.value : null;
}

// LOST is the error a run shows when the connection dropped under it.
const LOST = 'The connection to labserver was lost; the run was cancelled. Run the cell again when the server is back.';

// CellRun is one run of a cell over a Socket. fields are the run
// message's fields besides type and id: cell (the text), and lesson,
// cell_id, browser, repeat, token as the page has them. After each
// message from the server is folded in, onMessage(m, run) is called.
//
// lines holds one entry per line of the cell:
// {spec, result, progress: [progress messages], error, run_id,
// group: [run ids of a repeated line], rounds: [results of a repeated line]};
// errors holds the messages not about one line; current is the line
// running; finished turns true with done (or a lost connection).
export class CellRun {
  constructor(sock, id, fields, onMessage) {
    this.sock = sock; this.id = id; this.fields = fields; this.onMessage = onMessage;
    this.lines = splitCellLines(fields.cell).map((spec) => ({ spec, result: null, progress: [], error: null, run_id: null, group: [], rounds: [] }));
    this.errors = [];
    this.current = null;
    this.finished = false;
    this.cancelled = false;
  }
  start() {
    this.sock.on(this.id, (m) => { this.apply(m); this.onMessage(m, this); });
    this.sock.send({ type: 'run', id: this.id, ...this.fields });
  }
  cancel() { if (!this.finished) this.sock.send({ type: 'cancel', id: this.id }); }
  // complete says every line has its result.
  complete() { return this.lines.length > 0 && this.lines.every((l) => l.result); }
  apply(m) {
    const l = m.line != null ? this.lines[m.line] : null;
    switch (m.type) {
      case 'started':
        if (l) l.spec = m.spec;
        this.current = m.line;
        break;
      case 'progress':
        if (l) l.progress.push(m);
        break;
      case 'result':
        if (l) addResult(l, m);
        break;
      case 'error':
        if (l) l.error = m.message; else this.errors.push(m.message);
        if (/instructor token/.test(m.message)) forgetToken();
        break;
      case 'done':
        this.end(!!m.cancelled);
        break;
      case 'lost':
        this.errors.push(LOST);
        this.end(false);
        break;
    }
  }
  end(cancelled) { this.finished = true; this.cancelled = cancelled; this.sock.off(this.id); }
}

// addResult records a line's result message. A repeated cell shows its
// rounds the way a -repeat line does: one array, each run numbered.
function addResult(l, m) {
  l.run_id = m.run_id || null;
  if (m.run_id) l.group.push(m.run_id);
  if (m.round) {
    l.rounds.push(...(Array.isArray(m.result) ? m.result : [m.result]).map((r) => ({ ...r, run: l.rounds.length + 1 })));
    l.result = l.rounds.slice();
  } else {
    l.result = m.result;
  }
}

// cancelNotice says what a cancelled run left behind, so the output is
// not just an empty box.
export function cancelNotice(lines, cur) {
  const l = cur != null && lines[cur];
  const p = l && !l.result && l.progress[l.progress.length - 1];
  const kept = lines.filter((x) => x.result).length;
  let s = p ? `Cancelled ${(p.elapsed_seconds || 0).toFixed(1)} s into line ${cur + 1}, after ${fmtInt(p.ops)} ops.` : l && !l.result ? `Cancelled during line ${cur + 1}.` : 'Cancelled before the run started.';
  s += ' A cancelled line records no result: a partial run is not a measurement.';
  if (kept) s += ` The ${kept === 1 ? 'line' : `${kept} lines`} that finished ${kept === 1 ? 'is' : 'are'} shown below but not saved; run the cell again to keep a result.`;
  return s;
}

// liveView is the line that moves while a line runs: its latest
// progress figures and a sparkline of ops/s so far.
// A workload script's progress counts keys while seeding and units
// while measuring (m.unit), and has no latencies.
export function liveView(m, progress) {
  const unit = m.unit || 'ops';
  return {
    text: [
      h('span', { class: 'live-spec' }, `line ${m.line + 1}`),
      h('span', {}, `${(m.elapsed_seconds || 0).toFixed(1)} s`),
      h('span', {}, `${fmtInt(m.ops)} ${unit}`),
      h('span', {}, h('b', {}, fmtRate(m.ops_per_sec)), ` ${unit}/s`),
      m.unit ? null : h('span', {}, `p50 ${fmtNs(m.p50_ns)}`),
      m.unit ? null : h('span', {}, `p99 ${fmtNs(m.p99_ns)}`),
      m.engine ? h('span', {}, m.engine) : null,
    ],
    chart: svg(sparkline(progress.map((p) => [p.elapsed_seconds, p.ops_per_sec]))),
  };
}

// setCellState marks a cell element's run (is-queued, is-running,
// is-done, is-error) with a short text in its state line; a room's
// follower page marks the runs it draws the same way.
export function setCellState(cell, cls, text) {
  cell.classList.remove('is-queued', 'is-running', 'is-error', 'is-done');
  if (cls) cell.classList.add(cls);
  const st = cell.querySelector('.cell-state');
  if (st) st.textContent = text || '';
}

// REPEAT is how many rounds the "Repeat 5×" button runs.
const REPEAT = 5;

// roundsNeeded is how many rounds the Run button runs a cell: the most any
// of its quizzes is graded on (their repeat: K), at least 1. repeats are
// those quizzes' data-repeat values.
export function roundsNeeded(repeats) {
  return Math.max(1, ...repeats.map((r) => Number(r) || 0));
}

// runLabel is the Run button's text for a cell that needs rounds rounds.
export function runLabel(rounds) {
  return rounds > 1 ? `Run ×${rounds}` : 'Run';
}

// startedText is the state line for a "started" message m of a run of
// lines lines: the server says the round of a repeated run (round,
// rounds); round is the fallback when it does not.
export function startedText(m, lines, round = 1) {
  return progressText(m.round || round, m.rounds || 1, m.line, lines);
}

// progressText is the cell's state while line (0-based) of lines runs in
// round of rounds.
export function progressText(round, rounds, line, lines) {
  const where = `running line ${line + 1} of ${lines}`;
  return rounds > 1 ? `round ${round} of ${rounds} · ${where}` : where;
}

let runCounter = 0;

// Cell is one lab cell of a lesson page (a .cell element rendered by the
// server). locked() says whether a prediction is still owed before it
// may run (quizzes.js decides; app.js passes it in).
export class Cell {
  constructor(el, sock, locked) {
    this.el = el; this.sock = sock; this.isLocked = locked || (() => false);
    this.id = el.dataset.cell;
    this.src = $('.cell-src', el);
    this.out = $('.cell-out', el);
    this.runBtn = $('.run', el); this.cancelBtn = $('.cancel', el); this.resetBtn = $('.reset', el); this.repeatBtn = $('.repeat', el);
    this.editKey = `kvlab:cell:${lessonSlug()}:${this.id}:${el.dataset.hash}`;
    this.runId = null;
    this.job = null;
    // Run runs the cell as many rounds as its quizzes are graded on, so
    // that one press grades them; the button says how many.
    this.rounds = roundsNeeded($$(`.quiz[data-cell="${this.id}"][data-repeat]`).map((q) => q.dataset.repeat));
    this.runBtn.textContent = runLabel(this.rounds);
    if (this.rounds > 1) this.runBtn.title = `Run the cell ${this.rounds} times, in mirrored rounds: its quizzes are graded on ${this.rounds} (Shift+Enter)`;
    this.restoreEdit();
    this.listen();
    this.lockNote = h('span', { class: 'predict-lock', hidden: true }, 'Enter your prediction in the quiz below first.');
    $('.cell-actions', el).insertBefore(this.lockNote, $('.hint', el));
    const last = store.json(resultsKey(this.id), null);
    if (last && Array.isArray(last.lines) && last.lines.some((l) => l && l.result)) {
      this.lines = last.lines;
      this.render(true, last.at);
    }
    // A quiz on this cell is predicted again: its last figures go out of
    // sight until the next run, which grades the new prediction.
    document.addEventListener('kvlab:predicting', (e) => {
      if (e.detail.cell !== this.id || this.runId) return;
      this.out.replaceChildren(h('p', { class: 'notice predict-hidden' }, 'Your last run is hidden while you predict again: lock in the new prediction, then run the cell.'));
      this.applyLock();
    });
  }
  restoreEdit() {
    const saved = store.get(this.editKey);
    if (saved != null && saved !== this.src.defaultValue) { this.src.value = saved; this.el.classList.add('edited'); }
    this.fit();
  }
  listen() {
    this.src.addEventListener('input', () => {
      this.fit();
      const edited = this.src.value !== this.src.defaultValue;
      if (edited) store.set(this.editKey, this.src.value); else store.del(this.editKey);
      this.el.classList.toggle('edited', edited);
    });
    this.el.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && e.shiftKey) { e.preventDefault(); this.run(this.rounds); }
      else if (e.key === 'Escape' && this.runId) { e.preventDefault(); this.cancel(); }
    });
    this.runBtn.addEventListener('click', () => this.run(this.rounds));
    if (this.repeatBtn) this.repeatBtn.addEventListener('click', () => this.run(REPEAT));
    this.cancelBtn.addEventListener('click', () => this.cancel());
    this.resetBtn.addEventListener('click', () => {
      this.src.value = this.src.defaultValue; store.del(this.editKey); this.el.classList.remove('edited'); this.fit(); this.src.focus();
    });
  }
  fit() {
    const n = this.src.value.split('\n').length;
    this.src.rows = Math.max(2, Math.min(n, 14));
  }
  setState(cls, text) { setCellState(this.el, cls, text); }
  // locked: a predict: yes quiz on this cell has no prediction yet.
  locked() { return this.isLocked(this.id); }
  applyLock() {
    const locked = this.locked();
    this.el.classList.toggle('is-locked', locked);
    this.lockNote.hidden = !locked;
    if (!this.runId) this.enableRun(!locked);
  }
  enableRun(on) {
    this.runBtn.disabled = !on;
    if (this.repeatBtn) this.repeatBtn.disabled = !on;
  }
  // run sends the cell to the server; rounds > 1 runs its lines that many
  // times as one group ("repeat 5x"), for the compare page.
  run(rounds) {
    if (this.runId) return;
    if (this.locked()) { this.applyLock(); return; }
    if (needToken() && !token(true)) { this.showError('This server needs the instructor token to run cells.'); return; }
    this.runId = `${this.id}#${++runCounter}`;
    const fields = { cell: this.src.value, lesson: lessonSlug(), cell_id: this.id, browser: browserID() };
    if (rounds > 1) fields.repeat = rounds;
    if (token(false)) fields.token = token(false);
    const script = scriptFor(this.el, this.src.value);
    if (script != null) fields.script = script;
    this.job = new CellRun(this.sock, this.runId, fields, (m) => this.onMessage(m));
    this.lines = this.job.lines;
    this.notice = null;
    // Keep focus inside the cell (a disabled Run button drops it to the
    // page), so that Esc, handled on the cell, still cancels.
    const refocus = document.activeElement === this.runBtn;
    this.enableRun(false);
    this.cancelBtn.hidden = false;
    if (refocus) this.cancelBtn.focus();
    this.setState('is-queued', 'sending…');
    this.render(false);
    this.job.start();
  }
  // round is the round the cell's line is running in: one more than the
  // results it has so far.
  round(line) {
    const l = this.lines && this.lines[line];
    return l && l.group ? l.group.length + 1 : 1;
  }
  cancel() {
    if (!this.runId) return;
    this.job.cancel();
    this.setState('is-running', 'cancelling…');
  }
  finish(cls, text) {
    this.runId = null;
    const refocus = document.activeElement === this.cancelBtn;
    this.enableRun(!this.locked());
    this.cancelBtn.hidden = true;
    if (refocus) this.runBtn.focus();
    this.setState(cls, text);
  }
  onMessage(m) {
    const L = this.lines;
    switch (m.type) {
      case 'queued':
        this.setState('is-queued', m.position > 0 ? `queued · ${m.position} run${m.position === 1 ? '' : 's'} ahead` : 'starting…');
        break;
      case 'started':
        this.setState('is-running', m.rounds ? startedText(m, L.length) : progressText(this.round(m.line), this.job.fields.repeat || 1, m.line, L.length));
        this.render(false);
        break;
      case 'progress':
        if (L[m.line]) this.renderLive(m);
        break;
      case 'result':
      case 'error':
        this.render(false);
        break;
      case 'done':
        this.done(m);
        break;
      case 'lost':
        this.finish('is-error', 'disconnected');
        this.render(true);
        break;
    }
  }
  // done keeps a complete run's results (in this browser, for the quizzes
  // and the compare links) and tells the quizzes waiting for it.
  done(m) {
    const job = this.job;
    const ok = job.complete();
    if (ok) {
      this.keep();
      updateProgress(lessonSlug(), (p) => { p.cells[this.id] = true; });
      // Predictions waiting for this cell are graded now.
      document.dispatchEvent(new CustomEvent('kvlab:measured', { detail: { cell: this.id } }));
    }
    const failed = job.lines.some((l) => l.error) || job.errors.length;
    if (m.cancelled && !ok) this.notice = cancelNotice(job.lines, job.current);
    this.finish(m.cancelled || failed ? 'is-error' : 'is-done', m.cancelled ? 'cancelled' : failed ? 'failed' : 'done');
    this.render(true);
  }
  // keep stores the lines' results. A repeated run keeps its group of run
  // ids per line, and the group before it, for the compare links.
  keep() {
    const L = this.lines;
    const prev = store.json(resultsKey(this.id), null);
    const before = (i) => prev && prev.lines && prev.lines[i];
    const groups = (l, i) => (l.group.length > 1 ? { group: l.group, prev_group: (before(i) && before(i).spec !== l.spec && before(i).group) || (before(i) && before(i).prev_group) || null } : {});
    const kept = L.map((l, i) => ({ spec: l.spec, result: l.result, run_id: l.run_id, ...groups(l, i) }));
    kept.forEach((k, i) => { L[i].prev_group = k.prev_group || null; });
    store.setJSON(resultsKey(this.id), { at: Date.now(), lines: kept });
  }
  showError(msg) { this.out.replaceChildren(h('div', { class: 'error' }, msg)); this.setState('is-error', 'error'); }
  renderLive(m) {
    const live = $('.live', this.out);
    if (!live) return;
    const v = liveView(m, this.lines[m.line].progress);
    $('.live-text', live).replaceChildren(...v.text);
    $('.live-chart', live).replaceChildren(v.chart);
  }
  render(final, at) {
    const job = this.runId ? this.job : null;
    const out = [];
    for (const msg of (this.job && this.job.lines === this.lines ? this.job.errors : [])) out.push(h('div', { class: 'error', role: 'alert' }, msg));
    if (this.notice) out.push(h('p', { class: 'notice' }, this.notice));
    if (!final && job) {
      const cur = job.current != null && this.lines[job.current];
      const what = cur ? [h('span', { class: 'live-spec' }, `line ${job.current + 1}`), h('span', {}, specCode(cur.spec), ' — measuring…')] : ['waiting for the disk…'];
      out.push(h('div', { class: 'live' }, h('div', { class: 'live-text' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), ...what), h('div', { class: 'live-chart' })));
    }
    out.push(renderLines(this.lines || []));
    const links = cellLinks(this.lines || []);
    if (links) out.push(links);
    if (final && at) out.push(h('p', { class: 'stamp' }, `Last run ${new Date(at).toLocaleString()} — kept in this browser and in the server's record.`));
    this.out.replaceChildren(...out);
    if (!final && job && job.current != null) {
      const L = this.lines[job.current];
      if (L && L.progress.length && !L.result) this.renderLive(L.progress[L.progress.length - 1]);
    }
  }
}
