// kvlab theme: runs before the page paints (a plain <script> in <head>,
// neither defer nor async nor a module, which would wait for the whole
// document), so a dark page never flashes light. A file, not an inline
// script: the Content-Security-Policy forbids inline script.
(() => {
  let t = null;
  try { t = localStorage.getItem('kvlab:theme'); } catch { /* storage blocked */ }
  if (t !== 'light' && t !== 'dark') t = matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  document.documentElement.dataset.theme = t;
})();
