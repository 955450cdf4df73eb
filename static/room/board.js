// board.js: the class board. Each point is one result a student shared
// from their own labserver; the chosen measure is drawn per machine with
// its conditions (OS, filesystem, device, rotational), so the room sees
// how much the conditions make the number. The board refreshes every
// few seconds while it is open. In the presenter's browser (it keeps the
// room's presenter secret, or is this machine on a server without a
// token) each row has a button that removes the entry.

import { h, svg, fmtNs, fmtRate } from '../dom.js';
import { request, code, needToken, onThisMachine, removeEntry } from './api.js';
import { presenterSecret } from '../session.js';
import { boardChart, conditionsText, shareTime } from './roomcharts.js';

const MEASURES = ['fdatasync_p50', 'always_ops_per_sec', 'p99'];
const CAPTIONS = {
  fdatasync_p50: 'p50 of one write + fdatasync, from each shared probe (log scale: lower is faster)',
  always_ops_per_sec: 'ops/s of each shared bench under -sync always (log scale: higher is faster)',
  p99: 'put p99 of each shared bench (log scale: lower is better)',
};

let measure = MEASURES.includes(new URLSearchParams(location.search).get('measure')) ? new URLSearchParams(location.search).get('measure') : MEASURES[0];

const fmtFor = (unit) => (unit === 'ns' ? fmtNs : (v) => `${fmtRate(v)} ops/s`);

function status(text, kind = '') {
  const el = document.getElementById('board-status');
  el.className = `board-status ${kind}`;
  el.textContent = text;
}

function draw(b) {
  const fmt = fmtFor(b.unit);
  const pts = b.points || [];
  document.getElementById('board-figure').replaceChildren(
    h('figcaption', {}, h('b', {}, `${pts.length} machine${pts.length === 1 ? '' : 's'}`), ' · ', CAPTIONS[b.measure] || b.measure),
    svg(boardChart(pts, fmt)),
    h('p', { class: 'legend' }, h('span', {}, h('span', { class: 'swatch c0' }), 'non-rotational'), h('span', {}, h('span', { class: 'swatch c1' }), 'rotational'), h('span', {}, h('span', { class: 'swatch c7' }), 'unknown')));
  const table = document.getElementById('board-table');
  table.hidden = !pts.length;
  table.querySelector('tbody').replaceChildren(...pts.slice().sort((a, b2) => a.value - b2.value).map((p, i) => {
    const c = p.conditions || {};
    return h('tr', { 'data-id': String(p.id) }, h('th', { scope: 'row' }, String(i + 1)), h('td', { class: 'p99' }, h('b', {}, fmt(p.value))),
      h('td', {}, c.os || '–'), h('td', {}, c.fs || '–'), h('td', {}, c.device || '–'),
      h('td', {}, c.rotational === true ? 'yes' : c.rotational === false ? 'no' : '–'), h('td', {}, p.label || ''),
      h('td', { class: 'minor' }, shareTime(p.at)),
      presenting() ? h('td', {}, removeButton(p, fmt)) : null);
  }));
  // The header band spans the remove column too, in the presenter's browser.
  const head = table.querySelector('thead tr');
  const extra = head.querySelector('th.remove-col');
  if (presenting() && !extra) head.append(h('th', { scope: 'col', class: 'minor remove-col' }, h('span', { class: 'sr-only' }, 'remove')));
  else if (!presenting() && extra) extra.remove();
  document.body.dataset.points = String(pts.length);
  document.getElementById('board-figure').setAttribute('aria-label', pts.map((p) => `${fmt(p.value)} ${conditionsText(p.conditions)}`).join('; '));
}

const presenting = () => Boolean(presenterSecret(code(), false)) || (!needToken() && onThisMachine());

function removeButton(p, fmt) {
  const b = h('button', { type: 'button', class: 'linkish board-remove', title: 'Remove this entry from the board' }, 'remove');
  b.addEventListener('click', async () => {
    if (!window.confirm(`Remove ${fmt(p.value)}${p.label ? ` (${p.label})` : ''} from the board?`)) return;
    try { await removeEntry(p.id); load(); } catch (err) { status(err.message, 'error'); }
  });
  return b;
}

async function load() {
  try {
    const b = await request('GET', `/api/rooms/${encodeURIComponent(code())}/board?measure=${measure}`);
    // The lede says how a point gets here, and the chart that there is
    // none yet: the status has nothing to add.
    status('');
    draw(b);
  } catch (err) {
    status(err.message, 'error');
    // A room that ended stays gone: stop asking (each unknown code counts
    // against this address's lookups).
    if (err.status === 404) clearInterval(timer);
  }
}

for (const r of document.querySelectorAll('input[name=measure]')) {
  r.checked = r.value === measure;
  r.addEventListener('change', () => {
    measure = r.value;
    history.replaceState(null, '', `?measure=${measure}`);
    load();
  });
}
const timer = setInterval(load, 4000);
load();
