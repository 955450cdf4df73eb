// stage.js: the lesson's sections on a room page (the server wraps each
// `##` part in <section class="room-section" data-section="N">), the
// one in view, and its cells and quizzes.

export const sectionEls = () => Array.from(document.querySelectorAll('.room-section'));
export const sectionCount = () => Number(document.body.dataset.sections) || sectionEls().length;

let current = -1;
export const currentSection = () => current;

// showSection shows section n alone (CSS hides the others) and says
// where the room is in #room-where.
export function showSection(n, prefix = 'section') {
  const secs = sectionEls();
  if (!secs.length) return;
  n = Math.max(0, Math.min(n, secs.length - 1));
  const changed = n !== current;
  current = n;
  for (const s of secs) s.classList.toggle('current', Number(s.dataset.section) === n);
  for (const li of document.querySelectorAll('.room-toc li')) li.classList.toggle('current', Number(li.dataset.section) === n);
  const where = document.getElementById('room-where');
  if (where) where.textContent = `${prefix} ${n + 1} of ${secs.length}`;
  document.body.dataset.current = String(n);
  if (changed) window.scrollTo(0, 0);
}

// inView picks, among els, the one nearest the top of the window that
// is at least partly visible; else the first.
function inView(els) {
  const vis = els.filter((e) => { const r = e.getBoundingClientRect(); return r.bottom > 60 && r.top < window.innerHeight; });
  return vis[0] || els[0] || null;
}

const inCurrent = (sel) => {
  const sec = document.querySelector(`.room-section[data-section="${current}"]`);
  return sec ? Array.from(sec.querySelectorAll(sel)) : [];
};

// cellInView is the lab cell of the current section the presenter means:
// the one holding the focus, else the one nearest the top of the window.
export function cellInView() {
  const cells = inCurrent('.cell');
  return cells.find((c) => c.contains(document.activeElement)) || inView(cells);
}

// quizInView is the current section's quiz that can be polled (one
// measured by a cell) nearest the top of the window.
export function quizInView() {
  const qs = inCurrent('.quiz[data-cell]');
  return qs.find((q) => q.contains(document.activeElement)) || inView(qs);
}
