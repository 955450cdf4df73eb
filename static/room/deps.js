// deps.js: everything the room's modules take from the lesson page's
// shared modules, in one place.
//
// TEMPORARY until the page script is split into ES modules (dom.js,
// results.js): then this file only re-exports from them, e.g.
//   export { h, svg, store, randomID, fmtNs, fmtInt, fmtRate } from '../dom.js';
//   export { renderLines } from '../results.js';
// Nothing below may grow: room code adds its own helpers in its own files.

export function h(tag, attrs, ...kids) {
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

export function svg(desc) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', desc.tag);
  for (const [k, v] of Object.entries(desc.attrs || {})) {
    if (v == null) continue;
    if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v);
  }
  for (const kid of desc.kids || []) el.append(svg(kid));
  return el;
}

export const store = {
  get(k) { try { return localStorage.getItem(k); } catch { return null; } },
  set(k, v) { try { localStorage.setItem(k, v); } catch { /* full or disabled */ } },
  del(k) { try { localStorage.removeItem(k); } catch { /* disabled */ } },
  json(k, dflt) { try { const v = JSON.parse(this.get(k)); return v == null ? dflt : v; } catch { return dflt; } },
  setJSON(k, v) { this.set(k, JSON.stringify(v)); },
};

export function randomID() {
  if (globalThis.crypto && crypto.randomUUID) return crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

export function fmtNs(ns) {
  if (ns == null || !isFinite(ns)) return '–';
  if (ns < 1e3) return `${ns.toFixed(0)} ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(1)} µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(2)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

export function fmtInt(x) { return x == null || !isFinite(x) ? '–' : Math.round(x).toLocaleString('en-US'); }

export function fmtRate(x) { return fmtInt(x); }

export function renderLines(lines) {
  return h('pre', { class: 'json' }, JSON.stringify(lines.map((l) => l.result), null, 1));
}
