// runview.js: a run drawn into a lab cell of a follower's page as its
// messages arrive. cells.js's CellRun folds the messages (the room socket
// relays the presenter's run verbatim, or brings back the follower's
// own); this draws the state line, the live figures and, with
// results.js, the result table and charts, as the lesson page does.

import { h, specCode } from '../dom.js';
import { CellRun, liveView, setCellState, startedText } from '../cells.js';
import { renderLines } from '../results.js';

// CUT_OFF is what a followed run shows when the room socket dropped.
const CUT_OFF = "The connection to the room was lost during this run: the presenter's run goes on, but its result cannot be shown here.";

// RunView draws the runs of one cell; who prefixes the state line
// ("presenter · ", "your run · ").
export class RunView {
  constructor(cell, who) {
    this.cell = cell;
    this.who = who || '';
    this.out = cell.querySelector('.cell-out');
    this.run = null;
  }

  // follow draws run id, whose messages sock brings (the presenter's:
  // nothing is sent); start sends a run of this page's own and draws it.
  follow(sock, id, text) {
    const run = new CellRun(sock, id, { cell: text }, (m, r) => this.onMessage(m, r));
    this.run = run;
    sock.on(id, (m) => {
      // A lost room socket does not stop the presenter's run.
      if (m.type === 'lost') { run.errors.push(CUT_OFF); run.end(false); } else run.apply(m);
      run.onMessage(m, run);
    });
    this.begin();
  }
  start(sock, id, fields) {
    this.run = new CellRun(sock, id, fields, (m, run) => this.onMessage(m, run));
    this.begin();
    this.run.start();
  }
  begin() {
    setCellState(this.cell, 'is-queued', `${this.who}waiting for the disk…`);
    this.buttons(true);
    this.draw();
  }

  // buttons shows Cancel instead of Run while a follower's own run goes on.
  buttons(running) {
    const run = this.cell.querySelector('.run'), cancel = this.cell.querySelector('.cancel');
    if (run) run.disabled = running;
    if (cancel) cancel.hidden = !running;
  }

  onMessage(m, run) {
    switch (m.type) {
      case 'queued':
        setCellState(this.cell, 'is-queued', m.position > 0 ? `${this.who}queued · ${m.position} run${m.position === 1 ? '' : 's'} ahead` : `${this.who}starting…`);
        return;
      case 'started':
        setCellState(this.cell, 'is-running', `${this.who}${startedText(m, run.lines.length)}`);
        break;
      case 'done':
      case 'lost': {
        const failed = m.type === 'lost' || m.cancelled || run.errors.length || run.lines.some((l) => l.error);
        setCellState(this.cell, failed ? 'is-error' : 'is-done', m.cancelled ? 'cancelled' : m.type === 'lost' ? 'disconnected' : failed ? 'failed' : 'done');
        this.buttons(false);
        break;
      }
    }
    this.draw();
  }

  draw() {
    const run = this.run;
    const out = run.errors.map((e) => h('div', { class: 'error', role: 'alert' }, e));
    if (!run.finished) {
      const cur = run.current != null ? run.lines[run.current] : null;
      const p = cur && !cur.result && cur.progress[cur.progress.length - 1];
      const live = p ? liveView(p, cur.progress) : null;
      out.push(h('div', { class: 'live' },
        h('div', { class: 'live-text' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }),
          live ? live.text : cur ? [h('span', { class: 'live-spec' }, `line ${run.current + 1}`), h('span', {}, specCode(cur.spec), ' — measuring…')] : 'waiting for the disk…'),
        h('div', { class: 'live-chart' }, live ? live.chart : null)));
    }
    out.push(renderLines(run.lines));
    this.out.replaceChildren(...out);
  }
}
