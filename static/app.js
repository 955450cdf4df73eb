// app.js: the page script of every kvlab page. It only wires the modules
// together; each does one job:
//
//	dom.js      element builders, localStorage, number and duration formatting
//	charts.js   the result charts, pure data-to-SVG functions
//	results.js  a run's table, notes and charts (renderResults)
//	cells.js    the websocket, a cell's run (CellRun) and a lesson's cells
//	quizzes.js  quizzes and predictions
//	session.js  what this browser keeps: progress, token, browser id
//	page.js     theme toggle, index progress, contents, a run's page
//	exercise.js the in-browser Go exercises (its own script tag, on pages that have one)
//
// No dependencies, no build step and no external requests: the browser
// loads these ES modules as labserver serves them. The page's tests read
// window.kvlab: {cells, socket, browser, savePrediction}.

import { $, $$ } from './dom.js';
import { Cell, Socket } from './cells.js';
import { cellLocked, savePrediction, setupQuizzes } from './quizzes.js';
import { lessonSlug, updateProgress, browserID } from './session.js';
import { setupIndex, setupRunPage, setupTheme, setupTOC } from './page.js';

function setupLesson() {
  updateProgress(lessonSlug(), (p) => { p.visited = true; });
  const sock = new Socket($('#conn'));
  const cells = $$('.cell').map((el) => new Cell(el, sock, cellLocked));
  window.kvlab = { cells, socket: sock, browser: browserID, savePrediction };
  setupQuizzes((id) => { const c = cells.find((x) => x.id === id); if (c) c.applyLock(); });
  for (const c of cells) c.applyLock();
  setupTOC();
}

// A module runs after the document is parsed, before DOMContentLoaded.
setupTheme();
const page = document.body.classList;
if (page.contains('index')) setupIndex();
if (page.contains('run-page')) setupRunPage();
if (page.contains('lesson')) setupLesson();
