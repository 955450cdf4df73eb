// page.js: the parts of a page that are not cells or quizzes: the theme
// toggle, the index's progress per lesson, the lesson's table of
// contents, and a run's permalink page.

import { $, $$, h, store } from './dom.js';
import { progress, exerciseKey } from './session.js';
import { renderResults } from './results.js';

// setupTheme wires the light/dark toggle. theme.js set the theme before
// the page painted; a choice equal to the system's returns to following it.
export function setupTheme() {
  const btn = $('#theme-toggle');
  const root = document.documentElement;
  const mq = matchMedia('(prefers-color-scheme: dark)');
  const apply = (t) => { root.dataset.theme = t; if (btn) btn.setAttribute('aria-pressed', t === 'dark' ? 'true' : 'false'); };
  apply(root.dataset.theme || (mq.matches ? 'dark' : 'light'));
  mq.addEventListener('change', (e) => { if (!store.get('kvlab:theme')) apply(e.matches ? 'dark' : 'light'); });
  if (btn) btn.addEventListener('click', () => {
    const t = root.dataset.theme === 'dark' ? 'light' : 'dark';
    if ((t === 'dark') === mq.matches) store.del('kvlab:theme'); else store.set('kvlab:theme', t);
    apply(t);
  });
}

// setupIndex shows each lesson card's progress in this browser.
export function setupIndex() {
  for (const card of $$('.lesson-card')) {
    const p = progress(card.dataset.lesson);
    const out = $('.progress', card);
    if (!p.visited) { out.textContent = 'Not started'; card.classList.add('unstarted'); continue; }
    const cells = (card.dataset.cells || '').split(' ').filter(Boolean);
    const quizzes = (card.dataset.quizzes || '').split(' ').filter(Boolean);
    const exercises = (card.dataset.exercises || '').split(' ').filter(Boolean);
    const ran = cells.filter((c) => p.cells[c]).length;
    const tried = quizzes.filter((q) => p.quizzes[q]);
    const right = tried.filter((q) => p.quizzes[q].correct).length;
    const passed = exercises.filter((x) => store.get(exerciseKey(x, 'passed'))).length;
    const total = cells.length + quizzes.length + exercises.length;
    const doneN = ran + right + passed;
    const pct = total ? Math.round(100 * doneN / total) : 100;
    out.replaceChildren(
      h('span', { class: 'bar', role: 'img', 'aria-label': `${pct}% done` }, h('span', { style: `width:${pct}%` })),
      h('span', { class: 'progress-text' },
        `${ran}/${cells.length} cells run`,
        quizzes.length ? ` · quizzes ${right}/${quizzes.length} right` : '',
        tried.length > right ? ` (${tried.length - right} to retry)` : '',
        exercises.length ? ` · exercises ${passed}/${exercises.length} passed` : ''));
    if (total && doneN === total) card.classList.add('complete');
  }
}

// setupTOC highlights the contents entry of the section being read: the
// last whose heading is above the reading line (30% down the window),
// scrolling down or up; the first while none is.
export function setupTOC() {
  const links = new Map($$('.toc a[href^="#"]').map((a) => [decodeURIComponent(a.getAttribute('href').slice(1)), a]));
  const heads = [...links.keys()].map((id) => document.getElementById(id)).filter(Boolean);
  if (!heads.length) return;
  let queued = false;
  const update = () => {
    queued = false;
    const line = innerHeight * 0.3;
    let cur = heads[0];
    for (const el of heads) if (el.getBoundingClientRect().top <= line) cur = el;
    for (const [id, a] of links) a.classList.toggle('active', id === cur.id);
  };
  const later = () => { if (!queued) { queued = true; requestAnimationFrame(update); } };
  addEventListener('scroll', later, { passive: true });
  addEventListener('resize', later);
  update();
}

// setupRunPage draws a stored run (the page's #run-data JSON) the way
// its cell drew it.
export function setupRunPage() {
  const data = $('#run-data');
  const out = $('.run-result .cell-out');
  if (!data || !out) return;
  let run;
  try { run = JSON.parse(data.textContent); } catch (err) { out.replaceChildren(h('div', { class: 'error' }, `The run's JSON does not parse: ${err.message}`)); return; }
  renderResults(out, [{ spec: run.spec, result: run.result }]);
}
