// roomcharts.js: the room's two charts as pure functions: data in, an SVG
// markup description out ({tag, attrs, kids}, attrs.text being the text),
// which the page turns into elements. No DOM reads, so Node can test them.
//
//   pollChart(poll, yours, fmt)  a poll's histogram of predictions, the
//                                measured value and this browser's own
//                                prediction marked on it
//   boardChart(points, fmt)      one row per shared machine, the measure on
//                                a log axis, each labelled with its conditions

const el = (tag, attrs, ...kids) => ({ tag, attrs, kids: kids.flat().filter(Boolean) });

// compact writes a prediction or measured value: three significant digits,
// k and M past ten thousand, no trailing zeros.
export function compact(x) {
  if (x == null || !isFinite(x)) return '–';
  const a = Math.abs(x);
  if (a >= 1e6) return `${+(x / 1e6).toPrecision(3)}M`;
  if (a >= 1e4) return `${+(x / 1e3).toPrecision(3)}k`;
  return `${+x.toPrecision(3)}`;
}

// offBy says how far a prediction was from the measured value, with its
// direction: the ratio of the larger to the smaller ("3.2× too high")
// when both are positive, else the difference ("10 too low"); "right on"
// when they are equal.
export function offBy(said, measured) {
  if (!isFinite(said) || !isFinite(measured)) return '';
  if (said === measured) return 'right on';
  const dir = said > measured ? 'too high' : 'too low';
  if (said > 0 && measured > 0) {
    const r = Math.max(said / measured, measured / said);
    return `${r >= 10 ? Math.round(r) : +r.toFixed(r < 1.1 ? 2 : 1)}× ${dir}`;
  }
  return `${compact(Math.abs(said - measured))} ${dir}`;
}

// pollChart draws a poll's histogram. poll.histogram has 11 edges and 10
// counts (log-spaced when histogram.log), and below/above: the ballots
// outside its range, named in a corner; measured (poll.measured) and
// yours, when known, are marked with vertical lines, clamped into the
// range with an arrow when outside.
export function pollChart(poll, yours, fmt = compact) {
  // The top margin holds, from the top: the unit and the out-of-range
  // counts (y 16), the measured value's label (y M.t - 36), and the
  // tallest bar's count (M.t - 6); the bottom one the ticks (H - M.b + 20)
  // and this browser's own value (H - M.b + 52): one row each, so none
  // overlaps another, at the phone's larger text (room.css) too.
  const W = 720, H = 360, M = { l: 48, r: 24, t: 84, b: 84 };
  const hist = poll && poll.histogram;
  const svg = (...kids) => el('svg', { viewBox: `0 0 ${W} ${H}`, class: 'pollchart', role: 'img', 'aria-label': `Predictions for ${(poll && poll.quiz) || 'the poll'}` }, ...kids);
  if (!hist || !Array.isArray(hist.edges) || hist.edges.length < 2 || !Array.isArray(hist.counts) || !hist.counts.length) {
    return svg(el('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'empty', text: 'No predictions yet' }));
  }
  const edges = hist.edges, counts = hist.counts.map((c) => (Number.isFinite(c) && c > 0 ? c : 0));
  if (!edges.every(Number.isFinite)) return svg(el('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'empty', text: 'No predictions yet' }));
  const lo = edges[0], hi = edges[edges.length - 1];
  const top = Math.max(1, ...counts);
  // A value's place is its bin plus its share of the bin, so linear and
  // logarithmic edges (histogram.log) both draw as equal bars. Halves, so
  // a difference cannot overflow for edges near ±1.7e308.
  const frac = (v, a, b) => (b === a ? 0.5 : (v / 2 - a / 2) / (b / 2 - a / 2));
  const x = (v) => {
    let i = 0;
    while (i < counts.length - 1 && !(v < edges[i + 1])) i++;
    const t = hi === lo ? 0.5 : (i + Math.min(Math.max(frac(v, edges[i], edges[i + 1]), 0), 1)) / counts.length;
    return M.l + t * (W - M.l - M.r);
  };
  const y = (c) => H - M.b - (c / top) * (H - M.t - M.b);
  const bw = (W - M.l - M.r) / counts.length;
  const bars = counts.map((c, i) => el('rect', { x: (M.l + i * bw + 1).toFixed(1), y: y(c).toFixed(1), width: Math.max(bw - 2, 1).toFixed(1), height: (H - M.b - y(c)).toFixed(1), class: 'bar' },
    el('title', { text: `${c} prediction${c === 1 ? '' : 's'} from ${fmt(edges[i])} to ${fmt(edges[i + 1])}` })));
  const labels = counts.map((c, i) => (c ? el('text', { x: (M.l + (i + 0.5) * bw).toFixed(1), y: (y(c) - 6).toFixed(1), 'text-anchor': 'middle', class: 'count', text: String(c) }) : null));
  // Every other edge, each value once (equal edges would print on top of each other).
  const shown = [...new Set(edges.filter((_, i) => i % 2 === 0 || edges.length <= 6))];
  const ticks = shown.map((e) => el('text', { x: x(e).toFixed(1), y: H - M.b + 20, 'text-anchor': 'middle', class: 'tick', text: fmt(e) }));
  const axis = el('line', { x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b, class: 'axis' });
  const unit = poll.unit ? el('text', { x: 4, y: 16, class: 'unit', text: poll.unit + (hist.log ? ' (log scale)' : '') }) : null;
  // Ballots outside the robust range (the server's: the median ± 4 robust
  // standard deviations) are counted, not drawn: a few extreme ones cannot
  // squash the rest.
  const n = (k) => (Number.isFinite(k) && k > 0 ? k : 0);
  const out = [n(hist.below) ? `${n(hist.below)} below range` : '', n(hist.above) ? `${n(hist.above)} above range` : ''].filter(Boolean).join(' · ');
  const outside = out ? el('text', { x: W - M.r, y: 16, 'text-anchor': 'end', class: 'outside', text: out }) : null;
  return svg(...bars, ...labels, axis, ...ticks, unit, outside,
    mark(poll.measured, 'measured', `measured ${fmt(poll.measured)}`, lo, hi, x, M, H),
    mark(yours, 'yours', `you ${fmt(yours)}`, lo, hi, x, M, H, true));
}

// mark is a labelled vertical line at v (nothing when v is unknown),
// labelled above the bars, or below the axis's numbers.
function mark(v, cls, text, lo, hi, x, M, H, below = false) {
  if (v == null || !isFinite(v)) return null;
  const out = v < lo ? '◀ ' : v > hi ? ' ▶' : '';
  const at = x(Math.min(Math.max(v, lo), hi));
  const anchor = at > 560 ? 'end' : at < 160 ? 'start' : 'middle';
  return el('g', { class: `mark ${cls}` },
    el('line', { x1: at.toFixed(1), x2: at.toFixed(1), y1: below ? M.t : M.t - 30, y2: H - M.b }),
    el('text', { x: at.toFixed(1), y: below ? H - M.b + 52 : M.t - 36, 'text-anchor': anchor, text: v < lo ? out + text : text + out }));
}

// shareTime writes when a result was shared as every other page writes a
// time: UTC, "2026-12-04 23:41:45"; "" when unknown.
export function shareTime(at) {
  const d = new Date(at);
  if (at == null || at === '' || isNaN(d.getTime())) return '';
  return d.toISOString().slice(0, 19).replace('T', ' ');
}

// conditionsText names a shared machine's conditions: OS, filesystem,
// device and whether it is rotational, leaving out what the result did
// not say.
export function conditionsText(c) {
  c = c || {};
  const rot = c.rotational === true ? 'rotational' : c.rotational === false ? 'non-rotational' : '';
  const parts = [c.os, c.fs, c.device, rot].filter(Boolean);
  return parts.length ? parts.join(' · ') : 'conditions unknown';
}

// condChars is how many characters of 16 px text fit in the room the
// board chart leaves right of its axis.
const condChars = 58;

// fit shortens s to at most n characters, ending in an ellipsis when cut.
export function fit(s, n) {
  s = String(s);
  return s.length <= n ? s : `${s.slice(0, n - 1).trimEnd()}…`;
}

// boardChart draws one row per point, sorted by value, on a log axis
// (machines differ by orders of magnitude), each row labelled with the
// point's conditions and label. Rotational devices, non-rotational and
// unknown get three colours.
export function boardChart(points, fmt = compact) {
  const pts = (points || []).filter((p) => p && isFinite(p.value) && p.value > 0).slice().sort((a, b) => a.value - b.value);
  const rowH = pts.length > 30 ? 18 : pts.length > 12 ? 30 : 44;
  const W = 1200, M = { l: 24, r: 520, t: 16, b: 44 };
  const H = M.t + M.b + Math.max(pts.length, 1) * rowH;
  const svg = (...kids) => el('svg', { viewBox: `0 0 ${W} ${H}`, class: 'boardchart', role: 'img', 'aria-label': `${pts.length} shared machines` }, ...kids);
  if (!pts.length) return svg(el('text', { x: W / 2, y: M.t + 24, 'text-anchor': 'middle', class: 'empty', text: 'Nothing shared for this measure yet' }));
  // The axis works in decades (log10 of the values), padded by a factor
  // of 1.5 each side: every finite positive value has a finite log, so
  // 1.7e308 and 5e-324 place like any other, and the ticks are at most
  // eight powers of ten, however many decades the values span.
  const lg = Math.log10, pad = lg(1.5);
  const a = lg(pts[0].value) - pad, b = lg(pts[pts.length - 1].value) + pad;
  const xe = (e) => M.l + (e - a) / (b - a) * (W - M.l - M.r);
  const x = (v) => xe(lg(v));
  const first = Math.ceil(a), last = Math.floor(b), every = Math.max(1, Math.ceil((last - first + 1) / 8));
  let exps = [];
  for (let e = first; e <= last; e += every) exps.push(e);
  if (exps.length < 2) exps = [a + (b - a) * 0.15, (a + b) / 2, b - (b - a) * 0.15];
  const grid = exps.map((e) => el('g', { class: 'tick' },
    el('line', { x1: xe(e).toFixed(1), x2: xe(e).toFixed(1), y1: M.t, y2: H - M.b, class: 'grid' }),
    el('text', { x: xe(e).toFixed(1), y: H - M.b + 22, 'text-anchor': 'middle', text: fmt(10 ** e) })));
  const rows = pts.map((p, i) => {
    const cy = M.t + (i + 0.5) * rowH;
    const c = p.conditions || {};
    const cls = c.rotational === true ? 'c1' : c.rotational === false ? 'c0' : 'c7';
    const label = `${conditionsText(c)}${p.label ? ` — ${p.label}` : ''}`;
    // Beside the row: the value and conditions; the student's label on a
    // line of its own where rows are tall enough, else after them. Text
    // that would run past the chart's edge ends in an ellipsis (the dot's
    // title keeps it whole).
    const twoLines = p.label && rowH >= 44;
    const first = twoLines ? `${fmt(p.value)}  ${conditionsText(c)}` : `${fmt(p.value)}  ${label}`;
    const tx = W - M.r + 16;
    return el('g', { class: 'point', 'data-id': String(p.id) },
      el('line', { x1: M.l, x2: W - M.r, y1: cy.toFixed(1), y2: cy.toFixed(1), class: 'row' }),
      el('circle', { cx: x(p.value).toFixed(1), cy: cy.toFixed(1), r: rowH > 20 ? 9 : 6, class: `dot ${cls}` }, el('title', { text: `${fmt(p.value)}: ${label}` })),
      el('text', { x: tx, y: (twoLines ? cy - 2 : cy + 6).toFixed(1), class: 'cond', text: fit(first, condChars) }),
      twoLines && el('text', { x: tx, y: (cy + 16).toFixed(1), class: 'lab', text: fit(p.label, condChars) }));
  });
  const axis = el('line', { x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b, class: 'axis' });
  return svg(...grid, ...rows, axis);
}
