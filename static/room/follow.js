// follow.js: a follower's view of a room. The page shows the section the
// presenter is on, draws every run the presenter starts as its messages
// arrive over the room socket, and turns an open poll into a prediction
// form. A follower runs cells only when the presenter allows it; their
// runs' messages come back to this page alone.

import { $, $$, randomID } from '../dom.js';
import * as api from './api.js';
import { showSection } from './stage.js';
import { RunView } from './runview.js';
import { latestPolls, showFollowerPoll } from './poll.js';

const views = new Map(); // cell id -> its RunView
let allowRuns = false;
let sock = null;

const cellEl = (id) => $(`.room-section .cell[data-cell="${CSS.escape(id)}"]`);

function showPolls(list) {
  for (const [qid, p] of latestPolls(list)) showPoll(qid, p);
}

function showPoll(qid, p) {
  const quiz = $(`.room-section .quiz[data-quiz="${CSS.escape(qid)}"]`);
  if (quiz) showFollowerPoll(quiz, p);
}

function setAllowRuns(allow) {
  allowRuns = !!allow;
  document.body.classList.toggle('runs-allowed', allowRuns);
  for (const c of $$('.room-section .cell-src')) c.readOnly = !allowRuns;
}

// view is the cell's RunView for who's runs.
function view(cell, who) {
  const v = new RunView(cell, who);
  views.set(cell.dataset.cell, v);
  return v;
}

// onMessage handles the room socket's messages that are not a drawn
// run's (those go to its RunView).
function onMessage(m) {
  switch (m.type) {
    case 'room':
      showSection(m.section, 'following section');
      setAllowRuns(m.allow_runs);
      showPolls(m.polls);
      if (m.closed) ended();
      return;
    case 'section':
      showSection(m.section, 'following section');
      return;
    case 'room_run': {
      const cell = cellEl(m.cell_id);
      if (!cell) return;
      // Show what runs: the presenter may have edited the cell.
      if (m.cell) cell.querySelector('.cell-src').value = m.cell;
      view(cell, 'presenter · ').follow(sock, m.id, cell.querySelector('.cell-src').value);
      return;
    }
    case 'poll':
      if (m.poll) showPoll(m.poll.quiz, m.poll);
      return;
    case 'closed':
      ended();
      return;
    case 'error':
      api.banner(m.message, 'error');
  }
}

function ended() {
  document.body.classList.add('room-ended');
  api.banner('The presenter ended this class. The page keeps what it showed; the room code no longer works.', 'closed');
}

// onStatus shows the socket's state; a room that no longer exists (the
// socket cannot connect and the API says 404) stops the reconnecting.
async function onStatus(st) {
  api.statusLight(st);
  if (st === 'connected') api.banner('');
  if (st !== 'disconnected') return;
  try {
    await api.getState();
    api.banner('Connection to the room lost: reconnecting…', 'notice');
  } catch (err) {
    if (err.status === 404) { sock.end(); api.banner(err.message, 'error'); } else api.banner(`Connection to the room lost (${err.message}): reconnecting…`, 'notice');
  }
}

// runOwn runs a cell of this page on the room's server, when allowed.
function runOwn(cell) {
  if (!allowRuns) { api.banner('The presenter has not allowed runs in this room.', 'notice'); return; }
  if (!sock.ws || sock.ws.readyState !== WebSocket.OPEN) { api.banner('Not connected to the room: try again in a moment.', 'notice'); return; }
  const fields = { cell: cell.querySelector('.cell-src').value, lesson: api.lessonSlug(), cell_id: cell.dataset.cell, browser: api.browserID() };
  view(cell, 'your run · ').start(sock, `${cell.dataset.cell}#${randomID().slice(0, 8)}`, fields);
}

function wire() {
  for (const cell of $$('.room-section .cell')) {
    cell.querySelector('.run').addEventListener('click', () => runOwn(cell));
    cell.querySelector('.cancel').addEventListener('click', () => { const v = views.get(cell.dataset.cell); if (v && v.run) v.run.cancel(); });
  }
  for (const quiz of $$('.room-section .quiz[data-cell]')) {
    quiz.querySelector('.quiz-source').replaceChildren('When the presenter opens a poll on this quiz, enter your prediction here.');
  }
  setAllowRuns(false);
}

wire();
showSection(0, 'following section');
sock = new api.RoomSocket(onMessage, onStatus);
sock.connect();
window.kvlabRoom = { role: 'follower', views };
