// present.js: the presenter's projector view of a room. One section per
// screen; the keys move the whole room (→/PageDown/Space, ←/PageUp), run
// the cell in view (r), open a poll on the quiz in view (p), show the
// join panel (q) and close panels (Esc). Runs go over the normal /ws
// with the token and the room's code, so the server fans every message
// out to the followers; the room's state (followers, polls) is read
// back from GET /api/rooms/CODE.

import { randomID, store } from './deps.js';
import * as api from './api.js';
import { showSection, currentSection, sectionCount, cellInView, quizInView, setCellState } from './stage.js';
import { RunView } from './runview.js';
import { latestPolls, showPresenterPoll } from './poll.js';

const views = new Map(); // run id -> RunView
let polls = new Map(); // quiz id -> its newest poll
let sock = null;
let closed = false;

// ---------- the run socket (/ws), as the lesson page uses it

function socket() {
  if (sock && (sock.readyState === WebSocket.OPEN || sock.readyState === WebSocket.CONNECTING)) return sock;
  const t = api.token(false);
  sock = new WebSocket(`${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/ws${t ? `?token=${encodeURIComponent(t)}` : ''}`);
  sock.pending = [];
  api.statusLight('connecting');
  sock.onopen = () => { api.statusLight('connected'); for (const m of sock.pending.splice(0)) sock.send(m); };
  sock.onmessage = (ev) => {
    let m;
    try { m = JSON.parse(ev.data); } catch { return; }
    const v = views.get(m.id);
    if (!v) return;
    if (m.type === 'error' && /instructor token/.test(m.message || '')) store.del('kvlab:token');
    if (v.onMessage(m)) { views.delete(m.id); refresh(); }
  };
  sock.onclose = () => {
    api.statusLight('disconnected');
    sock = null;
    for (const [id, v] of views) { v.onMessage({ type: 'lost', id }); views.delete(id); }
  };
  return sock;
}

function send(m) {
  const ws = socket();
  const text = JSON.stringify(m);
  if (ws.readyState === WebSocket.OPEN) ws.send(text); else ws.pending.push(text);
}

// runCell runs a cell for the room; when an open poll's quiz reads this
// cell, the run is that poll's measurement.
function runCell(cell, poll) {
  if (!cell) { api.banner('There is no lab cell in this section to run.', 'notice'); return; }
  if ([...views.values()].some((v) => v.cell === cell)) return;
  if (api.needToken() && !api.token(true)) { api.banner('This server needs the instructor token to run cells.', 'error'); return; }
  if (!poll) {
    const q = Array.from(cell.closest('.room-section').querySelectorAll(`.quiz[data-cell="${cell.dataset.cell}"]`))
      .map((el) => polls.get(el.dataset.quiz)).find((p) => p && p.state === 'open');
    poll = q || null;
  }
  const id = `${cell.dataset.cell}#${randomID().slice(0, 8)}`;
  const v = new RunView(cell);
  views.set(id, v);
  v.start(poll ? 'measuring the poll · ' : '');
  const msg = { type: 'run', id, cell: cell.querySelector('.cell-src').value, lesson: api.lessonSlug(), cell_id: cell.dataset.cell,
    browser: api.browserID(), room: api.code() };
  if (poll) msg.poll = poll.id;
  if (api.token(false)) msg.token = api.token(false);
  send(msg);
}

function cancelCell(cell) {
  for (const [id, v] of views) if (v.cell === cell) send({ type: 'cancel', id });
}

// ---------- room actions

async function act(what, fn) {
  try {
    const st = await fn();
    api.banner('');
    if (st) apply(st);
    return st;
  } catch (err) {
    api.banner(`${what}: ${err.message}`, 'error');
    return null;
  }
}

function go(n) {
  n = Math.max(0, Math.min(n, sectionCount() - 1));
  if (n === currentSection()) return;
  showSection(n);
  act('Moving the room', () => api.setSection(n));
}

async function pollQuiz(quiz) {
  if (!quiz) { api.banner('There is no quiz measured by a cell in this section to poll.', 'notice'); return; }
  const p = await act('Opening the poll', () => api.openPoll(quiz.dataset.quiz));
  if (p) { polls.set(p.quiz, p); showPresenterPoll(quiz, p, measure); }
}

function measure(quiz, p) {
  const cell = document.querySelector(`.room-section .cell[data-cell="${quiz.dataset.cell}"]`);
  runCell(cell, p);
}

// apply shows the room's state: the section (the server's, on load),
// who follows, whether followers may run, and every poll.
function apply(st, first) {
  if (!st || !('section' in st)) return;
  if (first) showSection(st.section);
  document.getElementById('room-followers').textContent = `${st.followers || 0} following`;
  document.getElementById('room-allow-runs').checked = !!st.allow_runs;
  polls = latestPolls(st.polls);
  for (const [qid, p] of polls) {
    const quiz = document.querySelector(`.quiz[data-quiz="${CSS.escape(qid)}"]`);
    if (quiz) showPresenterPoll(quiz, p, measure);
  }
  if (st.closed) ended();
}

function ended() {
  closed = true;
  document.body.classList.add('room-ended');
  api.banner('This class has ended: the code no longer works. Start a new room to present again.', 'closed');
}

async function refresh() {
  if (closed) return;
  try {
    apply(await api.getState());
  } catch (err) {
    if (err.status === 404) { ended(); api.banner(err.message, 'error'); }
  }
}

// ---------- keys and buttons

function togglePanel(show) {
  const p = document.getElementById('join-panel');
  p.hidden = show == null ? !p.hidden : !show;
  document.body.classList.toggle('panel-open', !p.hidden);
}

function onKey(e) {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.key === 'Escape') { togglePanel(false); api.banner(''); if (document.activeElement) document.activeElement.blur(); return; }
  const typing = e.target.closest && e.target.closest('textarea, input, select, [contenteditable]');
  if (typing) return;
  const keys = {
    ArrowRight: () => go(currentSection() + 1), PageDown: () => go(currentSection() + 1), ' ': () => go(currentSection() + 1),
    ArrowLeft: () => go(currentSection() - 1), PageUp: () => go(currentSection() - 1),
    r: () => runCell(cellInView()), p: () => pollQuiz(quizInView()), q: () => togglePanel(),
  };
  const fn = keys[e.key];
  if (!fn) return;
  e.preventDefault();
  fn();
}

function wire() {
  document.addEventListener('keydown', onKey);
  document.getElementById('room-next').addEventListener('click', () => go(currentSection() + 1));
  document.getElementById('room-prev').addEventListener('click', () => go(currentSection() - 1));
  document.getElementById('room-join-btn').addEventListener('click', () => togglePanel());
  document.getElementById('join-panel').addEventListener('click', () => togglePanel(false));
  document.getElementById('room-allow-runs').addEventListener('change', (e) => act('Changing who may run', () => api.allowRuns(e.target.checked)));
  document.getElementById('room-close').addEventListener('click', async () => {
    if (!window.confirm('End this class? Followers are told, and the code stops working.')) return;
    if (await act('Ending the class', () => api.closeRoom())) ended();
  });
  for (const cell of document.querySelectorAll('.room-section .cell')) {
    cell.querySelector('.run').addEventListener('click', () => runCell(cell));
    cell.querySelector('.cancel').addEventListener('click', () => cancelCell(cell));
    cell.addEventListener('keydown', (e) => { if (e.key === 'Enter' && e.shiftKey) { e.preventDefault(); runCell(cell); } });
    setCellState(cell, '', '');
  }
  for (const quiz of document.querySelectorAll('.room-section .quiz[data-cell]')) {
    quiz.querySelector('.quiz-source').replaceChildren(`Press p to ask the room for predictions, then r to measure with cell ${quiz.dataset.cell}.`);
  }
}

async function start() {
  wire();
  showSection(0);
  if (api.needToken()) api.token(true);
  try {
    apply(await api.getState(), true);
  } catch (err) {
    api.banner(err.message, 'error');
  }
  setInterval(refresh, 1500);
  window.kvlabRoom = { role: 'presenter', go, runCell, pollQuiz, polls: () => polls };
}

start();
