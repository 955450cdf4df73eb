// runview.js: one run drawn into a lab cell's output from the run
// websocket's messages (queued, started, progress, result, error, done),
// the same on the presenter's page (its own /ws) and on a follower's
// (the room socket fans the presenter's messages out verbatim).

import { h, fmtInt, fmtNs, fmtRate, renderLines } from './deps.js';
import { setCellState } from './stage.js';

export class RunView {
  constructor(cell) {
    this.cell = cell;
    this.out = cell.querySelector('.cell-out');
    this.lines = [];
    this.errors = [];
    this.current = null;
    this.running = false;
  }

  // start clears the output for a new run; who says whose run it is.
  start(who) {
    this.lines = []; this.errors = []; this.current = null; this.running = true; this.who = who || '';
    setCellState(this.cell, 'is-queued', `${this.who}waiting for the disk…`);
    this.buttons(true);
    this.render();
  }

  // buttons shows Cancel instead of Run while the run goes on (the cell
  // has them on the presenter's page, and on a follower's own runs).
  buttons(running) {
    const run = this.cell.querySelector('.run'), cancel = this.cell.querySelector('.cancel');
    if (run) run.disabled = running;
    if (cancel) cancel.hidden = !running;
  }

  line(i) {
    while (this.lines.length <= i) this.lines.push({ spec: '', result: null, progress: [], error: null });
    return this.lines[i];
  }

  // onMessage takes one run message; it returns true once the run is over.
  onMessage(m) {
    switch (m.type) {
      case 'queued':
        setCellState(this.cell, 'is-queued', m.position > 0 ? `${this.who}queued · ${m.position} run${m.position === 1 ? '' : 's'} ahead` : `${this.who}starting…`);
        return false;
      case 'started':
        this.line(m.line).spec = m.spec;
        this.current = m.line;
        setCellState(this.cell, 'is-running', `${this.who}running line ${m.line + 1}`);
        break;
      case 'progress':
        this.line(m.line).progress.push(m);
        break;
      case 'result':
        this.line(m.line).result = m.result;
        break;
      case 'error':
        if (m.line != null) this.line(m.line).error = m.message; else this.errors.push(m.message);
        break;
      case 'done':
      case 'lost': {
        this.running = false;
        this.buttons(false);
        if (m.type === 'lost') this.errors.push('The connection was lost during the run.');
        const failed = m.type === 'lost' || m.cancelled || this.errors.length || this.lines.some((l) => l.error);
        setCellState(this.cell, failed ? 'is-error' : 'is-done', m.cancelled ? 'cancelled' : failed ? 'failed' : 'done');
        this.render();
        return true;
      }
      default:
        return false;
    }
    this.render();
    return false;
  }

  render() {
    const out = this.errors.map((e) => h('div', { class: 'error', role: 'alert' }, e));
    const cur = this.running && this.current != null ? this.lines[this.current] : null;
    if (this.running) {
      const p = cur && cur.progress[cur.progress.length - 1];
      out.push(h('div', { class: 'live' }, h('div', { class: 'live-text' },
        h('span', { class: 'spinner', 'aria-hidden': 'true' }),
        cur ? h('span', { class: 'live-spec' }, `line ${this.current + 1}`) : null,
        cur ? h('span', {}, cur.spec) : h('span', {}, 'waiting for the disk…'),
        p ? [h('span', {}, `${(p.elapsed_seconds || 0).toFixed(1)} s`), h('span', {}, `${fmtInt(p.ops)} ops`),
          h('span', {}, h('b', {}, fmtRate(p.ops_per_sec)), ' ops/s'), h('span', {}, `p99 ${fmtNs(p.p99_ns)}`)] : null)));
    }
    if (this.lines.some((l) => l.result || l.error)) out.push(renderLines(this.lines));
    this.out.replaceChildren(...out);
  }
}
