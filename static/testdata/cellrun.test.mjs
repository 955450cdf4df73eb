// Tests of CellRun (cells.js), the websocket cell runner a page reuses:
// it sends one run message and folds the server's replies into lines.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CellRun, cancelNotice } from '../cells.js';

// fakeSocket records what is sent and lets the test deliver messages.
function fakeSocket() {
  const handlers = new Map();
  return {
    sent: [],
    handlers,
    send(m) { this.sent.push(m); },
    on(id, fn) { handlers.set(id, fn); },
    off(id) { handlers.delete(id); },
    deliver(m) { const fn = handlers.get(m.id); if (fn) fn(m); },
  };
}

function start(cell, extra = {}) {
  const sock = fakeSocket();
  const seen = [];
  const run = new CellRun(sock, 'c1#1', { cell, ...extra }, (m) => seen.push(m.type));
  run.start();
  return { sock, run, seen };
}

test('sends one run message with the fields it was given', () => {
  const { sock, run } = start('# two lines\nbench -ops 10\n\nprobe\n', { lesson: '01-x', cell_id: 'c1', repeat: 5 });
  assert.deepEqual(sock.sent, [{ type: 'run', id: 'c1#1', cell: '# two lines\nbench -ops 10\n\nprobe\n', lesson: '01-x', cell_id: 'c1', repeat: 5 }]);
  assert.deepEqual(run.lines.map((l) => l.spec), ['bench -ops 10', 'probe']);
});

test('folds a run: started, progress, result, a line error, done', () => {
  const { sock, run, seen } = start('bench -ops 10\nprobe');
  const msgs = [
    { type: 'queued', id: 'c1#1', position: 1 },
    { type: 'started', id: 'c1#1', line: 0, spec: 'bench -engine kv -ops 10' },
    { type: 'progress', id: 'c1#1', line: 0, elapsed_seconds: 1, ops: 5, ops_per_sec: 5 },
    { type: 'result', id: 'c1#1', line: 0, run_id: 7, result: { kind: 'bench', ops: 10 } },
    { type: 'started', id: 'c1#1', line: 1, spec: 'probe' },
    { type: 'error', id: 'c1#1', line: 1, message: 'line 2 (probe): no disk' },
    { type: 'error', id: 'c1#1', message: 'not about a line' },
    { type: 'done', id: 'c1#1' },
  ];
  for (const m of msgs) sock.deliver(m);
  assert.deepEqual(seen, msgs.map((m) => m.type));
  const [a, b] = run.lines;
  assert.equal(a.spec, 'bench -engine kv -ops 10', 'the server names the line in full');
  assert.equal(a.progress.length, 1);
  assert.deepEqual(a.result, { kind: 'bench', ops: 10 });
  assert.equal(a.run_id, 7);
  assert.equal(b.error, 'line 2 (probe): no disk');
  assert.deepEqual(run.errors, ['not about a line']);
  assert.equal(run.current, 1);
  assert.ok(run.finished && !run.cancelled && !run.complete());
  assert.equal(sock.handlers.size, 0, 'done unregisters the run');
});

test('a repeated line numbers its rounds and keeps their run ids', () => {
  const { sock, run } = start('bench -ops 10');
  sock.deliver({ type: 'result', id: 'c1#1', line: 0, round: 1, run_id: 3, result: { kind: 'bench' } });
  sock.deliver({ type: 'result', id: 'c1#1', line: 0, round: 2, run_id: 4, result: [{ kind: 'bench' }] });
  sock.deliver({ type: 'done', id: 'c1#1' });
  const l = run.lines[0];
  assert.deepEqual(l.result.map((r) => r.run), [1, 2]);
  assert.deepEqual(l.group, [3, 4]);
  assert.equal(l.run_id, 4);
  assert.ok(run.complete());
});

test('a lost connection ends the run with an error', () => {
  const { sock, run } = start('probe');
  sock.deliver({ type: 'lost', id: 'c1#1' });
  assert.ok(run.finished);
  assert.match(run.errors[0], /connection to labserver was lost/);
});

test('cancel sends cancel until the run is done, and the notice says what was left', () => {
  const { sock, run } = start('bench -ops 10\nprobe');
  run.cancel();
  assert.deepEqual(sock.sent.at(-1), { type: 'cancel', id: 'c1#1' });
  sock.deliver({ type: 'started', id: 'c1#1', line: 0, spec: 'bench -ops 10' });
  sock.deliver({ type: 'progress', id: 'c1#1', line: 0, elapsed_seconds: 1.5, ops: 1200 });
  sock.deliver({ type: 'done', id: 'c1#1', cancelled: true });
  assert.ok(run.cancelled);
  const n = sock.sent.length;
  run.cancel();
  assert.equal(sock.sent.length, n, 'no cancel after done');
  assert.match(cancelNotice(run.lines, run.current), /^Cancelled 1\.5 s into line 1, after 1,200 ops\./);
});
