// Tests of the crash table in results.js: its columns are headed by the
// result fields lesson 7 tells the reader to read, and two lines that
// differ only in how they crashed are told apart.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CRASH_COLS, crashLabel } from '../results.js';

test('the crash table shows the fields lesson 7 names, under those names', () => {
  const cols = CRASH_COLS.map(([c]) => c);
  for (const name of ['lost', 'lost_acked', 'lost_buffered', 'lost_page_cache', 'durable_acked', 'writes']) {
    assert.ok(cols.includes(name), `no column ${name} in ${cols}`);
  }
});

test('a kill line and a power-cut line of one policy are labelled apart', () => {
  const rs = [{ sync: 'none', power: false }, { sync: 'none', power: true }];
  assert.deepEqual(rs.map((r) => crashLabel(r, rs)), ['none · kill', 'none · power cut']);
  const same = [{ sync: 'none' }, { sync: 'batch:100' }];
  assert.deepEqual(same.map((r) => crashLabel(r, same)), ['none', 'batch:100']);
});
