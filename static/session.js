// session.js: what this browser keeps about the reader, in localStorage:
// progress per lesson (visited, cells run, quizzes answered, predictions),
// each cell's last results, the instructor token and the browser id.

import { store, randomID } from './dom.js';

// lessonSlug is the lesson of this page (its <body data-lesson>).
export const lessonSlug = () => document.body.dataset.lesson;

// resultsKey is where a cell's last complete results are kept:
// {at, lines: [{spec, result, run_id, group, prev_group}]}.
export const resultsKey = (cell) => `kvlab:results:${lessonSlug()}:${cell}`;

const progressKey = (slug) => `kvlab:progress:${slug}`;

// exerciseKey is where exercise.js keeps what this browser did in the
// exercise name: k is "code", "attempted" or "passed" (the index counts
// passed exercises in a lesson's progress).
export const exerciseKey = (name, k) => `kvlab:exercise:${name}:${k}`;

// progress is a lesson's progress in this browser:
// {visited, cells: {id: true}, quizzes: {id: {correct, answer, at, prediction, off, timing, attempts}}, predictions},
// attempts being a predict: yes quiz's graded predictions by number: {n: {answer, correct, off}}.
export function progress(slug) { return store.json(progressKey(slug), { visited: false, cells: {}, quizzes: {} }); }

// updateProgress changes a lesson's progress with fn and keeps it.
export function updateProgress(slug, fn) { const p = progress(slug); fn(p); store.setJSON(progressKey(slug), p); }

// Predictions (quizzes with predict: yes) are kept with the progress:
// p.predictions[id] = { answer, at, id, graded }, id being the server's
// (POST /api/predict) and graded set once the server graded it. The
// quiz's cell stays locked until every predicting quiz on it has one; the
// server grades it by the cell's first run after it, once.
export function prediction(id) { return (progress(lessonSlug()).predictions || {})[id] || null; }

export function setPrediction(id, answer, serverID) {
  updateProgress(lessonSlug(), (p) => { p.predictions = p.predictions || {}; p.predictions[id] = { answer, at: Date.now(), id: serverID || 0, graded: false }; });
}

// needToken says the server is shared: running needs the instructor token.
export function needToken() { return document.body.hasAttribute('data-token-required'); }

// token is the instructor token this browser keeps; with ask, a page that
// needs one and has none asks the reader for it.
export function token(ask) {
  let t = store.get('kvlab:token') || '';
  if (!t && ask && needToken()) {
    t = (window.prompt('This server is shared: running cells needs the instructor token.') || '').trim();
    if (t) store.set('kvlab:token', t);
  }
  return t;
}

// Presenter authority (docs/api.md, "Presenter"): starting a room
// returns its presenter secret once; this browser keeps it per room. The
// server's presenter token, when this browser was given one, presents
// every room. Neither is the instructor token students run cells with.
const secretKey = (code) => `kvlab:presenter:${code}`;
const presenterTokenKey = 'kvlab:presenter-token';

// presenterToken is the server's presenter token this browser keeps, or
// ''; with ask, a browser without one asks for it (prompt names why) and
// keeps the answer.
export function presenterToken(ask) {
  let t = store.get(presenterTokenKey) || '';
  if (!t && ask) {
    t = (window.prompt(ask) || '').trim();
    if (t) store.set(presenterTokenKey, t);
  }
  return t;
}

// forgetPresenterToken drops a presenter token the server refused.
export function forgetPresenterToken() { store.del(presenterTokenKey); }

// presenterSecret is what this browser presents room code with: the
// room's secret, else the presenter token, else ''; with ask, a browser
// that has neither asks for it (a second device).
export function presenterSecret(code, ask) {
  let s = store.get(secretKey(code)) || presenterToken() || '';
  if (!s && ask) {
    s = (window.prompt(`To present room ${code} from this browser, enter its presenter secret (the presenter's page shows it under "Second device"), or the server's presenter token.`) || '').trim();
    if (s) store.set(secretKey(code), s);
  }
  return s;
}

// keepPresenterSecret keeps the secret a room's start returned.
export function keepPresenterSecret(code, secret) { store.set(secretKey(code), secret); }

// forgetPresenterSecret drops a secret the server refused.
export function forgetPresenterSecret(code) { store.del(secretKey(code)); }

// forgetToken drops a token the server refused.
export function forgetToken() { store.del('kvlab:token'); }

// browserID is a random id this browser keeps, sent with each run and
// quiz so the server can grade quizzes from the runs it recorded for
// this browser. It names a browser, not a person.
export function browserID() {
  let id = store.get('kvlab:browser');
  if (!id || !/^[A-Za-z0-9-]{1,64}$/.test(id)) {
    id = randomID();
    store.set('kvlab:browser', id);
  }
  return id;
}
