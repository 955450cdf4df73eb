// dom.js: what every kvlab page module shares: the element builders, the
// localStorage wrapper, and numbers and durations written the way the
// course writes them.
//
// Nothing here touches the page when the module loads, so Node can import
// it (static/testdata/*.test.mjs test the formatting).

const SVGNS = 'http://www.w3.org/2000/svg';

export const $ = (sel, el = document) => el.querySelector(sel);
export const $$ = (sel, el = document) => Array.from(el.querySelectorAll(sel));

// h builds an HTML element: attrs 'class' and 'text' set className and
// textContent, 'onX' adds a listener for event X, true is an empty
// attribute, and null, undefined and false leave the attribute out. Kids
// are nodes or text; null and false are skipped; arrays are flattened.
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

// svg turns a markup description from charts.js ({tag, attrs, kids},
// attrs.text being the text content) into SVG elements.
export function svg(desc) {
  const el = document.createElementNS(SVGNS, desc.tag);
  for (const [k, v] of Object.entries(desc.attrs || {})) {
    if (v == null) continue;
    if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v);
  }
  for (const kid of desc.kids || []) el.append(svg(kid));
  return el;
}

// Quiz explanations arrive as HTML that the server rendered from the
// lesson's Markdown. They never go into innerHTML: the HTML is parsed into
// an inert document (nothing in it runs or loads), and only text and a
// few inline elements are copied into the page; a link keeps its target
// only when it is http(s), relative or a #fragment.
const INLINE = new Set(['A', 'CODE', 'EM', 'STRONG', 'SUB', 'SUP', 'BR', 'DEL', 'KBD']);
const DROP = new Set(['SCRIPT', 'STYLE', 'TEMPLATE', 'IFRAME', 'OBJECT', 'EMBED', 'svg', 'math']);

export function safeInline(html) {
  const doc = new DOMParser().parseFromString(`<!doctype html><body>${html}`, 'text/html');
  return copyInline(doc.body);
}

function copyInline(from) {
  const out = [];
  for (const n of from.childNodes) {
    if (n.nodeType === Node.TEXT_NODE) { out.push(document.createTextNode(n.data)); continue; }
    if (n.nodeType !== Node.ELEMENT_NODE || DROP.has(n.tagName)) continue;
    const kids = copyInline(n);
    if (!INLINE.has(n.tagName)) { out.push(...kids); continue; }
    const el = document.createElement(n.tagName.toLowerCase());
    const href = n.tagName === 'A' ? (n.getAttribute('href') || '') : '';
    if (href && (/^https?:/i.test(href) || !/^[a-z][a-z0-9+.-]*:/i.test(href.trim()))) el.setAttribute('href', href);
    el.append(...kids);
    out.push(el);
  }
  return out;
}

// store is localStorage that never throws: a full or disabled storage
// reads as empty and drops writes (the page then forgets on reload).
export const store = {
  get(k) { try { return localStorage.getItem(k); } catch { return null; } },
  set(k, v) { try { localStorage.setItem(k, v); } catch { /* full or disabled */ } },
  del(k) { try { localStorage.removeItem(k); } catch { /* disabled */ } },
  json(k, dflt) { try { const v = JSON.parse(this.get(k)); return v == null ? dflt : v; } catch { return dflt; } },
  setJSON(k, v) { this.set(k, JSON.stringify(v)); },
};

// randomID is a fresh random id (a UUID where the browser has one).
export function randomID() {
  if (globalThis.crypto && crypto.randomUUID) return crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

// ---------- numbers the way the course writes them

// fixed writes x with d digits after the point the way Go's
// strconv.FormatFloat(x, 'f', d, 64) does: from x's exact binary value,
// an exact tie rounded to even. (toFixed alone rounds a tie up: 1.25 to
// one digit is "1.3" there and "1.2" in Go.)
export function fixed(x, d) {
  const a = Math.abs(x);
  if (!isFinite(a) || a >= 1e21) return x.toFixed(d);
  const [int, frac] = a.toFixed(100).split('.');
  const kept = int + frac.slice(0, d);
  const next = frac[d], rest = frac.slice(d + 1);
  const up = next > '5' || (next === '5' && (/[1-9]/.test(rest) || Number(kept[kept.length - 1]) % 2 === 1));
  const digits = (BigInt(kept) + (up ? 1n : 0n)).toString().padStart(d + 1, '0');
  const out = d ? `${digits.slice(0, -d)}.${digits.slice(-d)}` : digits;
  return (x < 0 || Object.is(x, -0) ? '-' : '') + out;
}

// fmtNs writes a duration given in nanoseconds with the precision the
// harness's tables use (calc.FormatNs in harness/calc; harness/testdata/durations.json
// holds the cases the Go and JavaScript formatters share): 850 ns,
// 2.6 µs, 223.7 µs, 6.68 ms, 1.81 s. null, NaN and ±Infinity are '–'.
export function fmtNs(ns) {
  if (ns == null || !isFinite(ns)) return '–';
  if (ns < 1e3) return `${fixed(ns, 0)} ns`;
  if (ns < 1e6) return `${fixed(ns / 1e3, 1)} µs`;
  if (ns < 1e9) return `${fixed(ns / 1e6, 2)} ms`;
  return `${fixed(ns / 1e9, 2)} s`;
}

// sig writes x (1 <= x < 1000 in use) with three significant digits.
export function sig(x) { return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2); }

export function fmtInt(x) { return x == null || !isFinite(x) ? '–' : Math.round(x).toLocaleString('en-US'); }

// fmtRate writes an ops/s figure: whole numbers, millions from 10 M up.
export function fmtRate(x) {
  if (x == null || !isFinite(x)) return '–';
  if (x >= 1e7) return `${sig(x / 1e6)} M`;
  return fmtInt(x);
}

export function fmtBytes(b) {
  if (b == null) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return `${i ? sig(b) : b} ${u[i]}`;
}

// fmtMs writes a wall time the page measured itself (an exercise's run).
export function fmtMs(ms) { return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`; }

// parseNumber reads a typed number the way the server's quiz.ParseNumber
// does (both are held to internal/quiz/testdata/numbers.json): digits
// grouped with spaces, '_' or commas, '.' or ',' as the decimal separator
// where a comma can only be one, an exponent, then optionally unit (or x,
// ×). It returns {value} or {error}, the error saying how to write it:
// "1,234" could be either 1234 or 1.234 and is refused.
export function parseNumber(s, unit = '') {
  const bad = (msg) => ({ error: `${JSON.stringify(s)} ${msg}` });
  const notANumber = () => bad('is not a number (write e.g. 12.5, 0,95 or 12500)');
  const grouping = () => bad('is not a number: group digits in threes (12,500,000 or 12 500 000) or write them without separators; the decimal separator may be . or ,');
  let t = String(s).trim();
  if (unit && t.endsWith(unit)) t = t.slice(0, -unit.length).trim();
  if (t.endsWith('x')) t = t.slice(0, -1);
  if (t.endsWith('×')) t = t.slice(0, -1);
  t = t.trim().replace(/[_ \u00a0\u202f]/g, '');
  const e = t.search(/[eE]/);
  const mant = e >= 0 ? t.slice(0, e) : t;
  const exp = e >= 0 ? t.slice(e) : '';
  const commas = mant.split(',').length - 1;
  const grouped = /^[+-]?[0-9]{1,3}(,[0-9]{3})+$/;
  if (commas > 0) {
    const dot = mant.lastIndexOf('.');
    const last = mant.lastIndexOf(',');
    if (dot > last) {
      if (!grouped.test(mant.slice(0, dot))) return grouping();
      t = mant.replaceAll(',', '') + exp;
    } else if (dot >= 0) {
      const whole = mant.slice(0, last).replaceAll('.', ',');
      if (commas > 1 || !grouped.test(whole)) return grouping();
      t = `${whole.replaceAll(',', '')}.${mant.slice(last + 1)}${exp}`;
    } else if (commas > 1) {
      if (!grouped.test(mant)) return grouping();
      t = mant.replaceAll(',', '') + exp;
    } else {
      const whole = mant.slice(0, last);
      const frac = mant.slice(last + 1);
      const digits = whole.replace(/^[+-]+/, '');
      if (frac.length !== 3 || digits === '' || digits.startsWith('0') || digits.length > 3) {
        t = `${whole}.${frac}${exp}`;
      } else {
        return bad(`could mean ${whole}${frac}${exp} or ${whole}.${frac}${exp}: write ${whole}${frac}${exp} (no comma) for the whole number, or ${whole}.${frac}${exp} with a point for the decimal`);
      }
    }
  }
  if (!/^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/.test(t)) return notANumber();
  const value = Number(t);
  return isFinite(value) ? { value } : notANumber();
}

// specCode is a run line as inline code that a narrow column wraps only
// between its pieces: the command, then each flag with its value
// ("-value-size 128"), each kept on one line (class nw), as the server's
// pages do (web.CodeHTML).
export function specCode(spec) {
  const pieces = [];
  for (const f of String(spec || '').split(/\s+/).filter(Boolean)) {
    const n = pieces.length;
    if (n && !f.startsWith('-') && pieces[n - 1].startsWith('-') && !pieces[n - 1].includes(' ')) pieces[n - 1] += ` ${f}`;
    else pieces.push(f);
  }
  return h('code', {}, ...pieces.flatMap((p, i) => [i ? ' ' : null, h('span', { class: 'nw' }, p)]));
}
