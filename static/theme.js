// kvlab theme: runs before the page paints (a plain <script> in <head>,
// neither defer nor async), so a dark page never flashes light. A file,
// not an inline script: the Content-Security-Policy forbids inline script.
(function () {
  var t = null;
  try { t = localStorage.getItem('kvlab:theme'); } catch (e) { /* storage blocked */ }
  if (t !== 'light' && t !== 'dark') t = matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  document.documentElement.dataset.theme = t;
})();
