// exercise.js: the in-browser Go exercises. The server renders each
// ```exercise NAME block of a lesson as <div class="exercise"
// data-exercise="NAME"></div> and includes this script only on pages that
// have one.
//
// Everything an exercise shows (title, instructions, starting code,
// solution, test cases) comes from the Go package kvlab/wasm/grader running
// in a Web Worker (exercise-worker.js); nothing is sent to the server. The
// worker starts when the first exercise comes near the viewport.
//
// The student's code is kept in localStorage under kvlab:exercise:NAME.
// A run that has not finished LIMIT_MS after it started is stopped by
// terminating the worker; a fresh one is started for the next run.
(function () {
	"use strict";

	const LIMIT_MS = 2000;
	const scriptURL = (document.currentScript && document.currentScript.src) || "/static/exercise.js";
	const workerURL = new URL("exercise-worker.js", scriptURL).href;

	const blocks = Array.from(document.querySelectorAll(".exercise[data-exercise]"));
	if (blocks.length === 0) {
		return;
	}

	// ---- storage -------------------------------------------------------

	const store = {
		get(name, key) {
			try {
				return localStorage.getItem("kvlab:exercise:" + name + ":" + key);
			} catch (e) {
				return null;
			}
		},
		set(name, key, value) {
			try {
				localStorage.setItem("kvlab:exercise:" + name + ":" + key, value);
			} catch (e) {
				// Storage full or disabled: the code just won't survive a reload.
			}
		},
		remove(name, key) {
			try {
				localStorage.removeItem("kvlab:exercise:" + name + ":" + key);
			} catch (e) {
				// ignore
			}
		},
	};

	// ---- the worker ----------------------------------------------------

	// runner owns the one Web Worker of the page. Runs are serialized: the
	// worker runs one program at a time anyway, and a stop restarts it.
	const runner = {
		worker: null,
		state: "idle", // idle | loading | ready | missing | failed
		exercises: null, // name -> exercise, from the first worker that loaded
		module: null, // the compiled yaegi.wasm, handed to every later worker
		listeners: [], // called on every state change
		current: null, // {id, resolve, reject, timer, t0}
		chain: Promise.resolve(),
		nextID: 1,
		startedAt: 0,
		loadMs: [], // every load, for the page and its tests

		start() {
			if (this.worker) {
				return;
			}
			this.startedAt = performance.now();
			this.setState("loading");
			let w;
			try {
				w = new Worker(workerURL);
			} catch (err) {
				this.fail("could not start a Web Worker: " + err.message);
				return;
			}
			this.worker = w;
			w.onmessage = (e) => this.onMessage(w, e.data);
			w.postMessage({ type: "init", module: this.module });
			w.onerror = (e) => {
				e.preventDefault();
				if (w === this.worker) {
					this.fail("the exercise worker failed: " + (e.message || "unknown error"));
				}
			};
		},

		onMessage(w, m) {
			if (w !== this.worker) {
				return;
			}
			switch (m.type) {
			case "module":
				this.module = m.module;
				break;
			case "ready":
				this.loadMs.push(performance.now() - this.startedAt);
				if (!this.exercises) {
					this.exercises = {};
					for (const ex of m.exercises) {
						this.exercises[ex.name] = ex;
					}
				}
				this.setState("ready");
				break;
			case "missing":
				this.setState("missing");
				this.stopWorker();
				break;
			case "fatal":
				this.fail(m.message);
				break;
			case "started":
				if (this.current && this.current.id === m.id) {
					this.current.timer = setTimeout(() => this.stop(), LIMIT_MS);
				}
				break;
			case "result":
				if (this.current && this.current.id === m.id) {
					const c = this.current;
					clearTimeout(c.timer);
					this.current = null;
					if (m.dead) {
						// The Go program itself stopped: replace the worker.
						w.terminate();
						this.worker = null;
						this.start();
					}
					c.resolve({ result: m.result, ms: performance.now() - c.t0 });
				}
				break;
			}
		},

		fail(message) {
			this.failMessage = message;
			this.stopWorker();
			this.setState("failed");
		},

		stopWorker() {
			if (this.worker) {
				this.worker.terminate();
				this.worker = null;
			}
			if (this.current) {
				const c = this.current;
				clearTimeout(c.timer);
				this.current = null;
				c.reject(new Error(this.failMessage || "the worker stopped"));
			}
		},

		// stop ends a run that is over the limit and starts a fresh worker.
		stop() {
			const c = this.current;
			this.current = null;
			if (this.worker) {
				this.worker.terminate();
				this.worker = null;
			}
			if (c) {
				c.resolve({ stopped: true, ms: performance.now() - c.t0 });
			}
			this.start();
		},

		setState(s) {
			this.state = s;
			for (const fn of this.listeners) {
				fn(s);
			}
		},

		whenReady() {
			this.start();
			if (this.state === "ready") {
				return Promise.resolve();
			}
			return new Promise((resolve, reject) => {
				const fn = (s) => {
					if (s === "ready" || s === "missing" || s === "failed") {
						this.listeners = this.listeners.filter((f) => f !== fn);
						if (s === "ready") {
							resolve();
						} else {
							reject(new Error(s));
						}
					}
				};
				this.listeners.push(fn);
			});
		},

		// run grades src; it resolves to {result, ms} or {stopped, ms}.
		run(name, src) {
			const p = this.chain.then(() => this.whenReady()).then(() => new Promise((resolve, reject) => {
				const id = this.nextID++;
				this.current = { id, resolve, reject, timer: null, t0: performance.now() };
				this.worker.postMessage({ type: "run", id, name, src });
			}));
			this.chain = p.catch(() => {});
			return p;
		},
	};

	// ---- DOM helpers ---------------------------------------------------

	function el(tag, attrs, ...children) {
		const e = document.createElement(tag);
		for (const [k, v] of Object.entries(attrs || {})) {
			if (k === "class") {
				e.className = v;
			} else if (k === "text") {
				e.textContent = v;
			} else if (v !== null && v !== undefined && v !== false) {
				e.setAttribute(k, v === true ? "" : v);
			}
		}
		for (const c of children) {
			if (c !== null && c !== undefined) {
				e.append(c);
			}
		}
		return e;
	}

	// inline renders text with `code` spans.
	function inline(text) {
		const frag = document.createDocumentFragment();
		text.split(/(`[^`]*`)/).forEach((part) => {
			if (part.length > 1 && part.startsWith("`") && part.endsWith("`")) {
				frag.append(el("code", { text: part.slice(1, -1) }));
			} else if (part) {
				frag.append(part);
			}
		});
		return frag;
	}

	function fmtMs(ms) {
		return ms < 1000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(1) + " s";
	}

	// ---- one exercise block -------------------------------------------

	function Exercise(root) {
		this.root = root;
		this.name = root.dataset.exercise;
		root.classList.add("ex");
		root.setAttribute("aria-busy", "true");
		this.status = el("p", { class: "ex-loading", text: "Loading the Go interpreter for this exercise…" });
		root.replaceChildren(this.status);
	}

	Exercise.prototype.showMissing = function () {
		this.root.removeAttribute("aria-busy");
		this.root.replaceChildren(el("div", { class: "ex-missing" },
			el("strong", { text: "This exercise needs the in-browser Go interpreter, which is not built yet." }),
			el("p", {}, "Run ", el("code", { text: "make wasm" }), " (or ", el("code", { text: "make run" }),
				") in the kvlab folder, then reload this page.")));
	};

	Exercise.prototype.showFailed = function (message) {
		this.root.removeAttribute("aria-busy");
		this.root.replaceChildren(el("div", { class: "ex-missing" },
			el("strong", { text: "The Go interpreter could not start." }),
			el("p", { text: message || "" })));
	};

	Exercise.prototype.build = function (ex) {
		if (!ex) {
			this.showFailed("There is no exercise called “" + this.name + "”. Known: " + Object.keys(runner.exercises).join(", ") + ".");
			return;
		}
		this.ex = ex;
		const root = this.root;
		root.removeAttribute("aria-busy");

		const head = el("div", { class: "ex-head" },
			el("span", { class: "ex-kicker", text: "Exercise" }),
			el("h3", { class: "ex-title", text: ex.title }),
			this.badge = el("span", { class: "ex-badge", hidden: true, text: "passed" }));

		const instr = el("div", { class: "ex-instructions" });
		for (const para of ex.instructions.split(/\n\s*\n/)) {
			instr.append(el("p", {}, inline(para.trim())));
		}

		const saved = store.get(this.name, "code");
		this.editor = el("textarea", {
			class: "ex-editor", spellcheck: "false", autocapitalize: "off", autocomplete: "off",
			"aria-label": "Go code for " + ex.title, wrap: "off",
		});
		this.editor.value = saved !== null ? saved : ex.stub;
		this.fitEditor();
		this.editor.addEventListener("input", () => {
			store.set(this.name, "code", this.editor.value);
			this.fitEditor();
		});
		this.editor.addEventListener("keydown", (e) => this.onKey(e));

		this.runBtn = el("button", { type: "button", class: "btn run ex-run", text: "Run tests" });
		this.runBtn.addEventListener("click", () => this.run());
		this.solBtn = el("button", { type: "button", class: "btn ex-show-solution", text: "Show solution", hidden: true });
		this.solBtn.addEventListener("click", () => this.toggleSolution());
		this.resetBtn = el("button", { type: "button", class: "btn ex-reset", text: "Reset" });
		this.resetBtn.addEventListener("click", () => this.reset());
		this.msg = el("span", { class: "ex-msg", role: "status" });
		const actions = el("div", { class: "ex-actions" }, this.runBtn, this.solBtn, this.resetBtn,
			el("span", { class: "ex-keys" }, el("kbd", { text: "Ctrl" }), "+", el("kbd", { text: "Enter" }), " runs"), this.msg);

		this.solution = el("div", { class: "ex-solution", hidden: true },
			el("div", { class: "ex-solution-head", text: "A model solution (your code above is unchanged)" }),
			el("pre", {}, el("code", { text: ex.solution })));
		this.results = el("div", { class: "ex-results", "aria-live": "polite" });

		root.replaceChildren(head, instr, this.editor, actions, this.solution, this.results);
		if (store.get(this.name, "attempted")) {
			this.solBtn.hidden = false;
		}
		if (store.get(this.name, "passed")) {
			this.badge.hidden = false;
		}
	};

	Exercise.prototype.fitEditor = function () {
		const lines = this.editor.value.split("\n").length;
		this.editor.rows = Math.min(Math.max(lines + 1, 8), 40);
	};

	// onKey gives the textarea the few editor keys Go needs: Tab indents
	// (Escape first lets Tab leave the editor), Enter keeps the indentation,
	// Ctrl/Cmd+Enter or Shift+Enter runs the tests.
	Exercise.prototype.onKey = function (e) {
		const ta = this.editor;
		if (e.key === "Escape") {
			this.tabEscapes = true;
			return;
		}
		if ((e.key === "Enter" && (e.ctrlKey || e.metaKey || e.shiftKey))) {
			e.preventDefault();
			this.run();
			return;
		}
		if (e.key === "Tab" && !this.tabEscapes && !e.altKey && !e.ctrlKey && !e.metaKey) {
			e.preventDefault();
			const start = ta.selectionStart;
			const end = ta.selectionEnd;
			const v = ta.value;
			if (start === end && !e.shiftKey) {
				this.replace(start, end, "\t", start + 1, start + 1);
				return;
			}
			// Indent or outdent every selected line.
			const lineStart = v.lastIndexOf("\n", start - 1) + 1;
			const block = v.slice(lineStart, end);
			const lines = block.split("\n");
			const changed = lines.map((l) => (e.shiftKey ? l.replace(/^\t/, "") : "\t" + l)).join("\n");
			this.replace(lineStart, end, changed, start === end ? Math.max(lineStart, start + (changed.length - block.length)) : lineStart, lineStart + changed.length);
			return;
		}
		this.tabEscapes = false;
		if (e.key === "Enter" && !e.altKey) {
			const start = ta.selectionStart;
			const v = ta.value;
			const lineStart = v.lastIndexOf("\n", start - 1) + 1;
			let indent = /^[\t ]*/.exec(v.slice(lineStart, start))[0];
			if (/[{(]\s*$/.test(v.slice(lineStart, start))) {
				indent += "\t";
			}
			e.preventDefault();
			this.replace(start, ta.selectionEnd, "\n" + indent, start + 1 + indent.length, start + 1 + indent.length);
		}
	};

	// replace edits the textarea so that undo still works where supported.
	Exercise.prototype.replace = function (start, end, text, selStart, selEnd) {
		const ta = this.editor;
		ta.setSelectionRange(start, end);
		let done = false;
		try {
			done = document.execCommand && document.execCommand("insertText", false, text);
		} catch (err) {
			done = false;
		}
		if (!done) {
			ta.setRangeText(text, start, end, "end");
			ta.dispatchEvent(new Event("input"));
		}
		ta.setSelectionRange(selStart, selEnd);
	};

	Exercise.prototype.reset = function () {
		const changed = this.editor.value !== this.ex.stub;
		if (changed && !window.confirm("Discard your code for “" + this.ex.title + "” and start again from the starting code?")) {
			return;
		}
		this.editor.value = this.ex.stub;
		store.remove(this.name, "code");
		this.fitEditor();
		this.results.replaceChildren();
		this.msg.textContent = "";
	};

	Exercise.prototype.toggleSolution = function () {
		this.solution.hidden = !this.solution.hidden;
		this.solBtn.textContent = this.solution.hidden ? "Show solution" : "Hide solution";
	};

	Exercise.prototype.run = async function () {
		if (this.running) {
			return;
		}
		this.running = true;
		this.runBtn.disabled = true;
		this.root.classList.add("ex-running");
		this.msg.textContent = runner.state === "ready" ? "Running…" : "Loading the Go interpreter…";
		store.set(this.name, "code", this.editor.value);
		store.set(this.name, "attempted", "1");
		this.solBtn.hidden = false;
		try {
			const out = await runner.run(this.name, this.editor.value);
			this.root.dataset.runMs = String(Math.round(out.ms));
			if (out.stopped) {
				this.showStopped(out.ms);
			} else {
				this.showResult(out.result, out.ms);
			}
		} catch (err) {
			this.msg.textContent = "";
			this.results.replaceChildren(el("div", { class: "ex-error" }, "Could not run the tests: " + err.message));
		} finally {
			this.running = false;
			this.runBtn.disabled = false;
			this.root.classList.remove("ex-running");
		}
	};

	Exercise.prototype.showStopped = function () {
		this.msg.textContent = "";
		this.results.replaceChildren(el("div", { class: "ex-error ex-stopped" },
			el("strong", { text: "stopped after 2 s: does your loop end?" }),
			el("p", { text: "The interpreter was stopped and a fresh one is starting; your code is kept." })));
		this.root.dataset.state = "stopped";
	};

	Exercise.prototype.showResult = function (r, ms) {
		this.root.dataset.state = r.passed ? "passed" : (r.error ? "error" : "failed");
		this.msg.textContent = "ran in " + fmtMs(ms);
		if (r.passed) {
			store.set(this.name, "passed", "1");
			this.badge.hidden = false;
		}
		const parts = [];
		if (r.error) {
			const where = r.error.line > 0 ? "line " + r.error.line + ", column " + r.error.col + ": " : "";
			const box = el("div", { class: "ex-error ex-compile" },
				el("strong", { text: r.error.line > 0 ? "Your code does not compile" : "The tests could not run" }),
				el("p", {}, el("span", { class: "ex-pos", text: where }), r.error.msg));
			parts.push(box);
			if (r.error.line > 0) {
				this.selectLine(r.error.line);
			}
		} else {
			const pass = r.cases.filter((c) => c.pass).length;
			let summary = r.passed ? "All " + r.cases.length + " cases pass." : pass + " of " + r.cases.length + " cases pass.";
			if (r.mutants.length > 0) {
				const caught = r.mutants.filter((m) => m.caught).length;
				summary = r.cases.length + " row" + (r.cases.length === 1 ? "" : "s") + ", " +
					r.cases.filter((c) => c.pass).length + " hold for the correct Percentile; " +
					caught + " of " + r.mutants.length + " broken versions caught." + (r.passed ? " Passed." : "");
			}
			parts.push(el("p", { class: "ex-summary " + (r.passed ? "ex-ok" : "ex-bad"), text: summary }));
			parts.push(this.casesTable(r));
			if (r.mutants.length > 0) {
				parts.push(this.mutantsTable(r.mutants));
			}
		}
		if (r.notes && r.notes.length > 0 && !r.error) {
			const notes = el("div", { class: "ex-notes" });
			for (const n of r.notes) {
				notes.append(el("p", {}, inline(n)));
			}
			parts.push(notes);
		}
		if (r.output) {
			parts.push(el("div", { class: "ex-output" }, el("div", { class: "ex-output-head", text: "Your code printed" }), el("pre", { text: r.output })));
		}
		this.results.replaceChildren(...parts);
	};

	Exercise.prototype.casesTable = function (r) {
		const isRows = r.mutants.length > 0;
		const table = el("table", { class: "ex-table" });
		table.append(el("thead", {}, el("tr", {},
			el("th", { text: "#" }), el("th", { text: "input" }), el("th", { text: "want" }),
			el("th", { text: isRows ? "correct Percentile gives" : "got" }), el("th", { text: "" }), el("th", { text: "hint" }))));
		const tbody = el("tbody");
		r.cases.forEach((c, i) => {
			tbody.append(el("tr", { class: c.pass ? "ex-pass" : "ex-fail" },
				el("td", { class: "ex-num", text: String(i + 1) }),
				el("td", {}, el("code", { text: c.input }), c.note ? el("div", { class: "ex-note", text: c.note }) : null),
				el("td", {}, el("code", { text: c.want })),
				el("td", {}, el("code", { text: c.got })),
				el("td", { class: "ex-verdict", text: c.pass ? "✓ pass" : "✗ fail" }),
				el("td", { class: "ex-hint", text: c.pass ? "" : c.hint })));
		});
		table.append(tbody);
		return el("div", { class: "ex-table-wrap" }, table);
	};

	Exercise.prototype.mutantsTable = function (mutants) {
		const table = el("table", { class: "ex-table ex-mutants" });
		table.append(el("thead", {}, el("tr", {},
			el("th", { text: "broken version" }), el("th", { text: "what it gets wrong" }), el("th", { text: "" }), el("th", { text: "caught by rows / how to catch it" }))));
		const tbody = el("tbody");
		for (const m of mutants) {
			tbody.append(el("tr", { class: m.caught ? "ex-pass" : "ex-fail" },
				el("td", {}, el("code", { text: m.name })),
				el("td", { text: m.description }),
				el("td", { class: "ex-verdict", text: m.caught ? "✓ caught" : "✗ survived" }),
				el("td", { class: "ex-hint", text: m.caught ? m.caught_by.join(", ") : m.hint })));
		}
		table.append(tbody);
		return el("div", { class: "ex-table-wrap" }, el("p", { class: "ex-subhead", text: "Broken versions" }), table);
	};

	Exercise.prototype.selectLine = function (line) {
		const lines = this.editor.value.split("\n");
		if (line > lines.length) {
			return;
		}
		let start = 0;
		for (let i = 0; i < line - 1; i++) {
			start += lines[i].length + 1;
		}
		this.editor.focus({ preventScroll: true });
		this.editor.setSelectionRange(start, start + lines[line - 1].length);
	};

	// ---- wiring --------------------------------------------------------

	const exercises = blocks.map((b) => new Exercise(b));

	runner.listeners.push((s) => {
		if (s === "ready" && !exercises[0].ex && !exercises[0].built) {
			for (const x of exercises) {
				x.built = true;
				x.build(runner.exercises[x.name]);
			}
		} else if (s === "missing") {
			exercises.forEach((x) => x.showMissing());
		} else if (s === "failed") {
			exercises.forEach((x) => (x.built ? null : x.showFailed(runner.failMessage)));
			for (const x of exercises) {
				if (x.built && !x.running) {
					x.msg.textContent = "The Go interpreter stopped: " + runner.failMessage;
				}
			}
		}
	});

	// Start the worker when an exercise is close to being seen.
	if ("IntersectionObserver" in window) {
		const io = new IntersectionObserver((entries) => {
			if (entries.some((e) => e.isIntersecting)) {
				io.disconnect();
				runner.start();
			}
		}, { rootMargin: "800px 0px" });
		blocks.forEach((b) => io.observe(b));
	} else {
		runner.start();
	}

	// For the page's own tests and the curious: load and run timings.
	window.kvlabExercises = { runner, limitMs: LIMIT_MS };
})();
