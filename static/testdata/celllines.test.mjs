// The page's splitter (splitCellLines in cells.js) against the cells and
// lines of internal/lesson/testdata/celllines.json, which lesson.CellLines
// writes (go test ./internal/lesson -run CellLinesFile -update): the page
// numbers the lines of a run the way the server does.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { splitCellLines } from '../cells.js';

const cases = JSON.parse(readFileSync(new URL('../../internal/lesson/testdata/celllines.json', import.meta.url), 'utf8'));

test('the file has its cells', () => assert.ok(cases.length >= 10));

for (const c of cases) {
  test(`splitCellLines agrees with lesson.CellLines: ${c.name}`, () => {
    assert.deepEqual(splitCellLines(c.cell), c.lines);
  });
}
