// Tests of the number and duration formatting in dom.js. fmtNs is held to
// harness/testdata/durations.json, the table calc.FormatNs (harness/calc) is
// tested against too.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fixed, fmtNs, fmtInt, fmtRate, fmtBytes, fmtMs, sig } from '../dom.js';

const durations = JSON.parse(readFileSync(new URL('../../harness/testdata/durations.json', import.meta.url), 'utf8'));

test('fmtNs agrees with calc.FormatNs on durations.json', () => {
  assert.ok(durations.length > 10, 'the table has its cases');
  for (const c of durations) assert.equal(fmtNs(c.ns), c.text, `fmtNs(${c.ns}) ${c.why || ''}`);
});

test('fmtNs of nothing is a dash', () => {
  for (const x of [null, undefined, NaN, Infinity, -Infinity]) assert.equal(fmtNs(x), '–', String(x));
});

test('fixed rounds like Go strconv.FormatFloat(x, f, d)', () => {
  const cases = [
    [1.25, 1, '1.2'], [1.35, 1, '1.4'], [0.5, 0, '0'], [1.5, 0, '2'], [2.5, 0, '2'], [3.5, 0, '4'],
    [9.995, 2, '9.99'], [9.9951, 2, '10.00'], [0, 2, '0.00'], [-0.4, 0, '-0'], [-1.25, 1, '-1.2'],
    [123456789.125, 2, '123456789.12'], [0.05, 1, '0.1'], [1e-7, 3, '0.000'],
  ];
  for (const [x, d, want] of cases) assert.equal(fixed(x, d), want, `fixed(${x}, ${d})`);
});

test('numbers', () => {
  assert.equal(fmtInt(1234567.4), '1,234,567');
  assert.equal(fmtInt(null), '–');
  assert.equal(fmtRate(15094.3), '15,094');
  assert.equal(fmtRate(12345678), '12.3 M');
  assert.equal(fmtRate(NaN), '–');
  assert.equal(fmtBytes(128), '128 B');
  assert.equal(fmtBytes(4096), '4.00 KiB');
  assert.equal(fmtBytes(3 * 1024 ** 3), '3.00 GiB');
  assert.equal(fmtBytes(null), '–');
  assert.equal(fmtMs(850.4), '850 ms');
  assert.equal(fmtMs(1530), '1.5 s');
  assert.equal(sig(123.4), '123');
  assert.equal(sig(12.34), '12.3');
  assert.equal(sig(1.234), '1.23');
});
