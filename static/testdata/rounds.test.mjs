// Tests of the Run button's count in cells.js: Run runs a cell as many
// rounds as its quizzes are graded on, says so, and shows the round.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { roundsNeeded, runLabel, progressText, startedText } from '../cells.js';

test('Run runs the most rounds any quiz on the cell needs', () => {
  assert.equal(roundsNeeded([]), 1);
  assert.equal(roundsNeeded(['3', '2']), 3);
  assert.equal(runLabel(roundsNeeded(['3'])), 'Run ×3');
  assert.equal(runLabel(1), 'Run');
});

test('the state line says the round', () => {
  assert.equal(progressText(2, 3, 0, 2), 'round 2 of 3 · running line 1 of 2');
  assert.equal(progressText(1, 1, 1, 2), 'running line 2 of 2');
});

test('a started message of a repeated run names its round (a followed run too)', () => {
  assert.equal(startedText({ type: 'started', line: 0, round: 2, rounds: 5 }, 1), 'round 2 of 5 · running line 1 of 1');
  assert.equal(startedText({ type: 'started', line: 1 }, 2), 'running line 2 of 2');
});
