// bounded.mjs: a helper the chart tests share (not a test file itself).
// A chart that loops forever would hang node --test for good (a test's
// timeout cannot stop a synchronous loop), so within() runs one call of
// a module's export in a worker thread and ends the worker when it takes
// longer than ms: the test then fails, naming the call.

import { Worker } from 'node:worker_threads';

const runner = `
const { parentPort, workerData } = require('node:worker_threads');
import(workerData.url).then((m) => {
  try { parentPort.postMessage({ value: m[workerData.fn](...workerData.args) }); }
  catch (err) { parentPort.postMessage({ error: String(err && err.stack || err) }); }
});`;

// within calls fn(...args), fn being an export of the module at url (a
// file: URL), in a worker; it resolves to the call's result, or rejects
// when the call throws or has not returned after ms.
export function within(ms, url, fn, args) {
  return new Promise((resolve, reject) => {
    const w = new Worker(runner, { eval: true, workerData: { url: String(url), fn, args } });
    const timer = setTimeout(() => {
      w.terminate();
      reject(new Error(`${fn}(${args.map((a) => JSON.stringify(a).slice(0, 80)).join(', ')}) did not return within ${ms} ms`));
    }, ms);
    w.once('message', (m) => {
      clearTimeout(timer);
      w.terminate();
      if (m.error) reject(new Error(`${fn} threw: ${m.error}`));
      else resolve(m.value);
    });
    w.once('error', (err) => { clearTimeout(timer); reject(err); });
  });
}
