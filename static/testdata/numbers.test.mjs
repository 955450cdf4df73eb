// The page's parseNumber (dom.js) against internal/quiz/testdata/numbers.json,
// the table quiz.ParseNumber is tested against too: the page reads a typed
// number, or refuses it with the same words, as the server does.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseNumber } from '../dom.js';

const cases = JSON.parse(readFileSync(new URL('../../internal/quiz/testdata/numbers.json', import.meta.url), 'utf8'));

test('the table has its cases', () => assert.ok(cases.length >= 30));

for (const c of cases) {
  test(`parseNumber agrees with quiz.ParseNumber: ${JSON.stringify(c.in)}`, () => {
    const got = parseNumber(c.in, c.unit || '');
    if (c.error) {
      assert.ok(got.error && got.error.includes(c.error), `got ${JSON.stringify(got)}, want an error with ${JSON.stringify(c.error)}`);
    } else {
      assert.deepEqual(got, { value: c.want }, c.why || '');
    }
  });
}
