//go:build js && wasm

// Command worker is the Go side of the in-browser exercises: built with
// GOOS=js GOARCH=wasm into static/wasm/yaegi.wasm, it runs inside the Web
// Worker started by static/exercise-worker.js.
//
// It publishes one global object and then waits forever:
//
//	kvlabGrader.exercises()  -> array of {name, title, instructions, stub, solution, limit_ms, measure}
//	kvlabGrader.run(name, src) -> result object (see grader.Result; JSON field names,
//	                               a crash row's timeline included)
//
// and, once both are in place, calls globalThis.kvlabGraderReady() if the
// host defined it. A run that never returns (the student's loop never ends)
// blocks the whole worker: the page terminates the worker and starts a new
// one, which is the only way to stop a running wasm program.
package main

import (
	"syscall/js"

	"kvlab/gohost"
	"kvlab/wasm/grader"
)

func main() {
	api := js.Global().Get("Object").New()
	api.Set("exercises", js.FuncOf(func(js.Value, []js.Value) any {
		var list []any
		for _, name := range grader.Names() {
			e, _ := grader.Lookup(name)
			list = append(list, map[string]any{
				"name":         e.Name,
				"title":        e.Title,
				"instructions": e.Instructions,
				"stub":         e.Stub,
				"solution":     e.Solution,
				"limit_ms":     e.LimitMs,
				"measure":      e.Measure,
			})
		}
		return list
	}))
	api.Set("run", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) != 2 || args[0].Type() != js.TypeString || args[1].Type() != js.TypeString {
			return resultJS(grader.Result{Error: &gohost.CodeError{Msg: "kvlabGrader.run(name, source): two strings are required"}})
		}
		return resultJS(grader.Run(args[0].String(), args[1].String()))
	}))
	// Warm up: the first run in a fresh instance pays for the engine
	// compiling the interpreter's code paths (about a second on a slow
	// machine). Paying it here, before "ready", keeps it out of the
	// student's first Run and out of the page's time limit.
	if e, err := grader.Lookup("percentile"); err == nil {
		grader.Run(e.Name, e.Solution)
	}
	js.Global().Set("kvlabGrader", api)
	if ready := js.Global().Get("kvlabGraderReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {}
}

// resultJS converts a Result to plain JavaScript values with the JSON
// field names of grader.Result (encoding/json would add to the download).
func resultJS(r grader.Result) map[string]any {
	out := map[string]any{
		"exercise": r.Exercise,
		"passed":   r.Passed,
		"summary":  r.Summary(),
		"output":   r.Output,
	}
	if r.Error != nil {
		out["error"] = map[string]any{"line": r.Error.Line, "col": r.Error.Col, "msg": r.Error.Msg, "text": r.Error.Error()}
	}
	cases := []any{}
	for _, c := range r.Cases {
		jc := map[string]any{"input": c.Input, "want": c.Want, "got": c.Got, "pass": c.Pass, "hint": c.Hint}
		if c.Timeline != nil {
			jc["timeline"] = timelineJS(c.Timeline)
		}
		cases = append(cases, jc)
	}
	out["cases"] = cases
	mutants := []any{}
	for _, m := range r.Mutants {
		by := []any{}
		for _, i := range m.CaughtBy {
			by = append(by, i)
		}
		mutants = append(mutants, map[string]any{"name": m.Name, "description": m.Description, "caught": m.Caught, "caught_by": by, "hint": m.Hint})
	}
	out["mutants"] = mutants
	notes := []any{}
	for _, n := range r.Notes {
		notes = append(notes, n)
	}
	out["notes"] = notes
	return out
}

// timelineJS converts a crash case's Timeline, with the JSON field names
// of grader.Timeline and grader.TimelineStep.
func timelineJS(t *grader.Timeline) map[string]any {
	steps := []any{}
	for _, s := range t.Steps {
		steps = append(steps, map[string]any{
			"kind": s.Kind, "text": s.Text, "n": s.N, "file": s.File, "off": s.Off, "len": s.Len, "size": s.Size,
			"line": s.Line, "fate": s.Fate, "phase": s.Phase, "blame": s.Blame, "err": s.Err,
		})
	}
	return map[string]any{
		"mode": t.Mode, "cut": t.Cut, "steps": steps,
		"blame": t.Blame, "blame_in_recovery": t.BlameInRecovery, "blame_op": t.BlameOp, "line": t.Line,
	}
}
