// Tests of charts.js: every chart, given real-looking, empty and
// single-point series, returns a well-formed markup description with no
// NaN, Infinity or undefined in any attribute or text.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  spectrumChart, histogramChart, timelineChart, sweepChart, modelChart, loadChart, sparkline,
  scale, logTicks, niceTicks, fmtTick, fmtRateTick, fullSeconds, path,
} from '../charts.js';
import { problems } from './svgdesc.mjs';

const count = (desc, tag) => (desc.tag === tag ? 1 : 0) + desc.kids.reduce((n, k) => n + count(k, tag), 0);

function clean(t, name, chart) {
  const svg = chart.svg || chart;
  assert.equal(svg.tag, 'svg', `${name}: root`);
  assert.deepEqual(problems(svg), [], `${name}: attributes`);
  return svg;
}

const bench = (threads, ops, p99, extra) => ({ engine: 'kv', sync: 'none', threads, ops_per_sec: ops, latency: { put: { p99_ns: p99 } }, ...extra });

const spectrum = (pts) => ({ name: 'kv', k: 0, lat: { spectrum: pts.map(([p, ns]) => ({ p, ns })) } });
const histogram = (bins) => ({ name: 'kv', k: 0, lat: { histogram: bins.map(([le, count]) => ({ le_ns: le, count })) } });
const timeline = (pts) => ({ name: 'kv', k: 0, pts: pts.map(([second, ops]) => ({ second, ops_per_sec: ops })) });
const paced = (rate, p99, uncP99) => ({ engine: 'kv', sync: 'always', threads: 1, rate, utilization: rate * 2e-4, latency: { put: { p99_ns: p99 } }, latency_uncorrected: { put: { p99_ns: uncP99 } } });
const batch = (n, ops, predicted) => ({ sync: `batch:${n}`, ops_per_sec: ops, model: { predicted_ops_per_sec: predicted, t_write_ns: 800, t_fsync_ns: 2e6 } });

// Each chart with the inputs a run gives, and the ones it may give at the
// edges: nothing at all, one series with nothing, one point, zeros.
const cases = {
  spectrum: [spectrumChart, {
    typical: [spectrum([[0, 900], [50, 1200], [90, 2500], [99, 9e5], [99.9, 2e6], [100, 3e6]])],
    empty: [],
    'empty series': [spectrum([])],
    'single point': [spectrum([[50, 1000]])],
    zeros: [spectrum([[50, 0], [99, 0]])],
  }],
  histogram: [histogramChart, {
    typical: [histogram([[1000, 10], [2000, 80], [4000, 5], [2e6, 5]])],
    empty: [],
    'empty series': [histogram([])],
    'single point': [histogram([[1000, 3]])],
    zeros: [histogram([[0, 0]])],
  }],
  timeline: [timelineChart, {
    typical: [timeline([[1, 900], [2, 1100], [3, 1000]])],
    empty: [],
    'empty series': [timeline([])],
    'single point': [timeline([[1, 500]])],
    zeros: [timeline([[1, 0], [2, 0]])],
  }],
  sweep: [sweepChart, {
    typical: [[bench(1, 1000, 2e6), bench(2, 1900, 2.1e6), bench(4, 3500, 2.4e6)]],
    empty: [],
    'empty series': [[]],
    'single point': [[bench(1, 1000, 2e6)]],
    zeros: [[bench(1, 0, 0), bench(2, 0, 0)]],
  }],
  load: [loadChart, {
    typical: [paced(500, 3e5, 2.5e5), paced(2000, 4e5, 3e5), paced(8000, 4e8, 3e5)],
    empty: [],
    'single point': [paced(1000, 3e5, 2.5e5)],
    zeros: [paced(500, 0, 0), paced(1000, 0, 0)],
    'closed loop only': [bench(1, 1000, 2e6)],
  }],
  model: [modelChart, {
    typical: [batch(1, 400, 450), batch(8, 3000, 3200), batch(64, 20000, 21000)],
    empty: [],
    'single point': [batch(8, 3000, 3200)],
    zeros: [batch(8, 0, 0)],
  }],
};

for (const [name, [chart, inputs]] of Object.entries(cases)) {
  for (const [what, input] of Object.entries(inputs)) {
    test(`${name} chart, ${what}`, (t) => {
      const c = chart(input);
      clean(t, `${name} ${what}`, c);
      assert.ok(Array.isArray(c.legend), 'legend is a list');
    });
  }
}

test('sparkline: empty, single point, zeros, a run', () => {
  for (const pts of [[], [[1, 100]], [[0, 0]], [[1, 100], [2, 200], [3, 150]]]) clean(null, `sparkline ${JSON.stringify(pts)}`, sparkline(pts));
  assert.equal(count(sparkline([]), 'path'), 0, 'no line without points');
  assert.equal(count(sparkline([[1, 100]]), 'path'), 1);
});

test('spectrum draws one line per series and dots at p50 and p99', () => {
  const c = spectrumChart([spectrum([[50, 1000], [90, 2000], [99, 5000]]), { ...spectrum([[50, 900], [99, 4000]]), k: 1 }]);
  assert.equal(count(c.svg, 'path'), 2);
  assert.equal(count(c.svg, 'circle'), 4);
});

test('histogram: more than three series are outlines only', () => {
  const four = [0, 1, 2, 3].map((k) => ({ ...histogram([[1000, 1]]), k }));
  assert.match(histogramChart(four).svg.attrs.class, /\boutlines\b/);
  assert.doesNotMatch(histogramChart(four.slice(0, 3)).svg.attrs.class, /\boutlines\b/);
});

test('sweep: a legend pair per set, ticks at the thread counts', () => {
  const c = sweepChart([[bench(1, 1000, 2e6), bench(4, 3500, 2.4e6)]]);
  assert.deepEqual(c.legend.map((i) => i.name), ['kv none ops/s', 'p99 (right axis)']);
  const ticks = [];
  // The x axis's labels sit under it, centred on their tick.
  const walk = (d) => { if (d.tag === 'text' && d.attrs['text-anchor'] === 'middle' && /^\d+$/.test(d.attrs.text)) ticks.push(d.attrs.text); d.kids.forEach(walk); };
  walk(c.svg);
  assert.deepEqual(ticks, ['1', '4']);
});

test('scale: linear, log, and a domain it cannot use', () => {
  const lin = scale(0, 10, 100, 200, false);
  assert.equal(lin(5), 150);
  const log = scale(1, 100, 0, 100, true);
  assert.equal(log(10), 50);
  assert.equal(log(0), 0, 'zero on a log scale sits on the axis');
  assert.equal(scale(5, 5, 0, 100)(7), 50, 'an empty domain maps to the middle');
  assert.equal(scale(Infinity, 0, 0, 100)(1), 50);
});

test('ticks', () => {
  assert.deepEqual(logTicks(1000, 1e6), [1000, 3000, 10000, 30000, 100000, 300000, 1000000]);
  assert.deepEqual(logTicks(0, 10), [], 'no log ticks from 0');
  assert.deepEqual(logTicks(2, 1), [], 'no log ticks for a reversed range');
  assert.deepEqual(niceTicks(0, 100, 4), [0, 25, 50, 75, 100]);
  assert.deepEqual(niceTicks(0, 0, 4), [0]);
  assert.deepEqual(niceTicks(0, NaN, 4), []);
  assert.equal(fmtRateTick(1500000), '1.5M');
  assert.equal(fmtRateTick(12000), '12k');
  assert.equal(fmtRateTick(800), '800');
  assert.equal(fmtTick(3000), '3 µs');
  assert.equal(fmtTick(1.5e6), '1.5 ms');
});

test('fullSeconds drops a last bucket under a quarter second', () => {
  const tl = [{ second: 1 }, { second: 2 }, { second: 3 }];
  assert.equal(fullSeconds({ timeline: tl, wall_seconds: 2.1 }).length, 2);
  assert.equal(fullSeconds({ timeline: tl, wall_seconds: 2.9 }).length, 3);
  assert.deepEqual(fullSeconds({}), []);
});

test('path', () => {
  assert.equal(path([[0, 1], [2.25, 3]]), 'M0.0,1.0L2.3,3.0');
  assert.equal(path([]), '');
});

// The tick makers are total: any finite range gives a few finite ticks in
// bounded time (each call runs in a worker that is ended after 5 s).
test('ticks of any finite range, in bounded time', async () => {
  const { within } = await import('./bounded.mjs');
  const charts = new URL('../charts.js', import.meta.url);
  const ranges = [[1e300, 1e300], [-1.7e308, 1.7e308], [0, 5e-324], [5e-324, 5e-324], [5e-324, 1.7e308], [1.7e308, 1.7e308], [0, 1.7e308], [-5, -5]];
  for (const [lo, hi] of ranges) {
    for (const fn of ['niceTicks', 'logTicks']) {
      const ticks = await within(5000, charts, fn, [lo, hi, 5]);
      assert.ok(ticks.length <= 13 && ticks.every(Number.isFinite), `${fn}(${lo}, ${hi}): ${ticks}`);
    }
  }
  assert.deepEqual(niceTicks(1e300, 1e300), [1e300], 'an empty range far from zero has its one tick');
});

test('load: a corrected and a dashed uncorrected line, a point per rate on each, ticks at the rates', () => {
  const c = loadChart([paced(2000, 4e5, 3e5), paced(500, 3e5, 2.5e5), paced(8000, 4e8, 3e5)]);
  assert.equal(count(c.svg, 'path'), 2);
  assert.equal(count(c.svg, 'circle'), 6);
  const dashed = [];
  const walk = (d) => { if (d.tag === 'path' && /\bdashed\b/.test(d.attrs.class)) dashed.push(d); d.kids.forEach(walk); };
  walk(c.svg);
  assert.equal(dashed.length, 1, 'the uncorrected line is dashed');
  const ticks = [];
  const xt = (d) => { if (d.tag === 'text' && d.attrs['text-anchor'] === 'middle' && /^[\d.]+k?$/.test(d.attrs.text)) ticks.push(d.attrs.text); d.kids.forEach(xt); };
  xt(c.svg);
  assert.deepEqual(ticks, ['500', '2k', '8k'], 'ticks at the offered rates, in order');
});
