// Tests of shortLabel in results.js: a run is named by what differs
// between the runs shown together.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shortLabel } from '../results.js';

test('shortLabel names the pipeline depth when it differs', () => {
  const runs = [
    { engine: 'kvserver', sync: 'group', threads: 16 },
    { engine: 'kvserver', sync: 'group', threads: 16, pipeline: 16 },
    { engine: 'kvserver', sync: 'always', threads: 16, pipeline: 16 },
  ].map((b) => ({ b }));
  const got = runs.map((x) => shortLabel(x.b, runs));
  assert.deepEqual(got, ['group · one at a time', 'group · pipelined 16 deep', 'always · pipelined 16 deep']);
  assert.equal(new Set(got).size, 3, 'each run has its own label');
});
