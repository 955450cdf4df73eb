// poll.js: a prediction poll drawn inside its quiz. The presenter's view
// is the room's histogram, large, with a button to measure; a follower's
// adds the prediction form and, once the disk has spoken, how far off
// their own prediction was. Predictions are anonymous: the histogram has
// counts, no names.

import { h, svg, store } from '../dom.js';
import { code, predict } from './api.js';
import { pollChart, compact, offBy } from './roomcharts.js';

const yoursKey = (poll) => `kvlab:room:${code()}:${poll}`;
export const yours = (poll) => { const v = store.get(yoursKey(poll)); return v == null ? null : Number(v); };

// latestPolls maps each quiz to its newest poll (a retry opens a new one).
export function latestPolls(polls) {
  const m = new Map();
  for (const p of polls || []) {
    const prev = m.get(p.quiz);
    if (!prev || String(p.opened_at || '') >= String(prev.opened_at || '')) m.set(p.quiz, p);
  }
  return m;
}

// pollBox returns the quiz's poll container, made on first use.
function pollBox(quiz) {
  let box = quiz.querySelector('.room-poll');
  if (!box) {
    box = h('div', { class: 'room-poll', 'aria-live': 'polite' });
    quiz.append(box);
  }
  return box;
}

const stateText = (p) => ({ open: 'open: predictions welcome', measuring: 'measuring: predictions are closed', closed: 'closed' })[p.state] || p.state;

function head(p) {
  return h('p', { class: 'poll-head' }, h('span', { class: `poll-state ${p.state}` }, `Poll ${stateText(p)}`), ' · ',
    h('b', { class: 'poll-count' }, String(p.count || 0)), ` prediction${p.count === 1 ? '' : 's'}`);
}

function chart(p, mine) { return h('div', { class: 'poll-chart' }, svg(pollChart(p, mine))); }

// verdictLine is "the disk said Y" and, for a follower who predicted,
// "you said X: Z× too high". A figure measured on a busy machine (p.busy
// says why) judges no prediction: the line says so instead of how far
// off anyone was, as a quiz's reply does.
function verdictLine(p, mine) {
  if (p.measured == null) return null;
  const unit = p.unit ? ` ${p.unit}` : '';
  if (p.busy) {
    return h('p', { class: 'poll-verdict busy' }, mine == null ? 'The disk said ' : ['You said ', h('b', { class: 'said' }, `${compact(mine)}${unit}`), ', the disk said '],
      h('b', { class: 'measured' }, `${compact(p.measured)}${unit}`), `, but the machine was busy (${p.busy}): a figure that judges no prediction. Measure again when it is quiet.`);
  }
  if (mine == null) return h('p', { class: 'poll-verdict' }, 'The disk said ', h('b', {}, `${compact(p.measured)}${unit}`), '.');
  return h('p', { class: 'poll-verdict' }, 'You said ', h('b', { class: 'said' }, `${compact(mine)}${unit}`), ', the disk said ',
    h('b', { class: 'measured' }, `${compact(p.measured)}${unit}`), ': ', h('b', { class: 'off' }, offBy(mine, p.measured)), '.');
}

// showPresenterPoll draws poll p in its quiz for the projector; measure
// runs the quiz's cell for it.
export function showPresenterPoll(quiz, p, measure) {
  quiz.classList.add('has-poll');
  const btn = p.state === 'open' ? h('button', { type: 'button', class: 'btn run poll-measure', onclick: () => measure(quiz, p) }, 'Measure now (r)') : null;
  const note = p.state === 'measuring' && p.measured == null ? h('p', { class: 'poll-note' }, 'Measuring on this disk… (if the run failed, press p to open a new poll and measure again)') : null;
  // replaceChildren writes a null as the text "null": leave them out.
  pollBox(quiz).replaceChildren(...[head(p), chart(p, null), verdictLine(p, null), note, btn].filter(Boolean));
}

// showFollowerPoll draws poll p in its quiz with this browser's prediction.
export function showFollowerPoll(quiz, p) {
  quiz.classList.add('has-poll');
  const box = pollBox(quiz);
  const mine = yours(p.id);
  const parts = [head(p)];
  if (p.state === 'open') parts.push(predictForm(quiz, p, mine));
  else if (mine != null && p.measured == null) parts.push(h('p', { class: 'poll-mine' }, 'Your prediction: ', h('b', {}, `${compact(mine)}${p.unit ? ` ${p.unit}` : ''}`), '. The disk is being measured…'));
  else if (mine == null && p.measured == null) parts.push(h('p', { class: 'poll-note' }, 'The measurement has started: predictions are closed.'));
  parts.push(chart(p, mine), verdictLine(p, mine));
  // Keep a half-typed prediction when the histogram updates.
  const typing = box.querySelector('input.poll-input');
  const keep = typing && document.activeElement === typing ? typing.value : null;
  box.replaceChildren(...parts.filter(Boolean));
  if (keep != null) { const inp = box.querySelector('input.poll-input'); if (inp) { inp.value = keep; inp.focus(); } }
}

function predictForm(quiz, p, mine) {
  const input = h('input', { type: 'text', class: 'poll-input', inputmode: 'decimal', autocomplete: 'off', 'aria-label': 'Your prediction', placeholder: 'your prediction' });
  const msg = h('span', { class: 'poll-msg', role: 'status' }, mine != null ? ['Your prediction: ', h('b', {}, compact(mine)), ' (you may change it until the measurement starts)'] : '');
  const form = h('form', { class: 'poll-form', autocomplete: 'off' },
    h('label', {}, input, p.unit ? h('span', { class: 'unit' }, ` ${p.unit}`) : null), ' ',
    h('button', { type: 'submit', class: 'btn check' }, mine != null ? 'Change prediction' : 'Send prediction'), ' ', msg);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    const v = Number(text);
    if (!text || !isFinite(v)) { msg.replaceChildren(h('span', { class: 'error' }, `"${text}" is not a number: type one, like 12.5`)); return; }
    try {
      const r = await predict(p.id, text);
      store.set(yoursKey(p.id), String(r.yours != null ? r.yours : v));
      showFollowerPoll(quiz, r.poll || p);
    } catch (err) {
      msg.replaceChildren(h('span', { class: 'error' }, `Not recorded: ${err.message}`));
    }
  });
  return form;
}
