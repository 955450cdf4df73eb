// results.js: draws what a run measured: the result table, the
// conditions, the charts, probe, model and crash results, and the JSON of
// the run. renderResults(container, lines) is the entry point a page uses;
// lines are what cells.js's CellRun folds from the websocket messages
// ({spec, result, error, run_id, group, prev_group}), or one stored run
// ({spec, result}).

import { h, svg, fmtNs, fmtInt, fmtRate, fmtBytes, sig, specCode } from './dom.js';
import { spectrumChart, histogramChart, timelineChart, sweepChart, modelChart, loadChart, fullSeconds } from './charts.js';

// resultsOf is a line's result objects: a -repeat or sweep line's result
// is an array.
const resultsOf = (r) => (r == null ? [] : Array.isArray(r) ? r : [r]);

// renderResults draws lines into container, replacing what it held.
export function renderResults(container, lines) {
  container.replaceChildren(renderLines(lines));
}

// renderLines draws lines: each line's error, one table and set of
// charts for every bench result together, the crash results side by
// side, probe and model results each on their own, and the JSON.
export function renderLines(lines) {
  const frag = h('div', { class: 'results' });
  const benches = [];
  lines.forEach((l, i) => {
    // Errors about a line from the server already start with "line N (spec):".
    if (l.error) frag.append(h('div', { class: 'error', role: 'alert' }, /^line \d/.test(l.error) ? null : h('b', {}, `line ${i + 1}: `), l.error));
    for (const b of resultsOf(l.result)) if (b && b.kind === 'bench') benches.push({ line: i, b });
  });
  if (benches.length) frag.append(benchView(benches));
  const crashes = lines.flatMap((l) => resultsOf(l.result)).filter((r) => r && r.kind === 'crash');
  if (crashes.length) frag.append(h('div', { class: 'result result-crash' }, crashView(crashes)));
  lines.forEach((l, i) => {
    for (const r of resultsOf(l.result)) {
      if (!r || r.kind === 'bench' || r.kind === 'crash') continue;
      const view = OTHER_VIEWS[r.kind] || rawView;
      frag.append(h('div', { class: `result result-${r.kind || 'other'}` }, h('h4', { class: 'result-title' }, `line ${i + 1}: `, specCode(l.spec)), view(r)));
    }
  });
  const done = lines.filter((l) => l.result);
  if (done.length) {
    frag.append(h('details', { class: 'raw' }, h('summary', {}, 'JSON of this run (archive what you ran)'),
      h('pre', {}, JSON.stringify(done.map((l) => l.result), null, 1))));
  }
  return frag;
}

function rawView(r) { return h('pre', { class: 'json' }, JSON.stringify(r, null, 1)); }

// shortLabel names a run by what differs between the runs shown together.
export function shortLabel(b, all) {
  const keys = ['engine', 'sync', 'workload', 'threads', 'value_size', 'dist', 'keys', 'rate', 'pipeline'];
  const diff = keys.filter((k) => new Set(all.map((x) => String(x.b[k] || ''))).size > 1);
  const part = (k) => (k === 'threads' ? `${b[k]} thr` : k === 'value_size' ? `${b[k]} B` : k === 'keys' ? `${b[k]} keys` : k === 'rate' ? (b.rate ? `${fmtInt(b.rate)}/s open loop` : 'closed loop')
    : k === 'pipeline' ? (b.pipeline ? `pipelined ${b.pipeline} deep` : 'one at a time') : b[k]);
  return (diff.length ? diff : ['engine', 'sync']).map(part).join(' · ') + (b.cancelled ? ' (cancelled)' : '');
}

// benchView is the table, the notes under it and the charts of the
// bench results of a cell's lines ({line, b}).
function benchView(benches) {
  const { series, rows } = benchRows(benches);
  const wrap = h('div', { class: 'result result-bench' },
    h('div', { class: 'table-wrap' }, benchTable(rows, benches.some((x) => x.b.model))),
    conditions(benches.map((x) => x.b)),
    benchNotes(benches));
  const charts = benchCharts(series, benches);
  if (charts.childElementCount) wrap.append(charts);
  return wrap;
}

// benchRows lists the table's rows and the charts' series: one per op
// kind of each run, with the uncorrected and pooled rows after their run.
function benchRows(benches) {
  const series = [];
  const rows = [];
  for (const x of benches) {
    const b = x.b;
    const label = shortLabel(b, benches);
    const unc = b.latency_uncorrected || {};
    const ops = Object.entries(b.latency || {});
    for (const [op, lat] of ops) {
      // Eight colours: the ninth run on reuses them, dashed.
      series.push({ name: `${label}${ops.length > 1 ? ` ${op}` : ''}`, lat, b, k: series.length, dashed: series.length >= 8 });
      rows.push({ label: unc[op] ? `${label} · corrected` : label, op, lat, b, k: series.length - 1, line: x.line });
      // An open-loop run also reports latency from each request's actual
      // start; the lesson on coordinated omission compares the two rows.
      // Labelled with its JSON name, latency_uncorrected, as lessons name it.
      if (unc[op]) rows.push({ label: `${label} · uncorrected (latency_uncorrected)`, op, lat: unc[op], b, k: -1, line: x.line, unc: true });
    }
    if (!ops.length) rows.push({ label, op: '–', lat: {}, b, k: -1, line: x.line });
    // The last run of a -repeat carries the percentiles of all its
    // runs' samples together: not the median of the runs' figures.
    if (b.pooled) {
      for (const [op, lat] of Object.entries(b.pooled.latency || {})) rows.push({ label: `${label} · pooled, ${b.pooled.runs} runs`, op, lat, b, k: -1, line: x.line, pooled: true });
    }
  }
  return { series, rows };
}

// Columns a phone-width page leaves out so p99, max and ops/s fit beside
// the run's name (app.css hides .minor below 560px).
const MINOR_COLS = new Set(['count', 'p95', 'p99.9']);

function benchTable(rows, hasModel) {
  const showOp = new Set(rows.map((r) => r.op)).size > 1;
  const cols = ['run', showOp ? 'op' : null, 'count', 'mean', 'p50', 'p95', 'p99', 'p99.9', 'max', 'ops/s', hasModel ? 'model' : null].filter(Boolean);
  const head = (c) => h('th', { scope: 'col', class: c === 'p99' ? 'p99' : MINOR_COLS.has(c) ? 'minor' : null, title: c === 'model' ? 'ops/s predicted by 1 / (T_write + T_fsync/N); in brackets measured ÷ predicted' : null }, c);
  const row = (r) => h('tr', {},
    h('th', { scope: 'row' }, r.k >= 0 ? h('span', { class: `swatch c${r.k % 8}${r.k >= 8 ? ' dashed' : ''}` }) : null, r.label),
    showOp ? h('td', { class: 'op' }, r.op) : null,
    h('td', { class: 'minor' }, fmtInt(r.lat.count)),
    h('td', {}, fmtNs(r.lat.mean_ns)),
    h('td', {}, fmtNs(r.lat.p50_ns)),
    h('td', { class: 'minor' }, fmtNs(r.lat.p95_ns)),
    h('td', { class: 'p99' }, fmtNs(r.lat.p99_ns)),
    h('td', { class: 'minor' }, fmtNs(r.lat.p999_ns)),
    h('td', {}, fmtNs(r.lat.max_ns)),
    h('td', {}, r.unc || r.pooled ? '' : h('b', {}, fmtRate(r.b.ops_per_sec))),
    hasModel ? modelCell(r.b) : null);
  return h('table', { class: 'nums' }, h('thead', {}, h('tr', {}, cols.map(head))), h('tbody', {}, rows.map(row)));
}

function modelCell(b) {
  const m = b.model;
  return h('td', { class: 'model', title: m ? `measured ÷ model = ${(b.ops_per_sec / m.predicted_ops_per_sec).toFixed(2)}; T_write ${fmtNs(m.t_write_ns)}, T_fsync ${fmtNs(m.t_fsync_ns)} (${m.t_fsync_source || 'probe'}); p99 on the ${m.p99_path} path` : null },
    m ? fmtRate(m.predicted_ops_per_sec) : '–');
}

// benchNotes are the lines under the table: reads' hit rate, the
// fdatasyncs' own distribution, and an open-loop run's utilization and
// censored units.
function benchNotes(benches) {
  const notes = [];
  const label = (x) => shortLabel(x.b, benches);
  const note = (cls, name, ...text) => notes.push(h('p', { class: cls }, h('span', { class: 'cond-label' }, name), ...text));
  // Reads say how many found their key (hit_rate in the JSON).
  const hits = benches.filter((x) => x.b.hit_rate != null);
  if (hits.length) note('conditions', 'Hits: ', hits.map((x) => `${label(x)} ${+(x.b.hit_rate * 100).toFixed(1)}%`).join(' · '), ' of reads found their key.');
  // The fdatasyncs' own distribution (fsync_p50_ns...): the median is
  // what a slow Put waits for; the mean can be dragged by one flush.
  const synced = benches.filter((x) => x.b.fsync_samples > 0);
  if (synced.length) note('conditions fsyncs', 'fdatasync: ', synced.map((x) => `${label(x)} ${fsyncText(x.b)}`).join(' · '));
  // A unit of several ops (updaterandom's Get and Put, fillbatch's -batch
  // Puts, readwhilewriting's writer): the rate of units, what a user of
  // the store waits for, beside the table's ops/s.
  const multi = benches.filter((x) => x.b.units > 0 && x.b.ops !== x.b.units);
  if (multi.length) note('conditions units', 'Units: ', multi.map((x) => `${label(x)} ${fmtRate(x.b.units_per_sec)} units/s (${fmtInt(x.b.ops)} ops in ${fmtInt(x.b.units)} units)`).join(' · '), '; the table\'s ops/s counts every op.');
  // -cache cold: what was evicted before the clock started, and what
  // stayed (cache in the JSON).
  const cold = benches.filter((x) => x.b.cache);
  if (cold.length) note('conditions cache', 'Page cache: ', cold.map((x) => `${label(x)} ${cacheText(x.b.cache)}`).join(' · '));
  // The disk's own counters (device_io): what reached the device, or
  // why nothing could be read.
  const dev = benches.filter((x) => x.b.device_io);
  if (dev.length) note('conditions device', 'Device: ', dev.map((x) => `${label(x)} ${deviceText(x.b.device_io)}`).join(' · '));
  // A replicated engine's members, the model's commit beside the
  // measured one, and what every member's flushes cost the one device
  // they share (replication in the JSON; lesson 12 reads these names).
  const repl = benches.filter((x) => x.b.replication);
  if (repl.length) note('conditions replication', 'Replication: ', repl.map((x) => `${label(x)} ${replicationText(x.b)}`).join(' · '));
  const lost = repl.filter((x) => x.b.replication.failover);
  if (lost.length) note('conditions failover', 'Leader lost: ', lost.map((x) => `${label(x)} ${failoverText(x.b)}`).join(' · '));
  // -fanout K: the tail at scale, and what -hedge saved and cost.
  const fan = benches.filter((x) => x.b.fanout);
  if (fan.length) note('conditions fanout', 'Fan-out: ', fan.map((x) => `${label(x)} ${fanoutText(x.b.fanout)}`).join(' · '));
  // The USE check beside the conditions (harness/report.go, useLine):
  // utilization, saturation and errors of the disk, the CPU and the
  // load generator, over all the runs shown.
  note('conditions use', 'USE: ', useText(benches.map((x) => x.b)));
  // Open loop: utilization is the check, and units that never started
  // are censored samples no percentile above includes.
  const open = benches.filter((x) => x.b.rate);
  // Beside it, the pacer lag: the load generator's own lateness, which the
  // corrected latencies include (pacer_lag in the JSON).
  // Its mean and delay_p99_ns too, under their JSON names, which lesson
  // 10 asks the reader to read.
  const lagText = (b) => (b.pacer_lag ? `, pacer lag p50 ${fmtNs(b.pacer_lag.p50_ns)} p99 ${fmtNs(b.pacer_lag.p99_ns)} max ${fmtNs(b.pacer_lag.max_ns)} (pacer_lag: mean ${fmtNs(b.pacer_lag.mean_ns)}, delay_p99_ns ${fmtNs(b.pacer_lag.delay_p99_ns)})` : '');
  if (open.length) note('conditions open-loop', 'Open loop: ', open.map((x) => `${label(x)} utilization ${sig(x.b.utilization || 0)} (rate × mean service time)${lagText(x.b)}`).join(' · '));
  const late = open.filter((x) => x.b.generator_late);
  if (late.length) {
    notes.push(h('p', { class: 'callout backlog', role: 'note' }, h('b', {}, 'Late generator: '),
      late.map((x) => `${label(x)}: the load generator, not the store, was late (its delay p99 ${fmtNs(x.b.pacer_lag.delay_p99_ns)} is most of the corrected p99)`).join(' · '),
      '. The corrected percentiles above measure the generator more than the store.'));
  }
  const behind = open.filter((x) => x.b.backlog_units > 0);
  if (behind.length) {
    notes.push(h('p', { class: 'callout backlog', role: 'note' }, h('b', {}, 'Censored: '),
      behind.map((x) => `${label(x)}: ${fmtInt(x.b.backlog_units)} of ${fmtInt(x.b.units + x.b.backlog_units)} units due never started (${x.b.behind === 'generator' ? 'the load generator' : 'the store'} fell behind)`).join(' · '),
      '. Their latency, the worst of the run, is in no row above: the corrected percentiles are incomplete without them.'));
  }
  return notes;
}

// replicationText is the CLI table's replication line
// (harness/replication.go, replicationLine), with the JSON's names.
function replicationText(b) {
  const r = b.replication;
  const members = (r.members || []).map((m) => `${m.name} (${m.role}${m.state ? `, ${m.state}` : ''})${m.flushes_counted ? ` ${sig(m.flushes_per_commit)} flushes/commit` : ''}`).join(', ');
  const put = b.latency && b.latency.put;
  const model = r.model_commit_ns ? `; model_commit_ns ${fmtNs(r.model_commit_ns)}${put && b.threads === 1 ? ` (measured p50 ${fmtNs(put.p50_ns)})` : ''}` : '';
  const dev = r.device_flushes_per_commit != null ? `; device_flushes_per_commit ${sig(r.device_flushes_per_commit)} (all members, net of ${sig(r.device_idle_flushes_per_sec)}/s idle)` : (r.device_unavailable ? `; device: ${r.device_unavailable}` : '');
  const queue = b.device_io && b.device_io.mean_in_flight != null ? `; device_io.mean_in_flight ${sig(b.device_io.mean_in_flight)}${b.device_io.other_writers ? ' (other_writers: other programs wrote to the device too)' : ''}` : '';
  const net = r.net ? `; net +${fmtNs(r.net.delay_ns)} each way, rtt_p50_ns ${fmtNs(r.net.rtt_p50_ns)}` : '';
  return `leader ${r.leader}; ${members}${model}${dev}${queue}${net}`;
}

// failoverText is what -kill leader did (replication.failover).
function failoverText(b) {
  const f = b.replication.failover;
  const s = (ns) => `${(ns / 1e9).toFixed(2)} s`;
  let t = `${f.killed} killed at ${s(f.killed_after_ns)}`;
  if (f.new_leader) t += `; ${f.new_leader} elected (elected_after_ns ${s(f.elected_after_ns)}), writes resumed (resumed_after_ns ${s(f.resumed_after_ns || 0)})`;
  t += f.writes_stopped ? '; writes_stopped true: no automatic failover, no writes after the kill' : '; writes_stopped false';
  const slow = (b.timeline || []).reduce((a, p) => ((p.max_ns || 0) > (a.max_ns || 0) ? p : a), {});
  if (slow.max_ns) t += `; the timeline's slowest op: second ${slow.second}, max_ns ${fmtNs(slow.max_ns)}`;
  const c = f.ack_check;
  if (c) t += `; ack_check: ${fmtInt(c.acknowledged)} acknowledged writes (${fmtInt(c.keys)} keys) read back from ${c.read_from}, lost ${fmtInt(c.lost)}${c.error ? ` (incomplete: ${c.error})` : ''}`;
  return t;
}

// fanoutText is the CLI table's fan-out line (harness/fanout.go).
function fanoutText(f) {
  let t = `K = ${f.k}: past_single_p99 ${(f.past_single_p99 * 100).toFixed(1)}% of units slower than one request's p99 (${fmtNs(f.single_p99_ns)}); independent requests predict ${(f.predicted * 100).toFixed(1)}%`;
  if (f.hedge) t += `; hedge at ${f.hedge}: unit_p99_ns ${fmtNs(f.unit_p99_ns)}, unhedged_unit_p99_ns ${fmtNs(f.unhedged_unit_p99_ns)}, hedge_extra_pct ${sig(f.hedge_extra_pct || 0)}% more requests`;
  return t;
}

function cacheText(c) {
  if (c.unavailable) return `NOT cold (${c.unavailable})`;
  const res = c.resident_after == null ? '' : `; ${(c.resident_after * 100).toFixed(1)}% of their pages still resident`;
  return `cold: ${fmtInt(c.files)} files, ${fmtBytes(c.bytes)} evicted after the warmup${res}${c.note ? `; ${c.note}` : ''}`;
}

function deviceText(d) {
  if (d.unavailable) return `no counters (${d.unavailable})`;
  const per = (v, what) => (v == null ? '' : ` (${+v.toPrecision(3)} ${what})`);
  const flushes = d.flush_requests == null ? `; ${d.flush_missing}` : `, ${fmtInt(d.flush_requests)} flushes${per(d.flushes_per_op, 'per op')}`;
  const reads = d.read_requests > 0 ? `, ${fmtInt(d.read_requests)} reads (${fmtBytes(d.read_bytes)})` : '';
  return `${d.device}: ${fmtInt(d.write_requests)} writes${per(d.write_requests_per_op, 'per op')}, ${fmtBytes(d.write_bytes)}${per(d.device_bytes_per_logical_byte, 'per logical byte')}${reads}${flushes}; whole-device counts`;
}

// useText is the CLI table's USE line (harness/report.go, useLine) for
// the runs bs: each figure, or its range over the runs.
function useText(bs) {
  const span = (v, f) => { const lo = f(Math.min(...v)), hi = f(Math.max(...v)); return lo === hi ? hi : `${lo}–${hi}`; };
  const pct = (v) => (v * 100).toFixed(0), two = (v) => v.toFixed(2);
  const counted = bs.filter((b) => b.device_io && !b.device_io.unavailable);
  const measured = counted.filter((b) => b.device_io.busy_fraction != null && b.device_io.mean_in_flight != null);
  const parts = [measured.length === bs.length
    ? `disk ${measured[0].device_io.device} busy ${span(measured.map((b) => b.device_io.busy_fraction), pct)}% of the run, ${span(measured.map((b) => b.device_io.mean_in_flight), two)} requests in flight on average`
    : counted.length === bs.length ? `disk ${counted[0].device_io.device}: busy time not measured` : 'disk: no counters'];
  const cores = Math.max(0, ...bs.map((b) => (b.probe && b.probe.cores) || 0));
  const loads = bs.map((b) => b.load_avg).filter((v) => v > 0);
  if (!loads.length) parts.push('CPU load unknown');
  else if (cores && Math.max(...loads) > cores) parts.push(`CPU SATURATED before the run: load ${span(loads, two)} on ${cores} cores`);
  else parts.push(`CPU load ${span(loads, two)}${cores ? ` on ${cores} cores` : ''} before the run`);
  // The processors during the run (cpu): busy share, this process's, and
  // the hypervisor's steal, called out from 1 % (harness StolenFraction).
  const cpus = bs.map((b) => b.cpu).filter((c) => c && !c.unavailable && c.interval_ms > 0);
  if (cpus.length === bs.length) {
    const steal = cpus.map((c) => c.steal_fraction), one = (v) => (v * 100).toFixed(1);
    let during = `, busy ${span(cpus.map((c) => c.busy_fraction), pct)}% during it (this process ${span(cpus.map((c) => c.process_fraction), pct)}%)`;
    during += Math.max(...steal) >= 0.01
      ? `, the hypervisor STOLE ${span(steal, one)}% (${span(cpus.map((c) => c.steal_ms), (v) => v.toFixed(0))} ms)`
      : `, steal ${span(steal, one)}%`;
    parts[parts.length - 1] += during;
  }
  const open = bs.filter((b) => b.rate > 0), late = open.filter((b) => b.generator_late);
  let gen = !open.length ? 'generator: closed loop, paced by the store' : !late.length ? 'generator on time' : open.length === 1 ? 'generator LATE' : `generator LATE in ${late.length} of ${open.length} open-loop runs`;
  const lags = open.filter((b) => b.pacer_lag).map((b) => b.pacer_lag.p99_ns);
  if (lags.length) gen += ` (pacer lag p99 ${lags.length > 1 ? 'up to ' : ''}${fmtNs(Math.max(...lags))})`;
  const backlog = bs.reduce((n, b) => n + (b.backlog_units || 0), 0);
  if (backlog) gen += `, ${fmtInt(backlog)} units never started`;
  parts.push(gen);
  const cancelled = bs.filter((b) => b.cancelled).length;
  parts.push(!cancelled ? 'errors: none (a store error stops the run)' : bs.length === 1 ? 'errors: cancelled before the end' : `errors: ${cancelled} of ${bs.length} runs cancelled before the end`);
  return parts.join('; ');
}

function fsyncText(b) {
  // The model's own p99_path and loss window beside the measured path,
  // under their JSON names (lesson 5 asks for them).
  const m = b.model || {};
  const said = m.p99_path ? `; the model's p99_path ${m.p99_path}${m.loss_window_ms ? `, loss_window_ms ${sig(m.loss_window_ms)}` : ''}` : '';
  const path = m.measured_p99_path ? `; put p99 on the ${m.measured_p99_path} path (threshold ${fmtNs(m.p99_threshold_ns)})${said}` : said;
  return `p50 ${fmtNs(b.fsync_p50_ns)}, p99 ${fmtNs(b.fsync_p99_ns)}, max ${fmtNs(b.fsync_max_ns)}, mean ${fmtNs(b.fsync_mean_ns)} (${fmtInt(b.fsync_samples)} timed${causeText(b.fsyncs_by_cause)})${path}`;
}

// FSYNC_CAUSES names the fsyncs_by_cause keys, in the CLI table's order
// (harness/report.go, fsyncCauses).
const FSYNC_CAUSES = [['commit', 'commit'], ['seal', 'segment seal'], ['prealloc', 'zero-fill, under the write lock'], ['compaction', 'compaction'], ['hint', 'hint file'], ['open', 'open']];

// causeText is ": 5 commit, 2 zero-fill…" when a store splits its
// fdatasyncs by cause and not all of them are the policy's own commits;
// otherwise nothing.
function causeText(by) {
  if (!by) return '';
  const parts = FSYNC_CAUSES.filter(([k]) => by[k] > 0).map(([k, name]) => `${fmtInt(by[k])} ${name}`);
  const total = FSYNC_CAUSES.reduce((n, [k]) => n + (by[k] || 0), 0);
  return total === (by.commit || 0) ? '' : `: ${parts.join(', ')}`;
}

// benchCharts draws the charts the results support: spectrum and
// histogram when the runs carry them, a saturation curve for a line that
// ran several thread counts, measured vs model for two or more batch:N
// policies, and the timeline of runs that lasted over a second.
function benchCharts(series, benches) {
  const charts = h('div', { class: 'charts' });
  const spec = series.filter((x) => x.lat && x.lat.spectrum && x.lat.spectrum.length);
  if (spec.length) charts.append(figure('Latency percentile spectrum', spectrumChart(spec), 'x: percentile on a log scale of 1/(1−p), so each tick is one more nine; y: latency, log scale.'));
  const hist = series.filter((x) => x.lat && x.lat.histogram && x.lat.histogram.length);
  // The two-paths reading only fits writes under a policy that sometimes syncs.
  const syncedWrites = hist.some((x) => x.lat === (x.b.latency || {}).put && /^(batch|periodic|group|always)/.test(x.b.sync || ''));
  if (hist.length) charts.append(figure('Latency histogram', histogramChart(hist), `Share of operations per latency bucket (log-spaced).${syncedWrites ? ' Two humps mean two paths: the fast write and the one that waits for fdatasync.' : ''}`));
  const byLine = new Map();
  for (const x of benches) byLine.set(x.line, [...(byLine.get(x.line) || []), x.b]);
  const sweepSets = [...byLine.values()].filter((bs) => bs.length > 1 && new Set(bs.map((b) => b.threads)).size > 1);
  if (sweepSets.length) charts.append(figure('Saturation curve', sweepChart(sweepSets), 'Throughput (line) and p99 latency (dashed, right axis) as threads increase.'));
  // Open-loop runs of one store at three or more rates: the hockey stick.
  const paced = benches.map((x) => x.b).filter((b) => b.rate > 0);
  if (new Set(paced.map((b) => b.rate)).size >= 3 && new Set(paced.map((b) => `${b.engine} ${b.sync} ${b.threads}`)).size === 1) {
    charts.append(figure('Latency against offered load', loadChart(paced), 'p99 at each offered rate, log scales. Solid: from each unit\'s intended start (what a user waits); dashed: the store\'s own service time. Where they part, requests queue.'));
  }
  const batch = benches.map((x) => x.b).filter((b) => /^batch:\d+$/.test(b.sync || '') && b.model && b.model.predicted_ops_per_sec);
  if (new Set(batch.map((b) => b.sync)).size >= 2) charts.append(figure('Measured vs model', modelChart(batch), 'Dots: measured ops/s for each batch:N. Rings and dashes: what the model predicts for that run.'));
  const tl = benches.map((x, k) => ({ b: x.b, k, name: shortLabel(x.b, benches), pts: fullSeconds(x.b) })).filter((x) => x.pts.length > 1);
  if (tl.length) charts.append(figure('Throughput timeline', timelineChart(tl), 'ops/s in each second of the measured run.'));
  return charts;
}

// conditions is the line that says what the figures were measured on.
function conditions(bs) {
  const b = bs[0];
  const p = b.probe || {};
  const parts = [];
  if (p.fs || p.device) parts.push(`${p.fs || '?'} on ${p.device || '?'}${p.rotational === true ? ' (rotational)' : p.rotational === false ? ' (non-rotational)' : ''}`);
  if (p.write_ns) parts.push(`write ≈ ${fmtNs(p.write_ns)}`);
  if (p.fdatasync_ns) parts.push(`${p.sync_call || 'fdatasync'} ≈ ${fmtNs(p.fdatasync_ns)}`);
  if (p.cores) parts.push(`${p.cores} cores`);
  const w = [...new Set(bs.map((x) => x.workload))].join('/');
  parts.push(`${w}, ${fmtBytes(b.value_size)} values, ${fmtInt(b.keys)} keys ${b.dist || ''}`.trim());
  const thr = [...new Set(bs.map((x) => x.threads))];
  parts.push(`${thr.join(',')} thread${thr.length === 1 && thr[0] === 1 ? '' : 's'}`);
  // fsyncs_counted false: the engine cannot report its syncs (bbolt), so 0 means unknown.
  const fs = (x) => (x.fsyncs_counted === false ? 'n/a' : fmtInt(x.fsyncs));
  if (bs.some((x) => x.fsyncs)) parts.push(`${bs.map(fs).join(' / ')} fsyncs (mean ${bs.filter((x) => x.fsync_mean_ns).map((x) => fmtNs(x.fsync_mean_ns)).join(' / ') || '–'})`);
  const exact = bs.every((x) => Object.values(x.latency || {}).every((l) => l.exact));
  parts.push(exact ? 'exact percentiles' : 'percentiles from a histogram');
  if (p.go) parts.push(p.go);
  // The load average before each run: above the core count, something else was competing.
  const loads = bs.map((x) => x.load_avg).filter((x) => x > 0);
  if (loads.length) {
    const lo = Math.min(...loads).toFixed(2), hi = Math.max(...loads).toFixed(2);
    parts.push(`load ${lo === hi ? hi : `${lo}–${hi}`} before the run${loads.length > 1 ? 's' : ''}${Number(hi) > (p.cores || 1) ? ' (busy machine: expect noise)' : ''}`);
  }
  return h('p', { class: 'conditions' }, h('span', { class: 'cond-label' }, 'Conditions: '), parts.join(' · '));
}

// figure puts a chart from charts.js ({svg, legend}) under its title and
// caption; the legend shows when it tells series apart.
function figure(title, chart, caption) {
  const items = chart.legend;
  const legend = items.length > 1 || items.some((i) => i.dashed)
    ? h('div', { class: 'legend' }, items.map((it) => h('span', {}, h('span', { class: `swatch c${it.k % 8}${it.dashed ? ' dashed' : ''}` }), it.name)))
    : null;
  return h('figure', { class: 'chart' }, h('figcaption', {}, h('b', {}, title), h('span', {}, caption)), h('div', { class: 'chart-body' }, svg(chart.svg), legend));
}

function kvTable(pairs) {
  return h('table', { class: 'kv' }, h('tbody', {}, pairs.filter((p) => p[1] != null && p[1] !== '').map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', {}, v)))));
}

// probeView shows the raw cost of a write of write_size bytes and of
// the same write + fdatasync on the data directory's disk, and the
// model's inputs.
function probeView(r) {
  const size = r.write_size ? ` (${r.write_size} B)` : '';
  const row = (name, x) => x ? h('tr', {}, h('th', { scope: 'row' }, name), h('td', {}, fmtInt(x.iterations)), h('td', {}, fmtNs(x.mean_ns)), h('td', {}, fmtNs(x.p50_ns)), h('td', { class: 'p99' }, fmtNs(x.p99_ns)), h('td', {}, fmtNs(x.max_ns)), h('td', {}, h('b', {}, fmtRate(x.ops_per_sec)))) : null;
  const t = h('table', { class: 'nums' },
    h('thead', {}, h('tr', {}, ['', 'count', 'mean', 'p50', 'p99', 'max', 'ops/s'].map((c) => h('th', { scope: 'col', class: c === 'p99' ? 'p99' : null }, c)))),
    h('tbody', {}, row(`write${size}`, r.write), row(`write + ${r.sync_call || 'fdatasync'}, append`, r.write_fdatasync),
      row(`write + ${r.sync_call || 'fdatasync'}, overwrite`, r.write_fdatasync_overwrite)));
  const ratio = r.write && r.write_fdatasync && r.write.mean_ns ? r.write_fdatasync.mean_ns / r.write.mean_ns : null;
  return h('div', {}, h('div', { class: 'table-wrap' }, t),
    ratio ? h('p', { class: 'callout' }, 'A durable write costs ', h('b', {}, `${ratio >= 10 ? Math.round(ratio).toLocaleString('en-US') : ratio.toFixed(1)}×`), ' a plain write on this disk (compare the means).') : null,
    // The two figures the batch model and lesson 5's quizzes use, by their JSON names.
    r.write_ns != null && r.fdatasync_ns != null ? h('p', { class: 'callout' }, 'Model inputs: ', h('code', {}, 'write_ns'), ' = ', h('b', {}, fmtNs(r.write_ns)), ' (T_write, the mean write) · ', h('code', {}, 'fdatasync_ns'), ' = ', h('b', {}, fmtNs(r.fdatasync_ns)), ' (T_fsync, the mean write + fdatasync minus the mean write, appending)',
      r.fdatasync_overwrite_ns != null ? [' · ', h('code', {}, 'fdatasync_overwrite_ns'), ' = ', h('b', {}, fmtNs(r.fdatasync_overwrite_ns)), ' (the same into allocated space: kv\'s T_fsync)'] : null, '.') : null,
    h('p', { class: 'conditions' }, h('span', { class: 'cond-label' }, 'Conditions: '),
      [r.fs && `${r.fs} on ${r.device}${r.rotational ? ' (rotational)' : ' (non-rotational)'}`, r.cpu, r.cores && `${r.cores} cores`, r.ram_bytes && `${fmtBytes(r.ram_bytes)} RAM`, r.kernel, r.go, r.free_bytes && `${fmtBytes(r.free_bytes)} free`, r.dir && `dir ${r.dir}`].filter(Boolean).join(' · ')));
}

function modelView(r) {
  return kvTable([
    ['sync policy', r.sync],
    ['predicted throughput', r.predicted_ops_per_sec != null ? `${fmtRate(r.predicted_ops_per_sec)} ops/s` : null],
    ['T_write', `${fmtNs(r.t_write_ns)}${r.t_put_ns != null ? ` = t_put_ns ${fmtNs(r.t_put_ns)} (a Put)${r.t_fill_share_ns != null ? ` + t_fill_share_ns ${fmtNs(r.t_fill_share_ns)} (its share of a zero-fill: t_fill_ns ${fmtNs(r.t_fill_ns)} per ${fmtBytes(r.fill_bytes)}, ${sig(r.bytes_per_put)} bytes per Put)` : ''}` : ''}`],
    ['T_fsync', `${fmtNs(r.t_fsync_ns)}${r.source ? ` (from ${r.source})` : ''}`],
    ['p99 lands on', r.p99_path ? `the ${r.p99_path} path` : null],
    ['loss window', r.loss_window_writes != null ? `${fmtInt(r.loss_window_writes)} writes${r.loss_window_ms ? ` / ${sig(r.loss_window_ms)} ms` : ''}${r.write_rate ? ` at ${fmtRate(r.write_rate)} writes/s (${r.rate_source === 'run' ? 'the rate a run measured' : 'the model\'s rate: no run measured one'})` : ''}` : null],
  ]);
}

// OTHER_VIEWS draw the kinds of result that are not bench or crash (the
// kinds are harness.DecodeResult's: bench, probe, model, crash, script); a kind
// without a view shows as JSON.
const OTHER_VIEWS = { probe: probeView, model: modelView, script: scriptView };

// scriptView draws one bench -script line: units and primitive ops per
// second, the hit rate, and each op kind's latency (one sample per engine
// call) with whether the engine did it natively.
function scriptView(r) {
  const head = [
    h('b', {}, r.engine), r.floor ? ' (the framework\'s floor: a store that does nothing)' : null,
    r.sweep_param ? ` · ${r.sweep_param} = ${fmtInt(r.sweep_value)}` : null, r.cancelled ? ' (cancelled)' : null, ': ',
    h('b', {}, `${fmtRate(r.wu_per_sec)} wu/s`), r.ops !== r.units ? ` · ${fmtRate(r.ops_per_sec)} ops/s` : null,
    r.get_hits + r.get_misses > 0 ? ` · get hit rate ${(100 * r.hit_rate).toFixed(1)} %` : null,
  ];
  const native = (op) => (r.native && op in r.native ? (r.native[op] ? 'yes' : 'no') : '');
  const rows = Object.entries(r.by_op || {}).map(([op, x]) => h('tr', {}, h('th', { scope: 'row' }, op), h('td', {}, fmtInt(x.calls)), h('td', {}, fmtInt(x.ops)),
    h('td', {}, fmtNs(x.p50_ns)), h('td', { class: 'p99' }, fmtNs(x.p99_ns)), h('td', {}, fmtNs(x.p999_ns)), h('td', {}, fmtNs(x.max_ns)), h('td', {}, native(op))));
  const t = h('table', { class: 'nums' },
    h('thead', {}, h('tr', {}, ['op', 'calls', 'ops', 'p50', 'p99', 'p99.9', 'max', 'native'].map((c) => h('th', { scope: 'col', class: c === 'p99' ? 'p99' : null }, c)))),
    h('tbody', {}, rows));
  return h('div', {}, h('p', {}, head), h('div', { class: 'table-wrap' }, t));
}

// The crash tables' columns a phone-width page leaves out: the summary
// keeps acked, durable and both losses; corrupt stays in the summary.
const CRASH_MINOR_COLS = new Set(['trials', 'recovered', 'corrupt']);
// CRASH_PHONE_HIDDEN are crash columns a narrow screen leaves out (the
// per-trial table has them).
const CRASH_PHONE_HIDDEN = new Set(['trials', 'recovered', 'corrupt', 'writes', 'durable_acked']);
// breakable lets a field name wrap after its underscores in a narrow
// column (a zero-width space; the name reads the same).
const breakable = (c) => c.replace(/_/g, '_\u200b');

// CRASH_COLS are the crash table's columns, each headed by the result
// field it shows (the name the lessons use), with what it means.
export const CRASH_COLS = [
  ['trials', 'crashes run'],
  ['writes', 'writes acknowledged before the crash'],
  ['durable_acked', 'of those, acknowledged as durable'],
  ['recovered', 'writes found after recovery'],
  ['lost', 'durable-acknowledged writes missing after recovery: must be 0'],
  ['lost_acked', 'acknowledged writes missing, durable or not: the loss window of the policy'],
  ['lost_buffered', 'of lost_acked, the writes still in the store\'s write buffer at the crash: a kill or a power cut loses them'],
  ['lost_page_cache', 'of lost_acked, the writes handed to the OS but not yet durable: a power cut loses them, a kill cannot'],
  ['corrupt', 'records that failed their checksum'],
];

// crashLabel names a crash line in its table: its sync policy, and how it
// crashed when the lines shown together differ in that (kill or power cut).
export function crashLabel(r, rs) {
  const modes = new Set(rs.map((x) => !!x.power));
  return modes.size > 1 ? `${r.sync} · ${r.power ? 'power cut' : 'kill'}` : r.sync;
}

const crashOK = (r) => (r.ok != null ? r.ok : !r.lost && !r.corrupt);

// crashView shows the crash lines of a cell side by side: one row per
// line, then each line's trials.
function crashView(rs) {
  const bad = rs.filter((r) => !crashOK(r));
  const out = h('div', {},
    h('p', { class: `verdict ${bad.length ? 'bad' : 'ok'}` }, bad.length
      ? `The invariant broke for ${bad.map((r) => r.sync).join(', ')}: writes acknowledged as durable were missing after recovery, or data was corrupt.`
      : `The invariant held ${rs.every((r) => r.crash_points) ? 'at every crash point' : rs.every((r) => r.sync_failure) ? 'through the failed fdatasync' : 'in every trial'}: every write acknowledged as durable was recovered (durable lost = 0), nothing corrupt.`),
    h('div', { class: 'table-wrap' }, h('table', { class: 'nums' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'sync'), CRASH_COLS.map(([c, title]) => h('th', { scope: 'col', class: c === 'lost' ? 'p99' : CRASH_PHONE_HIDDEN.has(c) ? 'minor' : null, title }, breakable(c))))),
      h('tbody', {}, rs.map((r, k) => h('tr', { class: crashOK(r) ? null : 'bad' },
        h('th', { scope: 'row' }, h('span', { class: `swatch c${k % 8}` }), crashLabel(r, rs)),
        CRASH_COLS.map(([c]) => h('td', { class: c === 'lost' ? 'p99' : CRASH_PHONE_HIDDEN.has(c) ? 'minor' : null }, c === 'lost' ? h('b', {}, fmtInt(r[c])) : fmtInt(r[c])))))))),
    h('p', { class: 'conditions' }, h('span', { class: 'cond-label' }, 'Crash: '), rs.some((r) => r.power)
      ? 'power loss is simulated on a crashable in-memory filesystem that forgets everything not yet synced.'
      : 'SIGKILL of a child process; the page cache survives a process kill, so a missing fsync does not show here.'));
  for (const r of rs) {
    if (r.crash_points) out.append(pointsNote(r));
    if (r.sync_failure) out.append(syncFailureNote(r));
    if (r.per_trial && r.per_trial.length) out.append(trialsView(r));
  }
  return out;
}

// pointsNote says what a crash -points line found: how many of its crash
// points lost no acknowledged write, the most one lost, and how many
// points lost how many.
function pointsNote(r) {
  const p = r.crash_points;
  const by = (p.by_lost_acked || []).map((c, n) => (c ? `${fmtInt(c)} lost ${fmtInt(n)}` : null)).filter(Boolean).join(', ');
  return h('p', { class: 'conditions crash-points' }, h('b', {}, r.sync), `: ${fmtInt(p.intact)} of ${fmtInt(p.points)} crash points intact (no acknowledged write lost), at most ${fmtInt(p.max_lost_acked)} lost at one point`,
    by ? ` · points: ${by}` : null, ` · ${fmtInt(p.damaged)} images with a durable record damaged, ${fmtInt(p.undetected_damage)} not refused · `, h('span', { class: 'minor' }, p.workload));
}

// syncFailureNote tells a crash -fail-sync line's story: what was
// acknowledged before the failed fdatasync, after it, and what a reopen
// in the same boot found.
function syncFailureNote(r) {
  const f = r.sync_failure;
  return h('p', { class: 'conditions sync-failure' }, h('b', {}, r.sync),
    `: ${f.failed_sync || 'an fdatasync'} failed after ${fmtInt(f.acked)} acknowledged Puts (${fmtInt(f.durable_acked)} covered by an fdatasync that succeeded); after it ${fmtInt(f.acked_after)} of ${fmtInt(f.tried_after)} Puts acknowledged, ${fmtInt(f.same_error_after)} refused with the first error; DurableSeq ${fmtInt(f.durable_seq_at_failure)} → ${fmtInt(f.durable_seq_after)}; the reopen found ${fmtInt(f.recovered)}, lost ${fmtInt(f.lost_acked)} acknowledged (${fmtInt(f.lost)} durable), returned ${fmtInt(f.returned_undurable)} never made durable`);
}

function trialsView(r) {
  const cols = ['n', 'writes', 'durable_acked', 'recovered', 'lost', 'lost_acked', 'corrupt', 'crash_after_ms'].filter((c) => c in r.per_trial[0]);
  // The error column only when a trial has one: it is the widest.
  const errors = r.per_trial.some((t) => t.error);
  const minor = (c) => (CRASH_MINOR_COLS.has(c.replace(/_/g, ' ')) ? 'minor' : null);
  return h('details', {}, h('summary', {}, `${r.sync}: per trial (${r.per_trial.length})`), h('div', { class: 'table-wrap' }, h('table', { class: 'nums' },
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col', class: minor(c) }, c === 'crash_after_ms' ? 'crash after' : c.replace(/_/g, ' '))), errors ? h('th', { scope: 'col' }, 'error') : null)),
    h('tbody', {}, r.per_trial.map((t) => h('tr', { class: t.lost ? 'bad' : null }, cols.map((c) => h('td', { class: minor(c) }, c === 'crash_after_ms' ? `${sig(t[c] || 0)} ms` : fmtInt(t[c]))), errors ? h('td', { class: 'error-cell' }, t.error || '') : null))))));
}

// offerIfComparable shows el (a compare link against the server's runs
// before the change) only once the server says it has such runs: a
// cell's first group has none, and the page would be a refusal.
function offerIfComparable(el) {
  el.hidden = true;
  const a = el.querySelector('a');
  if (typeof fetch !== 'function' || !a) return;
  fetch(`${a.getAttribute('href')}&check=1`).then((r) => (r.ok ? r.json() : null)).then((j) => { if (j && j.comparable) el.hidden = false; }, () => {});
}

// cellLinks links each line's result to its permalink, and a repeated
// line's group to the compare page: against the group run before the
// spec changed when this browser kept it, else against the server's
// record of the runs of this cell before the change.
export function cellLinks(lines) {
  const items = [];
  lines.forEach((l, i) => {
    if (!l.result) return;
    const pre = lines.length > 1 ? `line ${i + 1}: ` : '';
    if (l.group && l.group.length > 1) {
      const compare = h('span', {}, ' · ', h('a', { href: l.prev_group ? `/compare?a=${l.prev_group.join(',')}&b=${l.group.join(',')}` : `/compare?b=${l.group.join(',')}`, class: 'compare-link' },
        l.prev_group ? 'compare with the group before the change' : 'compare with the runs before the change'));
      if (!l.prev_group) offerIfComparable(compare);
      items.push(h('span', {}, pre, `group of ${l.group.length} runs (`,
        ...l.group.flatMap((id, k) => [k ? ', ' : null, h('a', { href: `/runs/${id}`, class: 'permalink' }, `#${id}`)]), ')', compare));
    } else if (l.run_id) {
      items.push(h('span', {}, pre, h('a', { href: `/runs/${l.run_id}`, class: 'permalink' }, `run #${l.run_id}`)));
    }
  });
  // A cell of two -repeat lines of different specs (before and after,
  // each one archived run of several results): the first against the
  // second on the compare page, which counts each run's results as runs.
  // Lines run in rounds (Run ×N, Repeat 5×) are a group of runs each:
  // the page compares the groups, not each line's last run.
  const repeated = lines.map((l, i) => ({ l, i })).filter(({ l }) => l.run_id && Array.isArray(l.result) && l.result.length > 1 && l.result.every((r) => r && r.spec === l.result[0].spec));
  const ids = (l) => (l.group && l.group.length > 1 ? l.group.join(',') : l.run_id);
  if (repeated.length === 2 && repeated[0].l.result[0].spec !== repeated[1].l.result[0].spec) {
    const [a, b] = repeated;
    items.push(h('a', { href: `/compare?a=${ids(a.l)}&b=${ids(b.l)}`, class: 'compare-link compare-lines' },
      `compare line ${a.i + 1} (${a.l.result.length} runs) with line ${b.i + 1} (${b.l.result.length} runs)`));
  }
  return items.length ? h('p', { class: 'cell-links' }, 'Permalink: ', ...items.flatMap((x, k) => [k ? ' · ' : null, x])) : null;
}
