// charts.js: the result charts, drawn by pure functions. Each takes
// figures from a run's JSON and returns {svg, legend}: svg is a markup
// description of the chart ({tag, attrs, kids}, attrs.text being the
// text; dom.js's svg() builds the elements) and legend lists the series
// as {name, k, dashed}, k picking the colour class c0..c7. Nothing here
// reads or writes the page, so Node tests every chart, with empty and
// single-point series too (static/testdata/charts.test.mjs): no NaN ever
// reaches an attribute.

import { fmtNs, fmtRate } from './dom.js';

// The chart's viewBox and its margins (left, right, top, bottom).
export const W = 440, H = 250;
const M = { l: 62, r: 22, t: 12, b: 40 };

// s describes one SVG element.
function s(tag, attrs, ...kids) { return { tag, attrs: attrs || {}, kids: kids.flat().filter(Boolean) }; }

// scale maps the domain [d0, d1] onto [r0, r1], linearly or on log10. An
// empty or unusable domain maps everything to the middle; a value the
// scale cannot place (0 on a log scale) goes to r0, the axis.
export function scale(d0, d1, r0, r1, log) {
  const f = log ? Math.log10 : (x) => x;
  const a = f(d0), b = f(d1);
  if (!isFinite(a) || !isFinite(b) || a === b) return () => (r0 + r1) / 2;
  return (x) => {
    const v = f(x);
    return isFinite(v) ? r0 + ((v - a) / (b - a)) * (r1 - r0) : r0;
  };
}

// logTicks gives 1-3-10 ticks, or only powers of ten (then every other
// one) when the range is wide, so labels never crowd. It needs
// 0 < lo <= hi; anything else has no ticks.
export function logTicks(lo, hi, max = 7) {
  if (!(lo > 0) || !(hi >= lo) || !isFinite(hi)) return [];
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

// niceTicks gives about n ticks at 1, 2, 2.5 or 5 times a power of ten.
// Any finite lo <= hi gives at most about 2n+1 ticks: an empty range is
// widened by its own size, the span is taken in halves so it cannot
// overflow, and a step too small to move a tick gives just the ends.
export function niceTicks(lo, hi, n = 5) {
  if (!isFinite(lo) || !isFinite(hi) || hi < lo || !(n > 0)) return [];
  const step0 = ((hi / 2 - lo / 2) || Math.abs(hi / 2) || 0.5) / n * 2;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((st) => st >= step0);
  const start = Math.ceil(lo / step) * step;
  if (!(step > 0) || !isFinite(step) || !isFinite(start) || start + step === start) return lo === hi ? [lo] : [lo, hi];
  const out = [];
  for (let i = 0, v = start; i <= 2 * n + 2 && v <= hi + 1e-9; i++, v = start + i * step) out.push(+v.toFixed(10));
  return out;
}

// fmtRateTick writes axis rates compactly: 800, 12k, 1.5M.
export function fmtRateTick(x) {
  if (x >= 1e6) return `${+(x / 1e6).toPrecision(3)}M`;
  if (x >= 1e3) return `${+(x / 1e3).toPrecision(3)}k`;
  return `${+x.toPrecision(3)}`;
}

// fmtTick is fmtNs without trailing zeros: 3 µs, 30 µs, 1.5 ms.
export function fmtTick(ns) { return fmtNs(ns).replace(/\.0+ /, ' ').replace(/(\.\d*?)0+ /, '$1 '); }

// path is an SVG path through the points [x, y].
export function path(pts) { return pts.map((p, i) => `${i ? 'L' : 'M'}${p[0].toFixed(1)},${p[1].toFixed(1)}`).join(''); }

// frame draws the axes, grid and labels every chart shares.
function frame(opts) {
  const { x, y, xticks, yticks, xfmt, yfmt, xlabel, ylabel, label } = opts;
  const g = s('g', { class: 'axes' });
  for (const t of yticks) {
    g.kids.push(s('line', { x1: M.l, x2: W - M.r, y1: y(t), y2: y(t), class: 'grid' }));
    g.kids.push(s('text', { x: M.l - 6, y: y(t) + 4, 'text-anchor': 'end', text: yfmt(t) }));
  }
  for (const t of xticks) {
    g.kids.push(s('line', { x1: x(t), x2: x(t), y1: M.t, y2: H - M.b, class: 'grid' }));
    g.kids.push(s('text', { x: x(t), y: H - M.b + 16, 'text-anchor': 'middle', text: xfmt(t) }));
  }
  g.kids.push(s('line', { x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b, class: 'axis' }));
  g.kids.push(s('line', { x1: M.l, x2: M.l, y1: M.t, y2: H - M.b, class: 'axis' }));
  if (xlabel) g.kids.push(s('text', { x: (M.l + W - M.r) / 2, y: H - 6, 'text-anchor': 'middle', class: 'label', text: xlabel }));
  if (ylabel) g.kids.push(s('text', { x: 12, y: (M.t + H - M.b) / 2, 'text-anchor': 'middle', class: 'label', transform: `rotate(-90 12 ${(M.t + H - M.b) / 2})`, text: ylabel }));
  return s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'svgchart', role: 'img', 'aria-label': label }, g);
}

// colour is a series' class suffix: one of eight colours, dashed when asked.
const colour = (k, dashed) => `c${k % 8}${dashed ? ' dashed' : ''}`;

// nines maps a percentile to the log axis: 0 -> 1, 90 -> 10, 99 -> 100, ...
const nines = (p) => 1 / Math.max(1 - p / 100, 1e-4);

const NINES_LABEL = { 1: 'p0', 2: 'p50', 10: 'p90', 100: 'p99', 1000: 'p99.9', 10000: 'p99.99' };

// spectrumChart draws latency against percentile, one line per series
// ({name, k, dashed, lat: {spectrum: [{p, ns}]}}), dots at p50 and p99.
export function spectrumChart(series) {
  const shown = (pt) => pt.p <= 99.99 && pt.ns > 0;
  let lo = Infinity, hi = 0;
  for (const x of series) for (const pt of x.lat.spectrum) if (shown(pt)) { lo = Math.min(lo, pt.ns); hi = Math.max(hi, pt.ns); }
  if (!isFinite(lo)) { lo = 1; hi = 10; }
  lo = lo / 1.3; hi = hi * 1.3;
  const x = scale(1, 1e4, M.l, W - M.r, true), y = scale(lo, hi, H - M.b, M.t, true);
  const svg = frame({ x, y, xticks: [1, 2, 10, 100, 1000, 1e4], yticks: logTicks(lo, hi), xfmt: (t) => NINES_LABEL[t], yfmt: fmtTick, xlabel: 'percentile', ylabel: 'latency', label: 'Latency percentile spectrum' });
  for (const sr of series) {
    const pts = sr.lat.spectrum.filter(shown).map((pt) => [x(nines(pt.p)), y(pt.ns)]);
    if (pts.length) svg.kids.push(s('path', { d: path(pts), class: `line ${colour(sr.k, sr.dashed)}` }));
    for (const pt of sr.lat.spectrum) {
      if (pt.p === 99 || pt.p === 50) svg.kids.push(s('circle', { cx: x(nines(pt.p)), cy: y(Math.max(pt.ns, lo)), r: 3.2, class: `dot c${sr.k % 8}` }, s('title', { text: `${sr.name}: p${pt.p} = ${fmtNs(pt.ns)}` })));
    }
  }
  return { svg, legend: series };
}

// histogramBins turns a series' buckets ({le_ns, count}) into shares of
// its operations, each bucket spanning from the previous bound.
function histogramBins(sr) {
  const total = sr.lat.histogram.reduce((a, b) => a + b.count, 0) || 1;
  let prev = null;
  return sr.lat.histogram.map((b) => {
    const le = Math.max(b.le_ns, 1);
    const from = prev == null ? le / 1.58 : prev;
    prev = le;
    return { from, to: le, f: b.count / total };
  });
}

// histogramChart draws each series' latency histogram
// ({name, k, dashed, lat: {histogram: [{le_ns, count}]}}) as a tinted area,
// on a log y axis: a slow path taken by 1 op in 100 is still a visible hump.
export function histogramChart(series) {
  const norm = series.map((sr) => ({ sr, bins: histogramBins(sr) }));
  let lo = Infinity, hi = 0, floor = 1;
  for (const { bins } of norm) {
    for (const b of bins) {
      lo = Math.min(lo, b.from); hi = Math.max(hi, b.to);
      if (b.f > 0) floor = Math.min(floor, b.f);
    }
  }
  if (!isFinite(lo)) { lo = 1; hi = 10; }
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
    svg.kids.push(s('path', { d, class: `area ${colour(sr.k, sr.dashed)}` }));
  }
  // Beyond three runs the tinted areas stack into one dark block: draw outlines only.
  if (norm.length > 3) svg.attrs.class += ' outlines';
  return { svg, legend: series };
}

// fullSeconds is the run's timeline without a last bucket that covers
// under a quarter of a second: the few ops that finished just after the
// deadline, whose rate would draw a cliff that never happened.
export function fullSeconds(b) {
  const tl = b.timeline || [];
  const p = tl[tl.length - 1];
  if (p && b.wall_seconds > 0 && b.wall_seconds - (p.second - 1) < 0.25) return tl.slice(0, -1);
  return tl;
}

// timelineChart draws ops/s in each second of each run
// ({name, k, pts: [{second, ops_per_sec}]}) as steps.
export function timelineChart(tl) {
  let hi = 0, last = 1;
  for (const t of tl) for (const p of t.pts) { hi = Math.max(hi, p.ops_per_sec); last = Math.max(last, p.second); }
  const top = hi * 1.1 || 1;
  const x = scale(0, last, M.l, W - M.r, false), y = scale(0, top, H - M.b, M.t, false);
  const svg = frame({ x, y, xticks: niceTicks(0, last, Math.min(last, 8)), yticks: niceTicks(0, top, 4), xfmt: (t) => `${t}s`, yfmt: fmtRateTick, xlabel: 'second of the run', ylabel: 'ops/s', label: 'Throughput timeline' });
  for (const t of tl) {
    const pts = [];
    for (const p of t.pts) pts.push([x(p.second - 1), y(p.ops_per_sec)], [x(p.second), y(p.ops_per_sec)]);
    if (pts.length) svg.kids.push(s('path', { d: path(pts), class: `line c${t.k % 8}` }));
  }
  return { svg, legend: tl };
}

// p99Of is a bench result's p99 of its first op kind (put first).
const p99Of = (b) => { const l = b.latency && (b.latency.put || b.latency.get || Object.values(b.latency)[0]); return l ? l.p99_ns : null; };

// sweepChart draws throughput and p99 (dashed, right axis) against
// threads, one pair of lines per set of bench results (a sweep line).
export function sweepChart(sets) {
  sets = sets.filter((bs) => bs.length);
  let maxT = 1, hiR = 0, loL = Infinity, hiL = 0;
  for (const b of sets.flat()) {
    maxT = Math.max(maxT, b.threads); hiR = Math.max(hiR, b.ops_per_sec);
    const l = p99Of(b);
    if (l > 0) { loL = Math.min(loL, l); hiL = Math.max(hiL, l); }
  }
  if (!isFinite(loL)) { loL = 1; hiL = 10; }
  const top = hiR * 1.1 || 1;
  const x = scale(1, maxT, M.l, W - M.r - 46, maxT > 2), y = scale(0, top, H - M.b, M.t, false);
  const y2 = scale(loL / 1.3, hiL * 1.3, H - M.b, M.t, true);
  const ths = [...new Set(sets.flat().map((b) => b.threads))].sort((a, b) => a - b);
  const svg = frame({ x, y, xticks: ths, yticks: niceTicks(0, top, 4), xfmt: String, yfmt: fmtRateTick, xlabel: 'threads', ylabel: 'ops/s', label: 'Saturation curve' });
  for (const t of logTicks(loL / 1.3, hiL * 1.3, 5)) svg.kids.push(s('text', { x: W - M.r - 40, y: y2(t) + 4, class: 'axis2', text: fmtTick(t) }));
  const legend = [];
  sets.forEach((bs, k) => {
    const sorted = [...bs].sort((a, b) => a.threads - b.threads);
    svg.kids.push(s('path', { d: path(sorted.map((b) => [x(b.threads), y(b.ops_per_sec)])), class: `line c${k % 8}` }));
    for (const b of sorted) svg.kids.push(s('circle', { cx: x(b.threads), cy: y(b.ops_per_sec), r: 3.5, class: `dot c${k % 8}` }, s('title', { text: `${b.threads} threads: ${fmtRate(b.ops_per_sec)} ops/s, p99 ${fmtNs(p99Of(b))}` })));
    const lp = sorted.filter((b) => p99Of(b) > 0).map((b) => [x(b.threads), y2(p99Of(b))]);
    if (lp.length) svg.kids.push(s('path', { d: path(lp), class: `line dashed c${k % 8}` }));
    legend.push({ name: `${sorted[0].engine} ${sorted[0].sync} ops/s`, k }, { name: 'p99 (right axis)', k, dashed: true });
  });
  return { svg, legend };
}

// loadChart draws the hockey stick: open-loop runs of one store at several
// offered rates, each a point at its rate (x, log scale) with its
// corrected p99 (solid: latency from each unit's intended start) and its
// uncorrected p99 (dashed: the store's own service time), latency on a
// log scale. Where the solid line leaves the dashed one, units queue.
export function loadChart(bs) {
  const pts = bs.filter((b) => b.rate > 0).sort((a, b) => a.rate - b.rate);
  const unc = (b) => { const u = b.latency_uncorrected || {}; const l = u.put || u.get || Object.values(u)[0]; return l ? l.p99_ns : null; };
  let lo = Infinity, hi = 0;
  for (const b of pts) for (const v of [p99Of(b), unc(b)]) if (v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (!isFinite(lo)) { lo = 1; hi = 10; }
  const rates = pts.map((b) => b.rate);
  const r0 = rates.length ? rates[0] : 1, r1 = rates.length ? rates[rates.length - 1] : 10;
  const x = scale(r0 / 1.4, r1 * 1.4, M.l, W - M.r, true), y = scale(lo / 1.3, hi * 1.3, H - M.b, M.t, true);
  const svg = frame({ x, y, xticks: rates, yticks: logTicks(lo / 1.3, hi * 1.3), xfmt: fmtRateTick, yfmt: fmtTick, xlabel: 'offered load: units per second (log scale)', ylabel: 'p99 latency', label: 'Latency against offered load' });
  const line = (val, dashed) => {
    const xy = pts.filter((b) => val(b) > 0).map((b) => [x(b.rate), y(val(b))]);
    if (xy.length) svg.kids.push(s('path', { d: path(xy), class: `line ${colour(0, dashed)}` }));
    for (const b of pts.filter((b) => val(b) > 0)) {
      svg.kids.push(s('circle', { cx: x(b.rate), cy: y(val(b)), r: 3.5, class: `dot ${colour(0, false)}` },
        s('title', { text: `${fmtRate(b.rate)}/s offered: ${dashed ? 'uncorrected' : 'corrected'} p99 ${fmtNs(val(b))}${b.utilization != null ? `, utilization ${b.utilization.toFixed(2)}` : ''}` })));
    }
  };
  line(p99Of, false);
  line(unc, true);
  return { svg, legend: [{ name: 'corrected p99 (from the intended start)', k: 0 }, { name: 'uncorrected p99 (service time)', k: 0, dashed: true }] };
}

// modelChart draws measured ops/s of batch:N runs (dots) against what the
// batch model predicts for each run (rings on a dashed line).
export function modelChart(bs) {
  const pts = bs.map((b) => ({ n: +String(b.sync).split(':')[1], b })).filter((p) => p.n > 0).sort((a, b) => a.n - b.n);
  const ns = pts.map((p) => p.n);
  const lo = ns.length ? ns[0] : 1, hiN = ns.length ? ns[ns.length - 1] : 1;
  let hi = 0;
  for (const p of pts) hi = Math.max(hi, p.b.ops_per_sec, p.b.model.predicted_ops_per_sec);
  const x = scale(lo / 1.6, hiN * 1.6, M.l, W - M.r, true), y = scale(0, hi * 1.12, H - M.b, M.t, false);
  const svg = frame({ x, y, xticks: ns, yticks: niceTicks(0, hi * 1.12, 4), xfmt: (t) => `batch:${t}`, yfmt: fmtRateTick, xlabel: 'N: fdatasync every N puts (log scale)', ylabel: 'ops/s', label: 'Measured vs model' });
  if (pts.length) svg.kids.push(s('path', { d: path(pts.map((p) => [x(p.n), y(p.b.model.predicted_ops_per_sec)])), class: 'line dashed c1' }));
  for (const p of pts) {
    const m = p.b.model;
    const times = m.predicted_ops_per_sec > 0 ? ` (${(p.b.ops_per_sec / m.predicted_ops_per_sec).toFixed(2)}× the model)` : '';
    svg.kids.push(s('circle', { cx: x(p.n), cy: y(m.predicted_ops_per_sec), r: 4, class: 'ring c1' }, s('title', { text: `batch:${p.n}: model ${fmtRate(m.predicted_ops_per_sec)} ops/s from T_write ${fmtNs(m.t_write_ns)}, T_fsync ${fmtNs(m.t_fsync_ns)}` })));
    svg.kids.push(s('circle', { cx: x(p.n), cy: y(p.b.ops_per_sec), r: 4.5, class: 'dot c0' }, s('title', { text: `batch:${p.n}: measured ${fmtRate(p.b.ops_per_sec)} ops/s${times}` })));
  }
  return { svg, legend: [{ name: 'measured', k: 0 }, { name: 'model: 1 / (T_write + T_fsync/N), each run\'s own T_write and T_fsync', k: 1, dashed: true }] };
}

// sparkline is the small live chart of ops/s while a run goes on; pts are
// [elapsed seconds, ops/s].
export function sparkline(pts) {
  const w = 240, hh = 44;
  const svg = s('svg', { viewBox: `0 0 ${w} ${hh}`, class: 'spark', role: 'img', 'aria-label': 'ops/s while running' });
  if (pts.length < 1) return svg;
  const maxX = Math.max(...pts.map((p) => p[0]), 1), maxY = Math.max(...pts.map((p) => p[1]), 1);
  const xy = [[0, hh - 2], ...pts.map((p) => [(p[0] / maxX) * (w - 4) + 2, hh - 2 - (p[1] / maxY) * (hh - 8)])];
  svg.kids.push(s('path', { d: path(xy), class: 'line c0' }));
  return svg;
}
