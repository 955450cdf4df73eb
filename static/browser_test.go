package static

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"kvlab/internal/browsertest"
)

// TestBrowserResults draws testdata/results.json (a probe of 512-byte
// writes, a probe without write_size, a crash, a single-point bench, a
// model and a kind the page has no view for) with results.js in headless
// Chromium, the modules served as labserver serves them, and checks what
// each result shows.
func TestBrowserResults(t *testing.T) {
	ctx := browsertest.Start(t, 1000, 900, 2*time.Minute)
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(FS)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, "testdata/results.html") })
	mux.HandleFunc("GET /results.json", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, "testdata/results.json") })
	ts := httptest.NewServer(mux)
	defer ts.Close()
	watch := browsertest.NewWatch(t, ctx, ts.URL)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-rendered="yes"]`)),
	); err != nil {
		watch.Check(t, "drawing results.json")
		t.Fatalf("drawing results.json: %v", err)
	}
	watch.Check(t, "drawing results.json")

	probeRows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.result-probe tbody th')].map((th) => th.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	// The row names the result's write_size; a result without one says nothing about the size.
	if want := []string{"write (512 B)", "write + fdatasync, append", "write", "write + fdatasync, append"}; !slices.Equal(probeRows, want) {
		t.Errorf("probe rows: got %q, want %q", probeRows, want)
	}

	counts, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](`({
		crash: document.querySelectorAll('.result-crash').length,
		crashRows: document.querySelectorAll('.result-crash > div > .table-wrap tbody tr').length,
		benchRows: document.querySelectorAll('.result-bench table.nums tbody tr').length,
		charts: document.querySelectorAll('.result-bench figure.chart svg').length,
		model: document.querySelectorAll('.result-model table.kv tr').length,
		raw: document.querySelectorAll('.result-later pre.json').length,
		nan: [...document.querySelectorAll('svg, svg *')].flatMap((e) => [...e.attributes].map((a) => a.value))
			.concat(document.body.innerText).filter((v) => /NaN|Infinity|undefined/.test(v)).length,
	})`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"crash": 1, "crashRows": 1, "benchRows": 1, "charts": 2, "model": 5, "raw": 1, "nan": 0}
	for k, w := range want {
		if counts[k] != w {
			t.Errorf("%s: got %d, want %d", k, counts[k], w)
		}
	}

	// Its fdatasyncs are split by cause when not all are commits.
	fsyncs, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.result-bench .conditions.fsyncs')?.textContent ?? ''`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "(2 timed: 1 commit, 1 zero-fill, under the write lock)"; !strings.Contains(fsyncs, want) {
		t.Errorf("fdatasync note: got %q, want it to contain %q", fsyncs, want)
	}

	// A -cache cold run says what it evicted and what stayed.
	cache, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.result-bench .conditions.cache')?.textContent ?? ''`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "cold: 2 files, 1.00 MiB evicted after the warmup; 0.2% of their pages still resident"; !strings.Contains(cache, want) {
		t.Errorf("cache note: got %q, want it to contain %q", cache, want)
	}

	// Open-loop runs of one store at three or more rates draw the hockey
	// stick: p99 against offered load, corrected and uncorrected.
	figs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(async () => {
		const { renderLines } = await import('/static/results.js');
		const run = (rate, p99, unc) => ({ kind: 'bench', engine: 'kv', sync: 'always', workload: 'fillrandom', threads: 1, rate, utilization: rate / 5000, ops_per_sec: rate,
			latency: { put: { count: 100, p50_ns: 2e5, p99_ns: p99 } }, latency_uncorrected: { put: { count: 100, p50_ns: 2e5, p99_ns: unc } } });
		const el = renderLines([500, 2000, 8000].map((r, i) => ({ spec: 'bench -rate ' + r, result: run(r, [3e5, 5e5, 4e8][i], 3e5) })));
		return [...el.querySelectorAll('figure svg')].map((f) => f.getAttribute('aria-label'));
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(figs, "Latency against offered load") {
		t.Errorf("three open-loop rates drew %q, want a latency-against-offered-load chart", figs)
	}

	// A cell of two -repeat lines (before, after) links them to the
	// compare page, by their archived run ids; lines of one run each, or
	// of one spec, do not; lines run in rounds link their groups of runs.
	links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(async () => {
		const { cellLinks } = await import('/static/results.js');
		const rep = (sync, n) => Array.from({ length: n }, (_, i) => ({ kind: 'bench', spec: 'bench -sync ' + sync, run: i + 1 }));
		const href = (lines) => { const a = cellLinks(lines)?.querySelector('a.compare-lines'); return a ? a.getAttribute('href') + ' ' + a.textContent : ''; };
		return [
			href([{ spec: 'a', run_id: 12, result: rep('batch:16', 5) }, { spec: 'b', run_id: 13, result: rep('batch:64', 5) }]),
			href([{ spec: 'a', run_id: 12, result: rep('batch:16', 1)[0] }, { spec: 'b', run_id: 13, result: rep('batch:64', 1)[0] }]),
			href([{ spec: 'a', run_id: 12, result: rep('batch:16', 5) }, { spec: 'a', run_id: 13, result: rep('batch:16', 5) }]),
			// Two lines run in five rounds (Repeat 5×): a group of runs each.
			href([{ spec: 'a', run_id: 9, group: [1, 4, 5, 8, 9], result: rep('batch:16', 5) }, { spec: 'b', run_id: 10, group: [2, 3, 6, 7, 10], result: rep('batch:64', 5) }]),
		];
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/compare?a=12&b=13 compare line 1 (5 runs) with line 2 (5 runs)", "", "", "/compare?a=1,4,5,8,9&b=2,3,6,7,10 compare line 1 (5 runs) with line 2 (5 runs)"}; !slices.Equal(links, want) {
		t.Errorf("compare links: got %q, want %q", links, want)
	}

	// A crash -points line says how many of its points were intact; a
	// crash -fail-sync line tells its failed fdatasync's story.
	notes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const base = { kind: 'crash', sync: 'batch:16', power: true, trials: 0, writes: 10, durable_acked: 8, recovered: 9, lost: 0, lost_acked: 3, corrupt: 0, ok: true, per_trial: [] };
		return import('/static/results.js').then(({ renderLines }) => {
			const e = renderLines([
				{ spec: 'crash -points', result: { ...base, crash_points: { workload: 'w', points: 97, intact: 80, by_lost_acked: [80, 2, 0, 15], max_lost_acked: 3, damaged: 87, undetected_damage: 0, inconsistent: 0 } } },
				{ spec: 'crash -fail-sync', result: { ...base, power: false, sync_failure: { failed_sync: 'sync /kv/1.seg', acked: 1007, durable_acked: 992, tried_after: 10, acked_after: 0, same_error_after: 10, durable_seq_at_failure: 992, durable_seq_after: 992, recovered: 992, lost: 0, lost_acked: 15, returned_undurable: 0 } } }]);
			return [e.querySelector('.crash-points')?.textContent ?? '', e.querySelector('.sync-failure')?.textContent ?? ''];
		});
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"80 of 97 crash points intact (no acknowledged write lost), at most 3 lost at one point · points: 80 lost 0, 2 lost 1, 15 lost 3", "after it 0 of 10 Puts acknowledged, 10 refused with the first error; DurableSeq 992 → 992; the reopen found 992, lost 15 acknowledged (0 durable), returned 0 never made durable"} {
		if len(notes) != 2 || !strings.Contains(notes[i], want) {
			t.Errorf("crash note %d: got %q, want it to contain %q", i, notes, want)
		}
	}

	// A run whose units differ from its ops shows units/s beside the table.
	units, err := chromedp.Run(ctx, chromedp.Evaluate[string](`import('/static/results.js').then(({ renderLines }) => {
		const b = { kind: 'bench', engine: 'kv', sync: 'always', workload: 'fillbatch', threads: 1, ops: 1600, units: 100, ops_per_sec: 1600, units_per_sec: 100,
			latency: { put: { count: 1600, p50_ns: 2e5, p99_ns: 3e5 } } };
		return renderLines([{ spec: 'bench -workload fillbatch', result: b }]).querySelector('.conditions.units')?.textContent ?? '';
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if want := "100 units/s (1,600 ops in 100 units)"; !strings.Contains(units, want) {
		t.Errorf("units note: got %q, want it to contain %q", units, want)
	}

	// The bench's device_io is in its conditions.
	device, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.result-bench .conditions.device')?.textContent ?? ''`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "vda: 3 writes (3 per op), 12.0 KiB (106 per logical byte), 2 flushes (2 per op)"; !strings.Contains(device, want) {
		t.Errorf("device note: got %q, want it to contain %q", device, want)
	}

	// Beside the conditions, the USE check: the disk's busy share and
	// requests in flight, the load against the cores, the generator, the
	// errors (the CLI table's line, harness/report.go useLine).
	use, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.result-bench .conditions.use')?.textContent ?? ''`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "USE: disk vda busy 40% of the run, 0.50 requests in flight on average; CPU SATURATED before the run: load 2.50 on 2 cores, busy 62% during it (this process 48%), the hypervisor STOLE 3.0% (60 ms); generator: closed loop, paced by the store; errors: none (a store error stops the run)"; use != want {
		t.Errorf("USE note: got %q, want %q", use, want)
	}
}
