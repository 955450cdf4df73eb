// classes.js: a past class (or two side by side) from the archive: each
// poll's histogram with the measured value, and the board for every
// measure the students shared. The server puts each class's data in a
// <script type="application/json" class="class-data"> in its block.

import { h, svg, fmtNs, fmtRate, safeInline } from '../dom.js';
import { pollChart, boardChart, compact } from './roomcharts.js';

const MEASURE_NAMES = { fdatasync_p50: 'fdatasync p50 (probe)', always_ops_per_sec: 'always ops/s (bench)', p99: 'put p99 (bench)' };

function pollView(p) {
  const unit = p.unit ? ` ${p.unit}` : '';
  return h('div', { class: 'class-poll', 'data-quiz': p.quiz },
    h('h4', {}, p.question_html ? safeInline(p.question_html) : p.question || p.quiz),
    h('p', { class: 'poll-head' }, h('b', {}, String(p.count)), ` prediction${p.count === 1 ? '' : 's'} · `,
      p.measured != null ? ['measured ', h('b', { class: 'measured' }, `${compact(p.measured)}${unit}`)] : p.state === 'measuring' ? 'the measurement did not finish' : 'never measured',
      p.busy ? [' ', h('span', { class: 'busy' }, `on a busy machine (${p.busy}): it judged no prediction`)] : null,
      p.run_id ? [' · ', h('a', { href: `/runs/${p.run_id}` }, `run #${p.run_id}`)] : null),
    h('div', { class: 'poll-chart' }, svg(pollChart(p, null))));
}

function boardView(board) {
  const parts = [];
  for (const [m, b] of Object.entries(board || {})) {
    if (!b.points || !b.points.length) continue;
    const fmt = b.unit === 'ns' ? fmtNs : (v) => `${fmtRate(v)} ops/s`;
    parts.push(h('figure', { class: 'board-figure', 'data-measure': m }, h('figcaption', {}, h('b', {}, MEASURE_NAMES[m] || m), ` · ${b.points.length} machine${b.points.length === 1 ? '' : 's'}`), svg(boardChart(b.points, fmt))));
  }
  return parts.length ? parts : [h('p', { class: 'notice' }, 'Nobody shared a result with this class.')];
}

for (const block of document.querySelectorAll('.class-block')) {
  let d;
  try { d = JSON.parse(block.querySelector('.class-data').textContent); } catch (err) {
    block.append(h('p', { class: 'error' }, `The class's data does not parse: ${err.message}`));
    continue;
  }
  const polls = d.polls || [];
  block.querySelector('.class-polls').replaceChildren(...(polls.length ? polls.map(pollView) : [h('p', { class: 'notice' }, 'No poll was opened in this class.')]));
  block.querySelector('.class-board').replaceChildren(...boardView(d.board));
}
