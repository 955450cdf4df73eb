// present.js: the presenter's projector view of a room. One section per
// screen; the keys move the whole room (→/PageDown/Space, ←/PageUp), run
// the cell in view (r), open a poll on the quiz in view (p), show the
// join panel (q) and close panels (Esc). The cells are the lesson
// page's (cells.js), on a socket that adds the room's code to each run,
// and the poll's id to the run that measures it: the server then fans
// every message of the run out to the followers. The room's state
// (followers, polls) is read back from GET /api/rooms/CODE.

import { $, $$ } from '../dom.js';
import { Cell, Socket } from '../cells.js';
import * as api from './api.js';
import { showSection, currentSection, sectionCount, cellInView, quizInView } from './stage.js';
import { latestPolls, showPresenterPoll } from './poll.js';

// RoomRunSocket is the run socket of the presenter's page: each run it
// sends is the room's, and measures the poll waiting for its cell.
class RoomRunSocket extends Socket {
  constructor(status) { super(status); this.measuring = new Map(); } // cell id -> poll id
  send(m) {
    if (m.type === 'run') {
      m = { ...m, room: api.code(), presenter: api.secret() };
      const poll = this.measuring.get(m.cell_id);
      if (poll) { m.poll = poll; this.measuring.delete(m.cell_id); }
    }
    super.send(m);
  }
}

const sock = new RoomRunSocket($('#conn'));
let cells = [];
let polls = new Map(); // quiz id -> its newest poll
let closed = false;

// runCell runs a cell for the room; when an open poll's quiz reads this
// cell (or poll is given), the run is that poll's measurement.
function runCell(el, poll) {
  if (!el) { api.banner('There is no lab cell in this section to run.', 'notice'); return; }
  const cell = cells.find((c) => c.el === el);
  if (!poll) {
    poll = $$(`.quiz[data-cell="${CSS.escape(cell.id)}"]`).map((q) => polls.get(q.dataset.quiz)).find((p) => p && p.state === 'open') || null;
  }
  if (poll) sock.measuring.set(cell.id, poll.id);
  cell.run();
  if (!cell.runId) sock.measuring.delete(cell.id);
}

// ---------- room actions

async function act(what, fn) {
  try {
    const st = await fn();
    api.banner('');
    return st;
  } catch (err) {
    api.banner(`${what}: ${err.message}`, 'error');
    return null;
  }
}

async function go(n) {
  n = Math.max(0, Math.min(n, sectionCount() - 1));
  const from = currentSection();
  if (n === from) return;
  showSection(n);
  const st = await act('Moving the room', () => api.setSection(n));
  // The projector shows where the room is: back, when the room did not move.
  if (st) apply(st); else showSection(from);
}

async function pollQuiz(quiz) {
  if (!quiz) { api.banner('There is no quiz measured by a cell in this section to poll.', 'notice'); return; }
  const p = await act('Opening the poll', () => api.openPoll(quiz.dataset.quiz));
  if (p) {
    polls.set(p.quiz, p);
    showPresenterPoll(quiz, p, measure);
    // The poll opens below its question: bring it onto the projector.
    const box = quiz.querySelector('.room-poll');
    if (box) box.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  }
}

function measure(quiz, p) { runCell($(`.room-section .cell[data-cell="${CSS.escape(quiz.dataset.cell)}"]`), p); }

// runKey is r: with a poll open, it measures that poll (as its "Measure
// now (r)" button says), whichever section its cell is in; otherwise it
// runs the cell in view.
function runKey() {
  const open = [...polls.values()].find((p) => p.state === 'open');
  const quiz = open && $(`.quiz[data-quiz="${CSS.escape(open.quiz)}"]`);
  if (quiz) { measure(quiz, open); return; }
  runCell(cellInView());
}

// apply shows the room's state: the section (the server's, on load),
// who follows, whether followers may run, and every poll.
function apply(st, first) {
  if (!st || !('section' in st)) return;
  if (first) showSection(st.section);
  $('#room-followers').textContent = `${st.followers || 0} following`;
  $('#room-allow-runs').checked = !!st.allow_runs;
  const before = polls;
  polls = latestPolls(st.polls);
  for (const [qid, p] of polls) {
    const quiz = $(`.quiz[data-quiz="${CSS.escape(qid)}"]`);
    if (!quiz) continue;
    showPresenterPoll(quiz, p, measure);
    // A poll in view that moved on (measuring, then the disk's answer)
    // grew at its foot: bring its new lines above the key hints.
    const was = before.get(qid);
    if (!first && was && (was.state !== p.state || was.measured !== p.measured) && quiz.closest('.room-section.current')) {
      const foot = quiz.querySelector('.room-poll .poll-verdict, .room-poll .poll-note') || quiz.querySelector('.room-poll');
      if (foot) foot.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    }
  }
  if (st.closed) ended();
}

function ended() {
  closed = true;
  document.body.classList.add('room-ended');
  api.banner('This class has ended: the code no longer works. Its polls and board are kept under /classes; start a new room to present again.', 'closed');
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
  const p = $('#join-panel');
  p.hidden = show == null ? !p.hidden : !show;
  document.body.classList.toggle('panel-open', !p.hidden);
}

function onKey(e) {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.key === 'Escape') { togglePanel(false); api.banner(''); return; }
  // Keys type into a cell or a field; Space on a button presses it.
  if (e.target.closest && e.target.closest('textarea, input, select, [contenteditable]')) return;
  if (e.key === ' ' && e.target.closest && e.target.closest('button, a')) return;
  const keys = {
    ArrowRight: () => go(currentSection() + 1), PageDown: () => go(currentSection() + 1), ' ': () => go(currentSection() + 1),
    ArrowLeft: () => go(currentSection() - 1), PageUp: () => go(currentSection() - 1),
    r: runKey, p: () => pollQuiz(quizInView()), q: () => togglePanel(),
  };
  const fn = keys[e.key];
  if (!fn) return;
  e.preventDefault();
  fn();
}

function wire() {
  document.addEventListener('keydown', onKey);
  $('#room-next').addEventListener('click', () => go(currentSection() + 1));
  $('#room-prev').addEventListener('click', () => go(currentSection() - 1));
  $('#room-join-btn').addEventListener('click', () => togglePanel());
  $('#join-panel').addEventListener('click', () => togglePanel(false));
  $('#room-allow-runs').addEventListener('change', async (e) => { const st = await act('Changing who may run', () => api.allowRuns(e.target.checked)); if (st) apply(st); });
  $('#room-close').addEventListener('click', async () => {
    if (!window.confirm('End this class? Followers are told, and the code stops working.')) return;
    if (await act('Ending the class', () => api.closeRoom())) ended();
  });
  // The secret is shown on request only: this page is on the projector.
  $('#room-second-device').addEventListener('click', () => {
    const s = api.secret();
    if (!s) { api.banner('This browser presents as this machine (no presenter secret to show).', 'notice'); return; }
    if (!window.confirm('Show the presenter secret? Whoever sees it can drive this room: make sure the projector does not show this screen.')) return;
    window.prompt('Presenter secret of this room: enter it on the second device (its presenter page asks for it).', s);
  });
  // The projector shows this run's results, not the ones this browser kept.
  cells = $$('.room-section .cell').map((el) => new Cell(el, sock, () => false));
  for (const c of cells) { c.out.replaceChildren(); c.setState('', ''); }
  for (const quiz of $$('.room-section .quiz[data-cell]')) {
    quiz.querySelector('.quiz-source').replaceChildren(`Press p to ask the room for predictions, then r to measure with cell ${quiz.dataset.cell}.`);
  }
}

async function start() {
  wire();
  showSection(0);
  if (api.needToken()) api.token(true);
  api.secret();
  try {
    apply(await api.getState(), true);
  } catch (err) {
    api.banner(err.message, 'error');
  }
  setInterval(refresh, 1500);
  window.kvlabRoom = { role: 'presenter', go, runCell, pollQuiz, polls: () => polls, cells };
}

start();
