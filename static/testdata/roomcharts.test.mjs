// The room's charts (static/room/roomcharts.js) given nothing, one
// value, and the cases a class produces: no NaN, no throw, the marks
// where they belong; and the poll's "off by".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pollChart, boardChart, offBy, compact, conditionsText, fit, shareTime } from '../room/roomcharts.js';
import { problems } from './svgdesc.mjs';
import { within } from './bounded.mjs';

const text = (d) => JSON.stringify(d);
const all = (d, tag) => (d.tag === tag ? [d] : []).concat(...(d.kids || []).map((k) => all(k, tag)));

test('a poll with no predictions says so', () => {
  for (const p of [null, {}, { histogram: { edges: [], counts: [] } }]) {
    const d = pollChart(p, null);
    assert.match(text(d), /No predictions yet/);
    assert.deepEqual(problems(d), []);
  }
});

test('a poll draws ten bars, the measured value and the follower\'s own', () => {
  const p = { quiz: 'q', unit: 'puts', histogram: { edges: [100, 190, 280, 370, 460, 550, 640, 730, 820, 910, 1000], counts: [1, 0, 0, 0, 1, 0, 0, 0, 0, 1] }, measured: 500 };
  const d = pollChart(p, 1000);
  assert.deepEqual(problems(d), []);
  assert.equal(all(d, 'rect').length, 10);
  const marks = all(d, 'g').filter((g) => /mark/.test(g.attrs.class));
  assert.deepEqual(marks.map((g) => g.attrs.class), ['mark measured', 'mark yours']);
  assert.match(text(marks[0]), /measured 500/);
});

// The measured value's label sits in a row of its own, above the tallest
// bar's count and below the unit and the out-of-range counts: on the
// projector "measured 39" once overlapped a bar's count.
test('the measured label overlaps no count and no corner text', () => {
  const p = { quiz: 'q', unit: 'x', histogram: { edges: [10, 13, 16, 19, 22, 25, 28, 31, 34, 37, 40], counts: [1, 2, 3, 9, 9, 9, 4, 2, 1, 1], below: 1, above: 2 }, measured: 25 };
  const d = pollChart(p, 30);
  const texts = all(d, 'text');
  // A text's box: its baseline y, 0.8 of its size above it, 0.25 below.
  const size = (t) => (/mark/.test(t.cls) ? 16 : 14);
  const box = (t) => ({ top: +t.attrs.y - 0.8 * size(t), bottom: +t.attrs.y + 0.25 * size(t) });
  const marks = all(d, 'g').filter((g) => /mark measured/.test(g.attrs.class)).map((g) => ({ ...all(g, 'text')[0], cls: 'mark' }));
  assert.equal(marks.length, 1);
  const m = box(marks[0]);
  for (const t of texts.filter((t) => /count|unit|outside/.test(t.attrs.class))) {
    const b = box(t);
    assert.ok(m.bottom <= b.top || b.bottom <= m.top, `the measured label (${m.top}..${m.bottom}) overlaps ${t.attrs.class} "${t.attrs.text}" (${b.top}..${b.bottom})`);
  }
});

test('one prediction (all edges equal) and a value outside the range', () => {
  const d = pollChart({ histogram: { edges: Array(11).fill(5), counts: [0, 0, 0, 0, 0, 0, 0, 0, 0, 1] } }, 1e9);
  assert.deepEqual(problems(d), []);
  assert.match(text(d), /▶/);
});

test('the board: empty, one point, points across decades', () => {
  assert.match(text(boardChart([])), /Nothing shared/);
  const one = boardChart([{ id: 1, value: 160000, conditions: { os: 'linux', fs: 'ext4', device: 'vda', rotational: true } }]);
  assert.deepEqual(problems(one), []);
  assert.match(text(one), /linux · ext4 · vda · rotational/);
  const many = boardChart([{ id: 1, value: 50e3 }, { id: 2, value: 2e6, label: 'hdd' }, { id: 3, value: 0 }, { id: 4, value: NaN }]);
  assert.equal(all(many, 'circle').length, 2, 'points without a positive value are left out');
  assert.deepEqual(problems(many), []);
});

test('the board: long conditions end in an ellipsis, a label gets its own line', () => {
  const long = { os: 'linux/amd64', fs: 'zfs', device: 'nvme0n1p3-with-a-very-long-device-name', rotational: false };
  const d = boardChart([{ id: 1, value: 2e5, conditions: long, label: 'laptop of the back row' }]);
  const texts = all(d, 'text').filter((t) => /cond|lab/.test(t.attrs.class));
  assert.deepEqual(texts.map((t) => t.attrs.class), ['cond', 'lab']);
  assert.ok(texts[0].attrs.text.length <= 58 && texts[0].attrs.text.endsWith('…'), texts[0].attrs.text);
  assert.equal(texts[1].attrs.text, 'laptop of the back row');
  assert.match(all(d, 'title')[0].attrs.text, /very-long-device-name · non-rotational — laptop of the back row/, 'the title keeps it whole');
  assert.equal(fit('short', 58), 'short');
  assert.equal(fit('abcdef', 4), 'abc…');
});

test('off by and the numbers', () => {
  assert.equal(offBy(1000, 500), '2× too high');
  assert.equal(offBy(100, 500), '5× too low');
  assert.equal(offBy(480, 500), '1.04× too low');
  assert.equal(offBy(-5, 5), '10 too low');
  assert.equal(offBy(500, 500), 'right on');
  assert.equal(compact(123456), '123k');
  assert.equal(compact(2500000), '2.5M');
  assert.equal(compact(0.125), '0.125');
  assert.equal(conditionsText({}), 'conditions unknown');
  assert.equal(conditionsText({ fs: 'xfs', rotational: false }), 'xfs · non-rotational');
});

// Every finite value draws, in bounded time: the extremes of a double
// (1.7e308, 5e-324), zero, equal values, and a mix spanning all of them.
// Each chart runs in a worker that is ended after a few seconds, so a
// loop that never ends fails the test instead of hanging it.
const roomcharts = new URL('../room/roomcharts.js', import.meta.url);
const extremes = [1.7e308, Number.MAX_VALUE, 5e-324, Number.MIN_VALUE, 0, 1, 1e-300, 1e300];

test('the board draws any finite value in bounded time', async () => {
  const sets = [
    ...extremes.map((v) => [v]),
    [7, 7, 7], [1.7e308, 1.7e308], [5e-324, 5e-324],
    [5e-324, 1.7e308], [0, 5e-324, 1, 1e6, 1.7e308],
    Array.from({ length: 500 }, (_, i) => 10 ** ((i % 617) - 308)),
  ];
  for (const vals of sets) {
    const d = await within(5000, roomcharts, 'boardChart', [vals.map((value, id) => ({ id, value, conditions: { fs: 'ext4' } }))]);
    assert.deepEqual(problems(d), [], `board of ${vals.slice(0, 5)}`);
    assert.equal(all(d, 'circle').length, vals.filter((v) => v > 0).length, `board of ${vals.slice(0, 5)}: one dot per positive value`);
    const ticks = all(d, 'g').filter((g) => g.attrs.class === 'tick');
    assert.ok(ticks.length <= 8, `board of ${vals.slice(0, 5)}: ${ticks.length} ticks, want at most 8`);
  }
});

test('a poll draws any finite edges and marks in bounded time', async () => {
  const hist = (lo, hi) => ({ edges: Array.from({ length: 11 }, (_, i) => (lo / 10) * (10 - i) + (hi / 10) * i), counts: [3, 0, 0, 0, 0, 0, 0, 0, 0, 1] });
  for (const [lo, hi] of [[-1.7e308, 1.7e308], [1.7e308, 1.7e308], [5e-324, 5e-324], [0, 5e-324], [-1e15, 1e15], [0, 0]]) {
    for (const mark of [1.7e308, -1.7e308, 5e-324, 0]) {
      const d = await within(5000, roomcharts, 'pollChart', [{ quiz: 'q', histogram: hist(lo, hi), measured: mark }, -mark]);
      assert.deepEqual(problems(d), [], `poll from ${lo} to ${hi}, marks at ${mark}`);
      assert.equal(all(d, 'rect').length, 10);
    }
  }
});

test('a poll with log bins places marks by bin, and names the ballots outside', () => {
  const edges = Array.from({ length: 11 }, (_, i) => 100 * 10 ** (i / 10)); // 100 .. 1000, log-spaced
  const d = pollChart({ quiz: 'q', unit: 'puts', histogram: { edges, counts: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1], below: 2, above: 30, log: true }, measured: edges[5] }, null);
  assert.deepEqual(problems(d), []);
  assert.match(text(d), /2 below range · 30 above range/);
  assert.match(text(d), /puts \(log scale\)/);
  const line = all(d, 'g').find((g) => /measured/.test(g.attrs.class)).kids[0];
  const mid = (48 + (720 - 24)) / 2;
  assert.ok(Math.abs(+line.attrs.x1 - mid) < 1, `the measured mark at the middle edge sits at ${line.attrs.x1}, want ${mid} (the middle)`);
});

test('a shared time reads as on every other page: UTC, 2026-12-04 23:41:45', () => {
  assert.equal(shareTime('2026-12-04T23:41:45.123Z'), '2026-12-04 23:41:45');
  assert.equal(shareTime('2026-12-05T01:41:45+02:00'), '2026-12-04 23:41:45');
  assert.equal(shareTime(null), '');
  assert.equal(shareTime('not a time'), '');
});
