package run

import (
	"fmt"
	"slices"

	"kvlab/harness"
)

// A reader's own store on this disk, and a reader's own workload script.
//
// A run message may carry "source": the Go code of a store of the crash
// exercises, which its lines' -engine mine and -engine mine-null run
// (kvlab/harness/mine). The page's "Measure on this disk" button under an
// exercise's editor sends it. It may carry "script": the Lua text of a
// workload script the reader edited on the page, which its lines'
// -script mine run (kvlab/harness/script). Both are code of the reader's
// running on the server's machine, so a server runs them only when it is
// the reader's own: bound to loopback, with no token (a server with a
// token serves others), and not for a room. Anywhere else the run is
// refused before it is queued, with why (Config.NoReaderCode says it for
// the server). A lesson's own scripts (-script cart, ...) are the
// server's, and run in any server.

// checkSource refuses a run whose lines (their specs, as runq.CheckCell
// parsed them), "source" or "script" would run a reader's code where the
// server does not run it. bad is the 0-based line at fault, or -1 for
// the run as a whole.
func (o *Owner) checkSource(m Msg, specs []*harness.Spec) (bad int, err error) {
	badSource := slices.IndexFunc(specs, func(spec *harness.Spec) bool {
		return slices.ContainsFunc(spec.Engines, harness.TakesSource)
	})
	badScript := slices.IndexFunc(specs, harness.TakesScript)
	// The lesson's own script, as its page shows it before an edit, is
	// the server's: it runs anywhere.
	lessons := m.Script != "" && o.svc.cfg.LessonScript != nil && m.Script == o.svc.cfg.LessonScript(m.Lesson, m.CellID)
	if lessons {
		badScript = -1
	}
	if badSource < 0 && badScript < 0 && m.Source == "" && (m.Script == "" || lessons) {
		return -1, nil
	}
	why := o.svc.cfg.NoReaderCode
	if why == "" && (m.Room != "" || o.follower) {
		why = "a room's runs run on the presenter's machine for everyone, and run no one's code"
	}
	if why != "" {
		if badSource >= 0 || m.Source != "" {
			return badSource, fmt.Errorf("-engine mine runs your store's own code on the machine that serves the page; %s. Run labserver on your own machine (it listens on 127.0.0.1 by default) to measure your store on your disk", why)
		}
		return badScript, fmt.Errorf("-script mine runs your own workload script on the machine that serves the page; %s. Run labserver on your own machine (it listens on 127.0.0.1 by default) to run your script, or run a lesson's own script here (-script cart, mixed, ...)", why)
	}
	if m.Source != "" && badSource < 0 {
		return -1, fmt.Errorf("source: only a line with -engine mine or mine-null runs the code it carries")
	}
	if len(m.Source) > harness.MaxSourceBytes {
		return -1, fmt.Errorf("source: %d bytes; must be at most %d", len(m.Source), harness.MaxSourceBytes)
	}
	if m.Script != "" && badScript < 0 {
		return -1, fmt.Errorf("script: only a line with -script mine runs the script it carries")
	}
	if len(m.Script) > harness.MaxScriptBytes {
		return -1, fmt.Errorf("script: %d bytes; must be at most %d", len(m.Script), harness.MaxScriptBytes)
	}
	return -1, nil
}
