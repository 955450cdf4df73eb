// kvlab page script: theme, lab cells over the /ws websocket, result
// tables and SVG charts, quizzes, and per-browser progress.
// No dependencies and no external requests: everything here is served by
// labserver.
(() => {
  'use strict';

  // ---------- small helpers

  const $ = (sel, el = document) => el.querySelector(sel);
  const $$ = (sel, el = document) => Array.from(el.querySelectorAll(sel));
  const SVGNS = 'http://www.w3.org/2000/svg';

  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : v);
    }
    for (const kid of kids.flat()) {
      if (kid == null || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }

  // Quiz explanations arrive as HTML that the server rendered from the
  // lesson's Markdown. They never go into innerHTML: the HTML is parsed into
  // an inert document (nothing in it runs or loads), and only text and a
  // few inline elements are copied into the page; a link keeps its target
  // only when it is http(s), relative or a #fragment.
  const INLINE = new Set(['A', 'CODE', 'EM', 'STRONG', 'SUB', 'SUP', 'BR', 'DEL', 'KBD']);
  const DROP = new Set(['SCRIPT', 'STYLE', 'TEMPLATE', 'IFRAME', 'OBJECT', 'EMBED', 'svg', 'math']);
  function safeInline(html) {
    const doc = new DOMParser().parseFromString(`<!doctype html><body>${html}`, 'text/html');
    const copy = (from) => {
      const out = [];
      for (const n of from.childNodes) {
        if (n.nodeType === Node.TEXT_NODE) { out.push(document.createTextNode(n.data)); continue; }
        if (n.nodeType !== Node.ELEMENT_NODE || DROP.has(n.tagName)) continue;
        const kids = copy(n);
        if (!INLINE.has(n.tagName)) { out.push(...kids); continue; }
        const el = document.createElement(n.tagName.toLowerCase());
        const href = n.tagName === 'A' ? (n.getAttribute('href') || '') : '';
        if (href && (/^https?:/i.test(href) || !/^[a-z][a-z0-9+.-]*:/i.test(href.trim()))) el.setAttribute('href', href);
        el.append(...kids);
        out.push(el);
      }
      return out;
    };
    return copy(doc.body);
  }

  function s(tag, attrs, ...kids) {
    const el = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null) continue;
      if (k === 'text') el.textContent = v;
      else el.setAttribute(k, v);
    }
    for (const kid of kids.flat()) if (kid) el.append(kid);
    return el;
  }

  const store = {
    get(k) { try { return localStorage.getItem(k); } catch { return null; } },
    set(k, v) { try { localStorage.setItem(k, v); } catch { /* full or disabled */ } },
    del(k) { try { localStorage.removeItem(k); } catch { /* disabled */ } },
    json(k, dflt) { try { const v = JSON.parse(this.get(k)); return v == null ? dflt : v; } catch { return dflt; } },
    setJSON(k, v) { this.set(k, JSON.stringify(v)); },
  };

  // Numbers the way the course writes them.
  function fmtNs(ns) {
    if (ns == null || !isFinite(ns)) return '–';
    const a = Math.abs(ns);
    if (a < 1000) return `${Math.round(ns)} ns`;
    if (a < 1e6) return `${sig(ns / 1e3)} µs`;
    if (a < 1e9) return `${sig(ns / 1e6)} ms`;
    return `${sig(ns / 1e9)} s`;
  }
  function sig(x) { return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2); }
  function fmtInt(x) { return x == null || !isFinite(x) ? '–' : Math.round(x).toLocaleString('en-US'); }
  function fmtRate(x) {
    if (x == null || !isFinite(x)) return '–';
    if (x >= 1e7) return `${sig(x / 1e6)} M`;
    return fmtInt(x);
  }
  function fmtBytes(b) {
    if (b == null) return '–';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return `${i ? sig(b) : b} ${u[i]}`;
  }

  // ---------- theme

  function setupTheme() {
    const btn = $('#theme-toggle');
    const root = document.documentElement;
    const mq = matchMedia('(prefers-color-scheme: dark)');
    const apply = (t) => { root.dataset.theme = t; if (btn) btn.setAttribute('aria-pressed', t === 'dark' ? 'true' : 'false'); };
    apply(root.dataset.theme || (mq.matches ? 'dark' : 'light'));
    mq.addEventListener('change', (e) => { if (!store.get('kvlab:theme')) apply(e.matches ? 'dark' : 'light'); });
    if (btn) btn.addEventListener('click', () => {
      const t = root.dataset.theme === 'dark' ? 'light' : 'dark';
      // Choosing the system's own theme returns to following the system.
      if ((t === 'dark') === mq.matches) store.del('kvlab:theme'); else store.set('kvlab:theme', t);
      apply(t);
    });
  }

  // ---------- progress (per browser)

  const progressKey = (slug) => `kvlab:progress:${slug}`;
  function progress(slug) { return store.json(progressKey(slug), { visited: false, cells: {}, quizzes: {} }); }
  function updateProgress(slug, fn) { const p = progress(slug); fn(p); store.setJSON(progressKey(slug), p); }

  function setupIndex() {
    for (const card of $$('.lesson-card')) {
      const slug = card.dataset.lesson;
      const p = progress(slug);
      const cells = (card.dataset.cells || '').split(' ').filter(Boolean);
      const quizzes = (card.dataset.quizzes || '').split(' ').filter(Boolean);
      const ran = cells.filter((c) => p.cells[c]).length;
      const tried = quizzes.filter((q) => p.quizzes[q]);
      const right = tried.filter((q) => p.quizzes[q].correct).length;
      const out = $('.progress', card);
      if (!p.visited) { out.textContent = 'Not started'; card.classList.add('unstarted'); continue; }
      const total = cells.length + quizzes.length;
      const doneN = ran + right;
      const pct = total ? Math.round(100 * doneN / total) : 100;
      out.replaceChildren(
        h('span', { class: 'bar', role: 'img', 'aria-label': `${pct}% done` }, h('span', { style: `width:${pct}%` })),
        h('span', { class: 'progress-text' },
          `${ran}/${cells.length} cells run`,
          quizzes.length ? ` · quizzes ${right}/${quizzes.length} right` : '',
          tried.length > right ? ` (${tried.length - right} to retry)` : ''));
      if (total && doneN === total) card.classList.add('complete');
    }
  }

  // ---------- token

  function needToken() { return document.body.hasAttribute('data-token-required'); }
  function token(ask) {
    let t = store.get('kvlab:token') || '';
    if (!t && ask && needToken()) {
      t = (window.prompt('This server is shared: running cells needs the instructor token.') || '').trim();
      if (t) store.set('kvlab:token', t);
    }
    return t;
  }

  // ---------- browser id

  // browserID is a random id this browser keeps, sent with each run and
  // quiz so the server can grade quizzes from the runs it recorded for
  // this browser. It names a browser, not a person.
  function browserID() {
    let id = store.get('kvlab:browser');
    if (!id || !/^[A-Za-z0-9-]{1,64}$/.test(id)) {
      id = window.crypto && crypto.randomUUID ? crypto.randomUUID() : `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
      store.set('kvlab:browser', id);
    }
    return id;
  }

  // savePrediction stores a quiz prediction in the server's archive when
  // the reader enters it, before the cell it predicts runs. It resolves
  // to the stored prediction ({id, at}) or rejects with the server's message.
  async function savePrediction(quiz, value) {
    const resp = await fetch('/api/predict', { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ lesson: lessonSlug(), quiz, browser: browserID(), value: String(value) }) });
    const r = await resp.json();
    if (!resp.ok) throw new Error(r.error || `HTTP ${resp.status}`);
    return r;
  }

  // ---------- websocket

  class Socket {
    constructor() { this.ws = null; this.pending = []; this.handlers = new Map(); this.conn = $('#conn'); }
    url() {
      const t = token(false);
      return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/ws${t ? `?token=${encodeURIComponent(t)}` : ''}`;
    }
    ensure() {
      if (this.ws && (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING)) return;
      this.ws = new WebSocket(this.url());
      this.status('connecting');
      this.ws.onopen = () => { this.status('connected'); for (const m of this.pending.splice(0)) this.ws.send(JSON.stringify(m)); };
      this.ws.onmessage = (ev) => {
        let m;
        try { m = JSON.parse(ev.data); } catch { return; }
        const fn = this.handlers.get(m.id);
        if (fn) fn(m);
        else if (m.type === 'error') console.warn('labserver:', m.message);
      };
      this.ws.onclose = () => {
        this.status('disconnected');
        this.ws = null;
        for (const [id, fn] of this.handlers) fn({ type: 'lost', id });
      };
    }
    status(st) { if (this.conn) { this.conn.hidden = false; this.conn.dataset.state = st; this.conn.textContent = st; } }
    send(m) {
      this.ensure();
      if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m)); else this.pending.push(m);
    }
    on(id, fn) { this.handlers.set(id, fn); }
    off(id) { this.handlers.delete(id); }
  }

  // ---------- cells

  const lessonSlug = () => document.body.dataset.lesson;
  const resultsKey = (cell) => `kvlab:results:${lessonSlug()}:${cell}`;
  let runCounter = 0;

  class Cell {
    constructor(el, sock) {
      this.el = el; this.sock = sock;
      this.id = el.dataset.cell;
      this.src = $('.cell-src', el);
      this.out = $('.cell-out', el);
      this.state = $('.cell-state', el);
      this.runBtn = $('.run', el); this.cancelBtn = $('.cancel', el); this.resetBtn = $('.reset', el); this.repeatBtn = $('.repeat', el);
      this.editKey = `kvlab:cell:${lessonSlug()}:${this.id}:${el.dataset.hash}`;
      this.runId = null;
      const saved = store.get(this.editKey);
      if (saved != null && saved !== this.src.defaultValue) { this.src.value = saved; this.el.classList.add('edited'); }
      this.fit();
      this.src.addEventListener('input', () => {
        this.fit();
        const edited = this.src.value !== this.src.defaultValue;
        if (edited) store.set(this.editKey, this.src.value); else store.del(this.editKey);
        this.el.classList.toggle('edited', edited);
      });
      this.el.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' && e.shiftKey) { e.preventDefault(); this.run(); }
        else if (e.key === 'Escape' && this.runId) { e.preventDefault(); this.cancel(); }
      });
      this.runBtn.addEventListener('click', () => this.run());
      if (this.repeatBtn) this.repeatBtn.addEventListener('click', () => this.run(REPEAT));
      this.lockNote = h('span', { class: 'predict-lock', hidden: true }, 'Enter your prediction in the quiz below first.');
      $('.cell-actions', el).insertBefore(this.lockNote, $('.hint', el));
      this.cancelBtn.addEventListener('click', () => this.cancel());
      this.resetBtn.addEventListener('click', () => {
        this.src.value = this.src.defaultValue; store.del(this.editKey); this.el.classList.remove('edited'); this.fit(); this.src.focus();
      });
      const last = store.json(resultsKey(this.id), null);
      if (last && Array.isArray(last.lines) && last.lines.some((l) => l && l.result)) {
        this.lines = last.lines;
        this.render(true, last.at);
      }
    }
    fit() {
      const n = this.src.value.split('\n').length;
      this.src.rows = Math.max(2, Math.min(n, 14));
    }
    setState(cls, text) {
      this.el.classList.remove('is-queued', 'is-running', 'is-error', 'is-done');
      if (cls) this.el.classList.add(cls);
      this.state.textContent = text || '';
    }
    // locked: a predict: yes quiz on this cell has no prediction yet.
    locked() { return predictQuizzes(this.id).some((q) => !prediction(q.dataset.quiz)); }
    applyLock() {
      const locked = this.locked();
      this.el.classList.toggle('is-locked', locked);
      this.lockNote.hidden = !locked;
      if (!this.runId) { this.runBtn.disabled = locked; if (this.repeatBtn) this.repeatBtn.disabled = locked; }
    }
    // run sends the cell to the server; rounds > 1 runs its lines that many
    // times as one group ("repeat 5x"), for the compare page.
    run(rounds) {
      if (this.runId) return;
      if (this.locked()) { this.applyLock(); return; }
      this.rounds = rounds > 1 ? rounds : 1;
      if (needToken() && !token(true)) { this.showError('This server needs the instructor token to run cells.'); return; }
      this.runId = `${this.id}#${++runCounter}`;
      const lines = this.src.value.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
      this.lines = lines.map((spec) => ({ spec, result: null, progress: [], error: null, run_id: null, group: [], rounds: [] }));
      this.errors = [];
      this.notice = null;
      this.current = null;
      // Keep focus inside the cell (a disabled Run button drops it to the
      // page), so that Esc, handled on the cell, still cancels.
      const refocus = document.activeElement === this.runBtn;
      this.runBtn.disabled = true; this.cancelBtn.hidden = false;
      if (this.repeatBtn) this.repeatBtn.disabled = true;
      if (refocus) this.cancelBtn.focus();
      this.setState('is-queued', 'sending…');
      this.render(false);
      this.sock.on(this.runId, (m) => this.onMessage(m));
      const msg = { type: 'run', id: this.runId, cell: this.src.value, lesson: lessonSlug(), cell_id: this.id, browser: browserID() };
      if (this.rounds > 1) msg.repeat = this.rounds;
      if (token(false)) msg.token = token(false);
      this.sock.send(msg);
    }
    cancel() {
      if (!this.runId) return;
      this.sock.send({ type: 'cancel', id: this.runId });
      this.setState('is-running', 'cancelling…');
    }
    finish(cls, text) {
      this.sock.off(this.runId);
      this.runId = null;
      const refocus = document.activeElement === this.cancelBtn;
      this.runBtn.disabled = this.locked(); this.cancelBtn.hidden = true;
      if (this.repeatBtn) this.repeatBtn.disabled = this.locked();
      if (refocus) this.runBtn.focus();
      this.setState(cls, text);
    }
    onMessage(m) {
      const L = this.lines;
      switch (m.type) {
        case 'queued':
          this.setState('is-queued', m.position > 0 ? `queued · ${m.position} run${m.position === 1 ? '' : 's'} ahead` : 'starting…');
          break;
        case 'started':
          if (L[m.line]) L[m.line].spec = m.spec;
          this.current = m.line;
          this.setState('is-running', `running line ${m.line + 1} of ${L.length}`);
          this.render(false);
          break;
        case 'progress':
          if (L[m.line]) { L[m.line].progress.push(m); this.renderLive(m); }
          break;
        case 'result':
          if (L[m.line]) {
            const l = L[m.line];
            l.run_id = m.run_id || null;
            if (m.run_id) l.group.push(m.run_id);
            // A repeated cell shows its rounds the way a -repeat line does: one array, each run numbered.
            if (m.round) { l.rounds.push(...(Array.isArray(m.result) ? m.result : [m.result]).map((r) => ({ ...r, run: l.rounds.length + 1 }))); l.result = l.rounds.slice(); }
            else l.result = m.result;
          }
          this.render(false);
          break;
        case 'error':
          if (m.line != null && L[m.line]) L[m.line].error = m.message; else this.errors.push(m.message);
          if (/instructor token/.test(m.message)) store.del('kvlab:token');
          this.render(false);
          break;
        case 'done': {
          const ok = L.length > 0 && L.every((l) => l.result);
          if (ok) {
            const prev = store.json(resultsKey(this.id), null);
            // A repeated run keeps its group of run ids per line, and the group before it, for the compare links.
            const groups = (l, i) => (l.group.length > 1 ? { group: l.group, prev_group: (prev && prev.lines && prev.lines[i] && prev.lines[i].spec !== l.spec && prev.lines[i].group) || (prev && prev.lines && prev.lines[i] && prev.lines[i].prev_group) || null } : {});
            const kept = L.map((l, i) => ({ spec: l.spec, result: l.result, run_id: l.run_id, ...groups(l, i) }));
            kept.forEach((k, i) => { L[i].prev_group = k.prev_group || null; });
            store.setJSON(resultsKey(this.id), { at: Date.now(), lines: kept });
            updateProgress(lessonSlug(), (p) => { p.cells[this.id] = true; });
            // Predictions waiting for this cell are graded now.
            document.dispatchEvent(new CustomEvent('kvlab:measured', { detail: { cell: this.id } }));
          }
          const failed = L.some((l) => l.error) || this.errors.length;
          if (m.cancelled && !ok) this.notice = cancelNotice(L, this.current);
          this.finish(m.cancelled ? 'is-error' : failed ? 'is-error' : 'is-done', m.cancelled ? 'cancelled' : failed ? 'failed' : 'done');
          this.render(true);
          break;
        }
        case 'lost':
          this.errors.push('The connection to labserver was lost; the run was cancelled. Run the cell again when the server is back.');
          this.finish('is-error', 'disconnected');
          this.render(true);
          break;
      }
    }
    showError(msg) { this.out.replaceChildren(h('div', { class: 'error' }, msg)); this.setState('is-error', 'error'); }
    renderLive(m) {
      const live = $('.live', this.out);
      if (!live) return;
      const L = this.lines[m.line];
      $('.live-text', live).replaceChildren(
        h('span', { class: 'live-spec' }, `line ${m.line + 1}`),
        h('span', {}, `${(m.elapsed_seconds || 0).toFixed(1)} s`),
        h('span', {}, `${fmtInt(m.ops)} ops`),
        h('span', {}, h('b', {}, fmtRate(m.ops_per_sec)), ' ops/s'),
        h('span', {}, `p50 ${fmtNs(m.p50_ns)}`),
        h('span', {}, `p99 ${fmtNs(m.p99_ns)}`),
        m.engine ? h('span', {}, m.engine) : null);
      const pts = L.progress.map((p) => [p.elapsed_seconds, p.ops_per_sec]);
      $('.live-chart', live).replaceChildren(sparkline(pts));
    }
    render(final, at) {
      const out = [];
      for (const msg of this.errors || []) out.push(h('div', { class: 'error', role: 'alert' }, msg));
      if (this.notice) out.push(h('p', { class: 'notice' }, this.notice));
      if (!final && this.runId) {
        const cur = this.current != null && this.lines[this.current];
        const what = cur ? [h('span', { class: 'live-spec' }, `line ${this.current + 1}`), h('span', {}, `${cur.spec} — measuring…`)] : ['waiting for the disk…'];
        out.push(h('div', { class: 'live' }, h('div', { class: 'live-text' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), ...what), h('div', { class: 'live-chart' })));
      }
      out.push(renderLines(this.lines || []));
      const links = cellLinks(this.lines || []);
      if (links) out.push(links);
      if (final && at) out.push(h('p', { class: 'stamp' }, `Last run ${new Date(at).toLocaleString()} — kept in this browser and in the server's record.`));
      this.out.replaceChildren(...out);
      if (!final && this.current != null) {
        const L = this.lines[this.current];
        if (L && L.progress.length && !L.result) this.renderLive(L.progress[L.progress.length - 1]);
      }
    }
  }

  // REPEAT is how many rounds the "Repeat 5×" button runs.
  const REPEAT = 5;

  // cellLinks links each line's result to its permalink, and a repeated
  // line's group to the compare page: against the group run before the
  // spec changed when this browser kept it, else against the server's
  // record of the runs of this cell before the change.
  function cellLinks(lines) {
    const items = [];
    lines.forEach((l, i) => {
      if (!l.result) return;
      const pre = lines.length > 1 ? `line ${i + 1}: ` : '';
      if (l.group && l.group.length > 1) {
        items.push(h('span', {}, pre, `group of ${l.group.length} runs (`,
          ...l.group.flatMap((id, k) => [k ? ', ' : null, h('a', { href: `/runs/${id}`, class: 'permalink' }, `#${id}`)]), ') · ',
          h('a', { href: l.prev_group ? `/compare?a=${l.prev_group.join(',')}&b=${l.group.join(',')}` : `/compare?b=${l.group.join(',')}`, class: 'compare-link' },
            l.prev_group ? 'compare with the group before the change' : 'compare with the runs before the change')));
      } else if (l.run_id) {
        items.push(h('span', {}, pre, h('a', { href: `/runs/${l.run_id}`, class: 'permalink' }, `run #${l.run_id}`)));
      }
    });
    return items.length ? h('p', { class: 'cell-links' }, 'Permalink: ', ...items.flatMap((x, k) => [k ? ' · ' : null, x])) : null;
  }

  // cancelNotice says what a cancelled run left behind, so the output is
  // not just an empty box.
  function cancelNotice(lines, cur) {
    const l = cur != null && lines[cur];
    const p = l && !l.result && l.progress[l.progress.length - 1];
    const kept = lines.filter((x) => x.result).length;
    let s = p ? `Cancelled ${(p.elapsed_seconds || 0).toFixed(1)} s into line ${cur + 1}, after ${fmtInt(p.ops)} ops.` : l && !l.result ? `Cancelled during line ${cur + 1}.` : 'Cancelled before the run started.';
    s += ' A cancelled line records no result: a partial run is not a measurement.';
    if (kept) s += ` The ${kept === 1 ? 'line' : `${kept} lines`} that finished ${kept === 1 ? 'is' : 'are'} shown below but not saved; run the cell again to keep a result.`;
    return s;
  }

  // ---------- result rendering

  const benchObjs = (r) => (Array.isArray(r) ? r : [r]).filter((x) => x && x.kind === 'bench');

  function renderLines(lines) {
    const frag = h('div', { class: 'results' });
    const benches = [];
    lines.forEach((l, i) => {
      // Errors about a line from the server already start with "line N (spec):".
      if (l.error) frag.append(h('div', { class: 'error', role: 'alert' }, /^line \d/.test(l.error) ? null : h('b', {}, `line ${i + 1}: `), l.error));
      if (!l.result) return;
      for (const b of benchObjs(l.result)) benches.push({ line: i, b });
    });
    if (benches.length) frag.append(benchView(benches));
    const crashes = lines.flatMap((l) => (l.result ? (Array.isArray(l.result) ? l.result : [l.result]) : [])).filter((r) => r && r.kind === 'crash');
    if (crashes.length) frag.append(h('div', { class: 'result result-crash' }, crashView(crashes)));
    lines.forEach((l, i) => {
      if (!l.result) return;
      for (const r of (Array.isArray(l.result) ? l.result : [l.result])) {
        if (!r || r.kind === 'bench' || r.kind === 'crash') continue;
        const v = r.kind === 'probe' ? probeView(r) : r.kind === 'model' ? modelView(r) : r.kind === 'crash' ? crashView(r) : null;
        frag.append(h('div', { class: `result result-${r.kind || 'other'}` }, h('h4', { class: 'result-title' }, `line ${i + 1}: `, h('code', {}, l.spec)), v || rawView(r)));
      }
    });
    const done = lines.filter((l) => l.result);
    if (done.length) {
      frag.append(h('details', { class: 'raw' }, h('summary', {}, 'JSON of this run (archive what you ran)'),
        h('pre', {}, JSON.stringify(done.map((l) => l.result), null, 1))));
    }
    return frag;
  }

  function rawView(r) { return h('pre', { class: 'json' }, JSON.stringify(r, null, 1)); }

  function shortLabel(b, all) {
    // Name a run by what differs between the runs shown together.
    const keys = ['engine', 'sync', 'workload', 'threads', 'value_size', 'dist', 'keys', 'rate'];
    const diff = keys.filter((k) => new Set(all.map((x) => String(x.b[k] || ''))).size > 1);
    const parts = (diff.length ? diff : ['engine', 'sync']).map((k) => (k === 'threads' ? `${b[k]} thr` : k === 'value_size' ? `${b[k]} B` : k === 'keys' ? `${b[k]} keys` : k === 'rate' ? (b.rate ? `${fmtInt(b.rate)}/s open loop` : 'closed loop') : b[k]));
    return parts.join(' · ') + (b.cancelled ? ' (cancelled)' : '');
  }

  function benchView(benches) {
    const wrap = h('div', { class: 'result result-bench' });
    const series = [];
    const rows = [];
    benches.forEach((x, k) => {
      const b = x.b;
      const label = shortLabel(b, benches);
      const unc = b.latency_uncorrected || {};
      for (const [op, lat] of Object.entries(b.latency || {})) {
        // Eight colours: the ninth run on reuses them, dashed.
        series.push({ name: `${label}${Object.keys(b.latency).length > 1 ? ` ${op}` : ''}`, lat, b, k: series.length, dashed: series.length >= 8 });
        rows.push({ label: unc[op] ? `${label} · corrected` : label, op, lat, b, k: series.length - 1, line: x.line });
        // An open-loop run also reports latency from each request's actual
        // start; the lesson on coordinated omission compares the two rows.
        if (unc[op]) rows.push({ label: `${label} · uncorrected`, op, lat: unc[op], b, k: -1, line: x.line, unc: true });
      }
      if (!b.latency || !Object.keys(b.latency).length) rows.push({ label, op: '–', lat: {}, b, k: -1, line: x.line });
      // The last run of a -repeat carries the percentiles of all its
      // runs' samples together: not the median of the runs' figures.
      if (b.pooled) {
        for (const [op, lat] of Object.entries(b.pooled.latency || {})) rows.push({ label: `${label} · pooled, ${b.pooled.runs} runs`, op, lat, b, k: -1, line: x.line, pooled: true });
      }
    });
    const hasModel = benches.some((x) => x.b.model);
    const showOp = new Set(rows.map((r) => r.op)).size > 1;
    const cols = ['run', showOp ? 'op' : null, 'count', 'mean', 'p50', 'p95', 'p99', 'p99.9', 'max', 'ops/s', hasModel ? 'model' : null].filter(Boolean);
    const table = h('table', { class: 'nums' },
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col', class: c === 'p99' ? 'p99' : MINOR_COLS.has(c) ? 'minor' : null, title: c === 'model' ? 'ops/s predicted by 1 / (T_write + T_fsync/N); in brackets measured ÷ predicted' : null }, c)))),
      h('tbody', {}, rows.map((r) => h('tr', {},
        h('th', { scope: 'row' }, r.k >= 0 ? h('span', { class: `swatch c${r.k % 8}${r.k >= 8 ? ' dashed' : ''}` }) : null, r.label),
        showOp ? h('td', { class: 'op' }, r.op) : null,
        h('td', { class: 'minor' }, fmtInt(r.lat.count)),
        h('td', {}, fmtNs(r.lat.mean_ns)),
        h('td', {}, fmtNs(r.lat.p50_ns)),
        h('td', { class: 'minor' }, fmtNs(r.lat.p95_ns)),
        h('td', { class: 'p99' }, fmtNs(r.lat.p99_ns)),
        h('td', { class: 'minor' }, fmtNs(r.lat.p999_ns)),
        h('td', {}, fmtNs(r.lat.max_ns)),
        h('td', {}, r.unc || r.pooled ? '' : h('b', {}, fmtRate(r.b.ops_per_sec))),
        hasModel ? h('td', { class: 'model', title: r.b.model ? `measured ÷ model = ${(r.b.ops_per_sec / r.b.model.predicted_ops_per_sec).toFixed(2)}; T_write ${fmtNs(r.b.model.t_write_ns)}, T_fsync ${fmtNs(r.b.model.t_fsync_ns)} (${r.b.model.t_fsync_source || 'probe'}); p99 on the ${r.b.model.p99_path} path` : null },
          r.b.model ? fmtRate(r.b.model.predicted_ops_per_sec) : '–') : null))));
    wrap.append(h('div', { class: 'table-wrap' }, table));
    wrap.append(conditions(benches.map((x) => x.b)));
    // Reads say how many found their key (hit_rate in the JSON).
    const hits = benches.filter((x) => x.b.hit_rate != null);
    if (hits.length) {
      wrap.append(h('p', { class: 'conditions' }, h('span', { class: 'cond-label' }, 'Hits: '),
        hits.map((x) => `${shortLabel(x.b, benches)} ${+(x.b.hit_rate * 100).toFixed(1)}%`).join(' · '),
        ' of reads found their key.'));
    }
    // The fdatasyncs' own distribution (fsync_p50_ns...): the median is
    // what a slow Put waits for; the mean can be dragged by one flush.
    const synced = benches.filter((x) => x.b.fsync_samples > 0);
    if (synced.length) {
      wrap.append(h('p', { class: 'conditions fsyncs' }, h('span', { class: 'cond-label' }, 'fdatasync: '),
        synced.map((x) => `${shortLabel(x.b, benches)} p50 ${fmtNs(x.b.fsync_p50_ns)}, p99 ${fmtNs(x.b.fsync_p99_ns)}, max ${fmtNs(x.b.fsync_max_ns)}, mean ${fmtNs(x.b.fsync_mean_ns)} (${fmtInt(x.b.fsync_samples)} timed)${x.b.model && x.b.model.measured_p99_path ? `; put p99 on the ${x.b.model.measured_p99_path} path (threshold ${fmtNs(x.b.model.p99_threshold_ns)})` : ''}`).join(' · ')));
    }
    // Open loop: utilization is the check, and units that never started
    // are censored samples no percentile above includes.
    const open = benches.filter((x) => x.b.rate);
    if (open.length) {
      wrap.append(h('p', { class: 'conditions open-loop' }, h('span', { class: 'cond-label' }, 'Open loop: '),
        open.map((x) => `${shortLabel(x.b, benches)} utilization ${sig(x.b.utilization || 0)} (rate × mean service time)`).join(' · ')));
      const behind = open.filter((x) => x.b.backlog_units > 0);
      if (behind.length) {
        wrap.append(h('p', { class: 'callout backlog', role: 'note' }, h('b', {}, 'Censored: '),
          behind.map((x) => `${shortLabel(x.b, benches)}: ${fmtInt(x.b.backlog_units)} of ${fmtInt(x.b.units + x.b.backlog_units)} units due never started`).join(' · '),
          '. Their latency, the worst of the run, is in no row above: the corrected percentiles are incomplete without them.'));
      }
    }

    const charts = h('div', { class: 'charts' });
    const spec = series.filter((x) => x.lat && x.lat.spectrum && x.lat.spectrum.length);
    if (spec.length) charts.append(figure('Latency percentile spectrum', spectrumChart(spec), 'x: percentile on a log scale of 1/(1−p), so each tick is one more nine; y: latency, log scale.'));
    const hist = series.filter((x) => x.lat && x.lat.histogram && x.lat.histogram.length);
    // The two-paths reading only fits writes under a policy that sometimes syncs.
    const syncedWrites = hist.some((x) => x.lat === (x.b.latency || {}).put && /^(batch|periodic|group|always)/.test(x.b.sync || ''));
    if (hist.length) charts.append(figure('Latency histogram', histogramChart(hist), `Share of operations per latency bucket (log-spaced).${syncedWrites ? ' Two humps mean two paths: the fast write and the one that waits for fdatasync.' : ''}`));
    const sweeps = new Map();
    for (const x of benches) {
      const key = `${x.line}`;
      if (!sweeps.has(key)) sweeps.set(key, []);
      sweeps.get(key).push(x.b);
    }
    const sweepSets = [...sweeps.values()].filter((bs) => bs.length > 1 && new Set(bs.map((b) => b.threads)).size > 1);
    if (sweepSets.length) charts.append(figure('Saturation curve', sweepChart(sweepSets), 'Throughput (line) and p99 latency (dashed, right axis) as threads increase.'));
    const batch = benches.map((x) => x.b).filter((b) => /^batch:\d+$/.test(b.sync || '') && b.model && b.model.predicted_ops_per_sec);
    if (new Set(batch.map((b) => b.sync)).size >= 2) charts.append(figure('Measured vs model', modelChart(batch), 'Dots: measured ops/s for each batch:N. Rings and dashes: what the model predicts for that run.'));
    const tl = benches.map((x, k) => ({ b: x.b, k, name: shortLabel(x.b, benches), pts: fullSeconds(x.b) })).filter((x) => x.pts.length > 1);
    if (tl.length) charts.append(figure('Throughput timeline', timelineChart(tl), 'ops/s in each second of the measured run.'));
    if (charts.childElementCount) wrap.append(charts);
    return wrap;
  }

  // The crash tables' columns a phone-width page leaves out: the summary
  // keeps acked, durable and both losses; corrupt stays in the summary.
  const CRASH_MINOR_COLS = new Set(['trials', 'recovered', 'corrupt']);

  // Columns a phone-width page leaves out so p99, max and ops/s fit beside
  // the run's name (app.css hides .minor below 560px).
  const MINOR_COLS = new Set(['count', 'p95', 'p99.9']);

  function conditions(bs) {
    const b = bs[0];
    const p = b.probe || {};
    const parts = [];
    if (p.fs || p.device) parts.push(`${p.fs || '?'} on ${p.device || '?'}${p.rotational === true ? ' (rotational)' : p.rotational === false ? ' (non-rotational)' : ''}`);
    if (p.write_ns) parts.push(`write ≈ ${fmtNs(p.write_ns)}`);
    if (p.fdatasync_ns) parts.push(`${p.sync_call || 'fdatasync'} ≈ ${fmtNs(p.fdatasync_ns)}`);
    if (p.cores) parts.push(`${p.cores} cores`);
    const w = [...new Set(bs.map((x) => x.workload))].join('/');
    parts.push(`${w}, ${fmtBytes(b.value_size)} values, ${fmtInt(b.keys)} keys ${b.dist || ''}`.trim());
    const thr = [...new Set(bs.map((x) => x.threads))];
    parts.push(`${thr.join(',')} thread${thr.length === 1 && thr[0] === 1 ? '' : 's'}`);
    // fsyncs_counted false: the engine cannot report its syncs (bbolt), so 0 means unknown.
    const fs = (x) => (x.fsyncs_counted === false ? 'n/a' : fmtInt(x.fsyncs));
    if (bs.some((x) => x.fsyncs)) parts.push(`${bs.map(fs).join(' / ')} fsyncs (mean ${bs.filter((x) => x.fsync_mean_ns).map((x) => fmtNs(x.fsync_mean_ns)).join(' / ') || '–'})`);
    const exact = bs.every((x) => Object.values(x.latency || {}).every((l) => l.exact));
    parts.push(exact ? 'exact percentiles' : 'percentiles from a histogram');
    if (p.go) parts.push(p.go);
    // The load average before each run: above the core count, something else was competing.
    const loads = bs.map((x) => x.load_avg).filter((x) => x > 0);
    if (loads.length) {
      const lo = Math.min(...loads).toFixed(2), hi = Math.max(...loads).toFixed(2);
      parts.push(`load ${lo === hi ? hi : `${lo}–${hi}`} before the run${loads.length > 1 ? 's' : ''}${Number(hi) > (p.cores || 1) ? ' (busy machine: expect noise)' : ''}`);
    }
    return h('p', { class: 'conditions' }, h('span', { class: 'cond-label' }, 'Conditions: '), parts.join(' · '));
  }

  function figure(title, svg, caption) {
    return h('figure', { class: 'chart' }, h('figcaption', {}, h('b', {}, title), h('span', {}, caption)), svg);
  }

  function kvTable(pairs) {
    return h('table', { class: 'kv' }, h('tbody', {}, pairs.filter((p) => p[1] != null && p[1] !== '').map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', {}, v)))));
  }

  function probeView(r) {
    const row = (name, x) => x ? h('tr', {}, h('th', { scope: 'row' }, name), h('td', {}, fmtInt(x.iterations)), h('td', {}, fmtNs(x.mean_ns)), h('td', {}, fmtNs(x.p50_ns)), h('td', { class: 'p99' }, fmtNs(x.p99_ns)), h('td', {}, fmtNs(x.max_ns)), h('td', {}, h('b', {}, fmtRate(x.ops_per_sec)))) : null;
    const t = h('table', { class: 'nums' },
      h('thead', {}, h('tr', {}, ['', 'count', 'mean', 'p50', 'p99', 'max', 'ops/s'].map((c) => h('th', { scope: 'col', class: c === 'p99' ? 'p99' : null }, c)))),
      h('tbody', {}, row('write (128 B)', r.write), row(`write + ${r.sync_call || 'fdatasync'}`, r.write_fdatasync)));
    const ratio = r.write && r.write_fdatasync && r.write.mean_ns ? r.write_fdatasync.mean_ns / r.write.mean_ns : null;
    return h('div', {}, h('div', { class: 'table-wrap' }, t),
      ratio ? h('p', { class: 'callout' }, 'A durable write costs ', h('b', {}, `${ratio >= 10 ? Math.round(ratio).toLocaleString('en-US') : ratio.toFixed(1)}×`), ' a plain write on this disk (compare the means).') : null,
      // The two figures the batch model and lesson 5's quizzes use, by their JSON names.
      r.write_ns != null && r.fdatasync_ns != null ? h('p', { class: 'callout' }, 'Model inputs: ', h('code', {}, 'write_ns'), ' = ', h('b', {}, fmtNs(r.write_ns)), ' (T_write, the mean write) · ', h('code', {}, 'fdatasync_ns'), ' = ', h('b', {}, fmtNs(r.fdatasync_ns)), ' (T_fsync, the mean write + fdatasync minus the mean write).') : null,
      h('p', { class: 'conditions' }, h('span', { class: 'cond-label' }, 'Conditions: '),
        [r.fs && `${r.fs} on ${r.device}${r.rotational ? ' (rotational)' : ' (non-rotational)'}`, r.cpu, r.cores && `${r.cores} cores`, r.ram_bytes && `${fmtBytes(r.ram_bytes)} RAM`, r.kernel, r.go, r.free_bytes && `${fmtBytes(r.free_bytes)} free`, r.dir && `dir ${r.dir}`].filter(Boolean).join(' · ')));
  }

  function modelView(r) {
    return kvTable([
      ['sync policy', r.sync],
      ['predicted throughput', r.predicted_ops_per_sec != null ? `${fmtRate(r.predicted_ops_per_sec)} ops/s` : null],
      ['T_write', fmtNs(r.t_write_ns)],
      ['T_fsync', `${fmtNs(r.t_fsync_ns)}${r.source ? ` (from ${r.source})` : ''}`],
      ['p99 lands on', r.p99_path ? `the ${r.p99_path} path` : null],
      ['loss window', r.loss_window_writes != null ? `${fmtInt(r.loss_window_writes)} writes${r.loss_window_ms ? ` / ${sig(r.loss_window_ms)} ms` : ''}${r.write_rate ? ` at ${fmtRate(r.write_rate)} writes/s (${r.rate_source === 'run' ? 'the rate a run measured' : 'the model\'s rate: no run measured one'})` : ''}` : null],
    ]);
  }

  // crashView shows the crash lines of a cell side by side: one row per line.
  function crashView(rs) {
    const okOf = (r) => (r.ok != null ? r.ok : !r.lost && !r.corrupt);
    const bad = rs.filter((r) => !okOf(r));
    const out = h('div', {},
      h('p', { class: `verdict ${bad.length ? 'bad' : 'ok'}` }, bad.length
        ? `The invariant broke for ${bad.map((r) => r.sync).join(', ')}: writes acknowledged as durable were missing after recovery, or data was corrupt.`
        : 'The invariant held in every trial: every write acknowledged as durable was recovered (durable lost = 0), nothing corrupt.'),
      h('div', { class: 'table-wrap' }, h('table', { class: 'nums' },
        h('thead', {}, h('tr', {}, ['sync', 'trials', 'acked', 'durable', 'recovered', 'durable lost', 'acked lost', 'corrupt'].map((c) => h('th', { scope: 'col', class: c === 'durable lost' ? 'p99' : CRASH_MINOR_COLS.has(c) ? 'minor' : null, title: {
          acked: 'writes acknowledged before the crash', durable: 'of those, acknowledged as durable', 'durable lost': 'durable-acknowledged writes missing after recovery: must be 0',
          'acked lost': 'acknowledged writes missing, durable or not: the loss window of the policy' }[c] || null }, c)))),
        h('tbody', {}, rs.map((r, k) => h('tr', { class: okOf(r) ? null : 'bad' },
          h('th', { scope: 'row' }, h('span', { class: `swatch c${k % 8}` }), r.sync),
          h('td', { class: 'minor' }, fmtInt(r.trials)), h('td', {}, fmtInt(r.writes)), h('td', {}, fmtInt(r.durable_acked)), h('td', { class: 'minor' }, fmtInt(r.recovered)),
          h('td', { class: 'p99' }, h('b', {}, fmtInt(r.lost))), h('td', {}, fmtInt(r.lost_acked)), h('td', { class: 'minor' }, fmtInt(r.corrupt))))))),
      h('p', { class: 'conditions' }, h('span', { class: 'cond-label' }, 'Crash: '), rs.some((r) => r.power)
        ? 'power loss is simulated on a crashable in-memory filesystem that forgets everything not yet synced.'
        : 'SIGKILL of a child process; the page cache survives a process kill, so a missing fsync does not show here.'));
    for (const r of rs) {
      if (!r.per_trial || !r.per_trial.length) continue;
      const cols = ['n', 'writes', 'durable_acked', 'recovered', 'lost', 'lost_acked', 'corrupt', 'crash_after_ms'].filter((c) => c in r.per_trial[0]);
      // The error column only when a trial has one: it is the widest.
      const errors = r.per_trial.some((t) => t.error);
      const minor = (c) => (CRASH_MINOR_COLS.has(c.replace(/_/g, ' ')) ? 'minor' : null);
      out.append(h('details', {}, h('summary', {}, `${r.sync}: per trial (${r.per_trial.length})`), h('div', { class: 'table-wrap' }, h('table', { class: 'nums' },
        h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col', class: minor(c) }, c === 'crash_after_ms' ? 'crash after' : c.replace(/_/g, ' '))), errors ? h('th', { scope: 'col' }, 'error') : null)),
        h('tbody', {}, r.per_trial.map((t) => h('tr', { class: t.lost ? 'bad' : null }, cols.map((c) => h('td', { class: minor(c) }, c === 'crash_after_ms' ? `${sig(t[c] || 0)} ms` : fmtInt(t[c]))), errors ? h('td', { class: 'error-cell' }, t.error || '') : null)))))));
    }
    return out;
  }

  // ---------- charts (SVG, our own)

  const W = 440, H = 250, M = { l: 62, r: 22, t: 12, b: 40 };

  function scale(d0, d1, r0, r1, log) {
    const f = log ? Math.log10 : (x) => x;
    const a = f(d0), b = f(d1);
    return (x) => r0 + (b === a ? 0.5 : (f(x) - a) / (b - a)) * (r1 - r0);
  }

  // logTicks gives 1-3-10 ticks, or only powers of ten (then every other
  // one) when the range is wide, so labels never crowd.
  function logTicks(lo, hi, max = 7) {
    const decades = (ms) => {
      const out = [];
      for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
        for (const m of ms) { const v = m * 10 ** e; if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v); }
      }
      return out;
    };
    let out = decades([1, 3]);
    if (out.length >= 2 && out.length <= max) return out;
    out = decades([1]);
    while (out.length > max) out = out.filter((_, i) => i % 2 === 0);
    return out.length >= 2 ? out : [lo, hi];
  }

  // fmtRateTick writes axis rates compactly: 800, 12k, 1.5M.
  function fmtRateTick(x) {
    if (x >= 1e6) return `${+(x / 1e6).toPrecision(3)}M`;
    if (x >= 1e3) return `${+(x / 1e3).toPrecision(3)}k`;
    return `${+x.toPrecision(3)}`;
  }

  // fmtTick is fmtNs without trailing zeros: 3 µs, 30 µs, 1.5 ms.
  function fmtTick(ns) { return fmtNs(ns).replace(/\.0+ /, ' ').replace(/(\.\d*?)0+ /, '$1 '); }

  function niceTicks(lo, hi, n = 5) {
    const span = hi - lo || 1;
    const step0 = span / n;
    const mag = 10 ** Math.floor(Math.log10(step0));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((st) => st >= step0);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(+v.toFixed(10));
    return out;
  }

  function frame(opts) {
    const { x, y, xticks, yticks, xfmt, yfmt, xlabel, ylabel, label } = opts;
    const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'svgchart', role: 'img', 'aria-label': label });
    const g = s('g', { class: 'axes' });
    for (const t of yticks) {
      g.append(s('line', { x1: M.l, x2: W - M.r, y1: y(t), y2: y(t), class: 'grid' }));
      g.append(s('text', { x: M.l - 6, y: y(t) + 4, 'text-anchor': 'end', text: yfmt(t) }));
    }
    for (const t of xticks) {
      g.append(s('line', { x1: x(t), x2: x(t), y1: M.t, y2: H - M.b, class: 'grid' }));
      g.append(s('text', { x: x(t), y: H - M.b + 16, 'text-anchor': 'middle', text: xfmt(t) }));
    }
    g.append(s('line', { x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b, class: 'axis' }));
    g.append(s('line', { x1: M.l, x2: M.l, y1: M.t, y2: H - M.b, class: 'axis' }));
    if (xlabel) g.append(s('text', { x: (M.l + W - M.r) / 2, y: H - 6, 'text-anchor': 'middle', class: 'label', text: xlabel }));
    if (ylabel) g.append(s('text', { x: 12, y: (M.t + H - M.b) / 2, 'text-anchor': 'middle', class: 'label', transform: `rotate(-90 12 ${(M.t + H - M.b) / 2})`, text: ylabel }));
    svg.append(g);
    return svg;
  }

  function path(pts) { return pts.map((p, i) => `${i ? 'L' : 'M'}${p[0].toFixed(1)},${p[1].toFixed(1)}`).join(''); }

  function legend(items) {
    return h('div', { class: 'legend' }, items.map((it) => h('span', {}, h('span', { class: `swatch c${it.k % 8}${it.dashed ? ' dashed' : ''}` }), it.name)));
  }

  function withLegend(svg, items) { return h('div', { class: 'chart-body' }, svg, items.length > 1 || items.some((i) => i.dashed) ? legend(items) : null); }

  // nines maps a percentile to the log axis: 0 -> 1, 90 -> 10, 99 -> 100, ...
  const nines = (p) => 1 / Math.max(1 - p / 100, 1e-4);

  function spectrumChart(series) {
    let lo = Infinity, hi = 0;
    for (const x of series) for (const pt of x.lat.spectrum) if (pt.p <= 99.99 && pt.ns > 0) { lo = Math.min(lo, pt.ns); hi = Math.max(hi, pt.ns); }
    if (!isFinite(lo)) { lo = 1; hi = 10; }
    lo = lo / 1.3; hi = hi * 1.3;
    const x = scale(1, 1e4, M.l, W - M.r, true), y = scale(lo, hi, H - M.b, M.t, true);
    const svg = frame({ x, y, xticks: [1, 2, 10, 100, 1000, 1e4], yticks: logTicks(lo, hi), xfmt: (t) => ({ 1: 'p0', 2: 'p50', 10: 'p90', 100: 'p99', 1000: 'p99.9', 10000: 'p99.99' })[t], yfmt: fmtTick, xlabel: 'percentile', ylabel: 'latency', label: 'Latency percentile spectrum' });
    for (const sr of series) {
      const pts = sr.lat.spectrum.filter((pt) => pt.p <= 99.99 && pt.ns > 0).map((pt) => [x(nines(pt.p)), y(pt.ns)]);
      svg.append(s('path', { d: path(pts), class: `line c${sr.k % 8}${sr.dashed ? ' dashed' : ''}` }));
      for (const pt of sr.lat.spectrum) {
        if (pt.p === 99 || pt.p === 50) svg.append(s('circle', { cx: x(nines(pt.p)), cy: y(Math.max(pt.ns, lo)), r: 3.2, class: `dot c${sr.k % 8}` }, s('title', { text: `${sr.name}: p${pt.p} = ${fmtNs(pt.ns)}` })));
      }
    }
    return withLegend(svg, series);
  }

  function histogramChart(series) {
    let lo = Infinity, hi = 0, top = 0;
    const norm = series.map((sr) => {
      const total = sr.lat.histogram.reduce((a, b) => a + b.count, 0) || 1;
      let prev = null;
      const bins = sr.lat.histogram.map((b) => {
        const le = Math.max(b.le_ns, 1);
        const from = prev == null ? le / 1.58 : prev;
        prev = le;
        return { from, to: le, f: b.count / total };
      });
      for (const b of bins) { lo = Math.min(lo, b.from); hi = Math.max(hi, b.to); top = Math.max(top, b.f); }
      return { sr, bins };
    });
    // A log y axis: a slow path taken by 1 op in 100 is still a visible hump.
    let floor = 1;
    for (const { bins } of norm) for (const b of bins) if (b.f > 0) floor = Math.min(floor, b.f);
    floor = Math.max(floor / 2, 1e-5);
    const x = scale(lo, hi, M.l, W - M.r, true), y = scale(floor, 1, H - M.b, M.t, true);
    const pct = (t) => (t >= 0.01 ? `${Math.round(t * 100)}%` : `${+(t * 100).toPrecision(1)}%`);
    const svg = frame({ x, y, xticks: logTicks(lo, hi, 5), yticks: logTicks(floor, 1, 5), xfmt: fmtTick, yfmt: pct, xlabel: 'latency (log scale)', ylabel: 'share of ops (log)', label: 'Latency histogram' });
    for (const { sr, bins } of norm) {
      const pts = [];
      for (const b of bins) { const v = y(Math.max(b.f, floor)); pts.push([x(b.from), v], [x(b.to), v]); }
      if (!pts.length) continue;
      const base = y(floor).toFixed(1);
      const d = `M${pts[0][0].toFixed(1)},${base}` + pts.map((p) => `L${p[0].toFixed(1)},${p[1].toFixed(1)}`).join('') + `L${pts[pts.length - 1][0].toFixed(1)},${base}Z`;
      svg.append(s('path', { d, class: `area c${sr.k % 8}${sr.dashed ? ' dashed' : ''}` }));
    }
    // Beyond three runs the tinted areas stack into one dark block: draw outlines only.
    if (norm.length > 3) svg.classList.add('outlines');
    return withLegend(svg, series);
  }

  // fullSeconds is the run's timeline without a last bucket that covers
  // under a quarter of a second: the few ops that finished just after the
  // deadline, whose rate would draw a cliff that never happened.
  function fullSeconds(b) {
    const tl = b.timeline || [];
    const p = tl[tl.length - 1];
    if (p && b.wall_seconds > 0 && b.wall_seconds - (p.second - 1) < 0.25) return tl.slice(0, -1);
    return tl;
  }

  function timelineChart(tl) {
    let hi = 0, last = 1;
    for (const t of tl) for (const p of t.pts) { hi = Math.max(hi, p.ops_per_sec); last = Math.max(last, p.second); }
    const x = scale(0, last, M.l, W - M.r, false), y = scale(0, hi * 1.1 || 1, H - M.b, M.t, false);
    const svg = frame({ x, y, xticks: niceTicks(0, last, Math.min(last, 8)), yticks: niceTicks(0, hi * 1.1 || 1, 4), xfmt: (t) => `${t}s`, yfmt: fmtRateTick, xlabel: 'second of the run', ylabel: 'ops/s', label: 'Throughput timeline' });
    for (const t of tl) {
      const pts = [];
      for (const p of t.pts) { pts.push([x(p.second - 1), y(p.ops_per_sec)], [x(p.second), y(p.ops_per_sec)]); }
      svg.append(s('path', { d: path(pts), class: `line c${t.k % 8}` }));
    }
    return withLegend(svg, tl);
  }

  function sweepChart(sets) {
    let maxT = 1, hiR = 0, loL = Infinity, hiL = 0;
    const lat = (b) => { const l = b.latency && (b.latency.put || b.latency.get || Object.values(b.latency)[0]); return l ? l.p99_ns : null; };
    for (const bs of sets) for (const b of bs) { maxT = Math.max(maxT, b.threads); hiR = Math.max(hiR, b.ops_per_sec); const l = lat(b); if (l > 0) { loL = Math.min(loL, l); hiL = Math.max(hiL, l); } }
    if (!isFinite(loL)) { loL = 1; hiL = 10; }
    const x = scale(1, maxT, M.l, W - M.r - 46, maxT > 2), y = scale(0, hiR * 1.1 || 1, H - M.b, M.t, false);
    const y2 = scale(loL / 1.3, hiL * 1.3, H - M.b, M.t, true);
    const ths = [...new Set(sets.flat().map((b) => b.threads))].sort((a, b) => a - b);
    const svg = frame({ x, y, xticks: ths, yticks: niceTicks(0, hiR * 1.1 || 1, 4), xfmt: String, yfmt: fmtRateTick, xlabel: 'threads', ylabel: 'ops/s', label: 'Saturation curve' });
    for (const t of logTicks(loL / 1.3, hiL * 1.3, 5)) svg.append(s('text', { x: W - M.r - 40, y: y2(t) + 4, class: 'axis2', text: fmtTick(t) }));
    const items = [];
    sets.forEach((bs, k) => {
      const sorted = [...bs].sort((a, b) => a.threads - b.threads);
      svg.append(s('path', { d: path(sorted.map((b) => [x(b.threads), y(b.ops_per_sec)])), class: `line c${k % 8}` }));
      for (const b of sorted) svg.append(s('circle', { cx: x(b.threads), cy: y(b.ops_per_sec), r: 3.5, class: `dot c${k % 8}` }, s('title', { text: `${b.threads} threads: ${fmtRate(b.ops_per_sec)} ops/s, p99 ${fmtNs(lat(b))}` })));
      const lp = sorted.filter((b) => lat(b) > 0).map((b) => [x(b.threads), y2(lat(b))]);
      if (lp.length) svg.append(s('path', { d: path(lp), class: `line dashed c${k % 8}` }));
      items.push({ name: `${sorted[0].engine} ${sorted[0].sync} ops/s`, k }, { name: 'p99 (right axis)', k, dashed: true });
    });
    return withLegend(svg, items);
  }

  function modelChart(bs) {
    const pts = bs.map((b) => ({ n: +b.sync.split(':')[1], b })).sort((a, b) => a.n - b.n);
    const ns = pts.map((p) => p.n);
    const lo = Math.min(...ns), hiN = Math.max(...ns);
    let hi = 0;
    for (const p of pts) hi = Math.max(hi, p.b.ops_per_sec, p.b.model.predicted_ops_per_sec);
    const x = scale(lo / 1.6, hiN * 1.6, M.l, W - M.r, true), y = scale(0, hi * 1.12, H - M.b, M.t, false);
    const svg = frame({ x, y, xticks: ns, yticks: niceTicks(0, hi * 1.12, 4), xfmt: (t) => `batch:${t}`, yfmt: fmtRateTick, xlabel: 'N: fdatasync every N puts (log scale)', ylabel: 'ops/s', label: 'Measured vs model' });
    svg.append(s('path', { d: path(pts.map((p) => [x(p.n), y(p.b.model.predicted_ops_per_sec)])), class: 'line dashed c1' }));
    for (const p of pts) {
      const m = p.b.model;
      svg.append(s('circle', { cx: x(p.n), cy: y(m.predicted_ops_per_sec), r: 4, class: 'ring c1' }, s('title', { text: `batch:${p.n}: model ${fmtRate(m.predicted_ops_per_sec)} ops/s from T_write ${fmtNs(m.t_write_ns)}, T_fsync ${fmtNs(m.t_fsync_ns)}` })));
      svg.append(s('circle', { cx: x(p.n), cy: y(p.b.ops_per_sec), r: 4.5, class: 'dot c0' }, s('title', { text: `batch:${p.n}: measured ${fmtRate(p.b.ops_per_sec)} ops/s (${(p.b.ops_per_sec / m.predicted_ops_per_sec).toFixed(2)}× the model)` })));
    }
    return withLegend(svg, [{ name: 'measured', k: 0 }, { name: 'model: 1 / (T_write + T_fsync/N), each run\'s own T_write and T_fsync', k: 1, dashed: true }]);
  }

  function sparkline(pts) {
    const w = 240, hh = 44;
    const svg = s('svg', { viewBox: `0 0 ${w} ${hh}`, class: 'spark', role: 'img', 'aria-label': 'ops/s while running' });
    if (pts.length < 1) return svg;
    const maxX = Math.max(...pts.map((p) => p[0]), 1), maxY = Math.max(...pts.map((p) => p[1]), 1);
    const xy = [[0, hh - 2], ...pts.map((p) => [(p[0] / maxX) * (w - 4) + 2, hh - 2 - (p[1] / maxY) * (hh - 8)])];
    svg.append(s('path', { d: path(xy), class: 'line c0' }));
    return svg;
  }

  // ---------- quizzes

  // Predictions (quizzes with predict: yes) are kept with the progress:
  // p.predictions[id] = { answer, at }. The quiz's cell stays locked until
  // every predicting quiz on it has one; the cell's next results grade it.
  const predictQuizzes = (cell) => $$(`.quiz[data-predict][data-cell="${cell}"]`);
  function prediction(id) { return (progress(lessonSlug()).predictions || {})[id] || null; }
  function setPrediction(id, answer) {
    updateProgress(lessonSlug(), (p) => { p.predictions = p.predictions || {}; p.predictions[id] = { answer, at: Date.now() }; });
  }
  function relock(cell) {
    const c = window.kvlab && window.kvlab.cells.find((x) => x.id === cell);
    if (c) c.applyLock();
  }

  function setupQuiz(el) {
    const id = el.dataset.quiz;
    const form = $('.quiz-form', el);
    const fb = $('.quiz-feedback', el);
    const btn = $('.check', el);
    const choice = !!el.querySelector('fieldset');
    const predict = el.dataset.predict != null && !!el.dataset.cell;
    const prev = progress(lessonSlug()).quizzes[id];
    const waiting = (p) => h('p', { class: 'prediction-kept' }, 'Your prediction: ', h('b', {}, choice ? choiceText(el, p.answer) : p.answer), '. Now run the cell ', h('a', { href: `#cell-${el.dataset.cell}` }, el.dataset.cell), ' to measure it.');
    if (predict) {
      el.classList.add('is-predict');
      $('.quiz-source', el).replaceChildren('Predict first: the cell ', h('a', { href: `#cell-${el.dataset.cell}` }, el.dataset.cell), ' stays locked until you do, and your run grades the prediction.');
      const p = prediction(id);
      btn.textContent = p ? 'Check' : 'Lock in prediction';
      if (p && !(prev && prev.prediction)) fb.replaceChildren(waiting(p));
    }
    if (prev) fb.replaceChildren(h('p', { class: `quiz-last ${prev.correct ? 'ok' : 'bad'}` }, `Last time you ${prev.prediction ? 'predicted' : 'answered'} ${prev.answer}: ${prev.correct ? 'right' : choice ? 'wrong' : 'not within range'}${prev.off ? ` (${prev.off})` : ''}.`));

    // check sends one answer and shows the verdict; asPrediction says it
    // was entered before the cell's results existed.
    async function check(answer, asPrediction) {
      const req = { lesson: lessonSlug(), quiz: id, answer };
      if (asPrediction) req.prediction = true;
      if (el.dataset.cell) {
        const last = store.json(resultsKey(el.dataset.cell), null);
        // The server grades from the runs it recorded: the page sends their ids, never numbers.
        if (!last || !last.lines || !last.lines.every((l) => l.run_id)) { fb.replaceChildren(h('p', { class: 'error' }, 'Run the cell ', h('a', { href: `#cell-${el.dataset.cell}` }, el.dataset.cell), ' first: this quiz is checked against your own measurement, as this server recorded it.')); return; }
        req.run_ids = last.lines.map((l) => l.run_id);
        req.browser = browserID();
      } else {
        if (needToken() && !token(true)) { fb.replaceChildren(h('p', { class: 'error' }, 'This server needs the instructor token to measure.')); return; }
        req.token = token(false);
        req.ticket = quizTicket();
        req.browser = browserID();
        fb.replaceChildren(measuringNote(' Measuring on this server\'s disk (waits its turn in the queue)…'));
      }
      btn.disabled = true;
      // The reply comes when the measurement is done; meanwhile the page
      // asks for the run's place in the queue by the request's ticket.
      let polling = null;
      if (req.ticket) {
        polling = setInterval(async () => {
          try {
            const pr = await fetch(`/api/quiz/queue?ticket=${encodeURIComponent(req.ticket)}`);
            if (!pr.ok || !polling) return;
            const p = await pr.json();
            if (!polling) return; // the verdict is already shown
            fb.replaceChildren(measuringNote(p.running || p.position === 0
              ? ' Measuring on this server\'s disk…'
              : ` Waiting to measure on this server's disk · ${p.position} run${p.position === 1 ? '' : 's'} ahead in the queue…`));
          } catch (_) { /* the POST reports a lost server */ }
        }, 1000);
      }
      try {
        const resp = await fetch('/api/quiz', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(req) });
        const r = await resp.json();
        if (!resp.ok) { fb.replaceChildren(h('p', { class: 'error' }, r.error || `HTTP ${resp.status}`)); return; }
        fb.replaceChildren(verdict(r, choice));
        updateProgress(lessonSlug(), (p) => { p.quizzes[id] = { correct: r.correct, answer: `${r.answer}`, at: Date.now(), prediction: !!r.predicted, off: r.off || '' }; });
      } catch (err) {
        fb.replaceChildren(h('p', { class: 'error' }, `Could not reach labserver: ${err.message}`));
      } finally {
        if (polling) clearInterval(polling);
        polling = null;
        btn.disabled = false;
      }
    }

    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const data = new FormData(form);
      const answer = String(data.get('answer') || '').trim();
      if (!answer) { fb.replaceChildren(h('p', { class: 'error' }, choice ? 'Pick one of the choices.' : 'Type a number first.')); return; }
      if (predict && !prediction(id)) {
        // The first answer is the prediction: stored in the server's
        // record before the cell can run, kept, and graded by the cell's
        // next run, which it unlocks.
        try { await savePrediction(id, answer); } catch (err) { fb.replaceChildren(h('p', { class: 'error' }, `Your prediction was not recorded: ${err.message}`)); return; }
        setPrediction(id, answer);
        btn.textContent = 'Check';
        fb.replaceChildren(waiting(prediction(id)));
        relock(el.dataset.cell);
        return;
      }
      await check(answer, false);
    });
    if (predict) {
      document.addEventListener('kvlab:measured', (e) => {
        const p = prediction(id);
        if (e.detail.cell === el.dataset.cell && p) check(p.answer, true);
      });
    }
  }

  // choiceText is the text of choice n (1-based) of a choice quiz.
  function choiceText(el, n) {
    const input = el.querySelector(`input[name=answer][value="${n}"]`);
    return input ? input.parentElement.textContent.trim() : n;
  }

  // verdict renders a quiz reply: the answer or prediction, the measured
  // value, how far off, where it came from, and the explanation.
  function verdict(r, choice) {
    const unit = r.unit && !choice ? ` ${r.unit}` : '';
    const head = r.predicted
      ? (r.correct ? '✓ Your prediction holds.' : choice ? '✗ Your prediction was wrong.' : '✗ Your prediction was off.')
      : (r.correct ? '✓ Right.' : choice ? '✗ Not what your run shows.' : '✗ Not within range.');
    return h('div', { class: `verdict ${r.correct ? 'ok' : 'bad'}${r.predicted ? ' predicted' : ''}` },
      h('p', { class: 'verdict-head' }, head),
      h('table', { class: 'kv' }, h('tbody', {},
        h('tr', {}, h('th', { scope: 'row' }, r.predicted ? 'your prediction' : 'your answer'), h('td', {}, `${r.answer}${unit}`)),
        h('tr', {}, h('th', { scope: 'row' }, 'measured'), h('td', {}, h('b', {}, `${r.want}${unit}`), r.range && r.low !== r.high ? ` (accepted ${r.range}${unit})` : '')),
        r.off && !choice ? h('tr', { class: 'off' }, h('th', { scope: 'row' }, 'off by'), h('td', {}, r.off)) : null,
        r.shown ? h('tr', {}, h('th', { scope: 'row' }, 'from'), h('td', {}, r.shown)) : null)),
      r.explain_html ? h('p', { class: 'explain' }, safeInline(r.explain_html)) : null);
  }

  function measuringNote(text) {
    return h('p', { class: 'measuring' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
  }

  // quizTicket names one quiz request for GET /api/quiz/queue.
  function quizTicket() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  }

  // ---------- TOC highlight

  function setupTOC() {
    const links = new Map($$('.toc a[href^="#"]').map((a) => [decodeURIComponent(a.getAttribute('href').slice(1)), a]));
    if (!links.size || !('IntersectionObserver' in window)) return;
    const io = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        for (const a of links.values()) a.classList.remove('active');
        const a = links.get(e.target.id);
        if (a) a.classList.add('active');
      }
    }, { rootMargin: '0px 0px -70% 0px' });
    for (const id of links.keys()) { const el = document.getElementById(id); if (el) io.observe(el); }
  }

  // ---------- a run's permalink page

  function setupRunPage() {
    const data = $('#run-data');
    const out = $('.run-result .cell-out');
    if (!data || !out) return;
    let run;
    try { run = JSON.parse(data.textContent); } catch (err) { out.replaceChildren(h('div', { class: 'error' }, `The run's JSON does not parse: ${err.message}`)); return; }
    out.replaceChildren(renderLines([{ spec: run.spec, result: run.result }]));
  }

  // ---------- start

  document.addEventListener('DOMContentLoaded', () => {
    setupTheme();
    if (document.body.classList.contains('index')) setupIndex();
    if (document.body.classList.contains('run-page')) setupRunPage();
    if (document.body.classList.contains('lesson')) {
      updateProgress(lessonSlug(), (p) => { p.visited = true; });
      const sock = new Socket();
      window.kvlab = { cells: $$('.cell').map((el) => new Cell(el, sock)), socket: sock, browser: browserID, savePrediction };
      $$('.quiz').forEach(setupQuiz);
      for (const c of window.kvlab.cells) c.applyLock();
      setupTOC();
    }
  });
})();
