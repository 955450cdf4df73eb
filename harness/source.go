package harness

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Engines whose code comes with the run.
//
// Some stores are not compiled into labserver but given as Go source
// with the run: -engine mine runs the store a reader wrote for the crash
// exercises, interpreted (kvlab/harness/mine). On the command line the
// source is a file, -src FILE; a server hands it in Env.Source (the
// page's "Measure on this disk" button sends the editor's code), and
// refuses -src, which would read a file of the server's machine. The
// store decides its own durability: -sync does not reach it, and its
// result says "own" for the sync policy and "interpreted": true.

// SourceOpenFunc opens a store from its source code in dir, which exists
// and is empty. ctx is the run's: when it is done the store stops
// running the code, and a call in progress returns with an error.
type SourceOpenFunc func(ctx context.Context, dir, source string) (Store, error)

// sourceEngines are the engines registered by RegisterSourceEngine;
// guarded by enginesMu.
var sourceEngines = map[string]SourceOpenFunc{}

// SourceSync is what a result of a source engine says for its sync
// policy: the store's code decides when it syncs.
const SourceSync = "own"

// RegisterSourceEngine makes a store whose code comes with the run
// available as -engine name. Like RegisterEngine it is meant for init
// functions and panics on a duplicate.
func RegisterSourceEngine(name string, open SourceOpenFunc) {
	RegisterEngine(name, func(string, string) (Store, error) {
		return nil, errNoSource(name)
	})
	enginesMu.Lock()
	defer enginesMu.Unlock()
	sourceEngines[name] = open
}

// sourceEngine returns the SourceOpenFunc of engine name, if it is one.
func sourceEngine(name string) (SourceOpenFunc, bool) {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	open, ok := sourceEngines[name]
	return open, ok
}

// TakesSource reports whether -engine name runs code given with the run.
func TakesSource(name string) bool {
	_, ok := sourceEngine(name)
	return ok
}

// errNoSource is the error of a source engine run without its code.
func errNoSource(name string) error {
	return fmt.Errorf("-engine %s: runs your store's code, and none was given: on the command line give the file, -src store.go; on the page press \"Measure on this disk\" under the exercise's editor", name)
}

// srcFlag is -src FILE of bench and sweep.
func srcFlag() flagDef {
	return flagDef{name: "src", usage: "Go file of the store that -engine mine runs (a crash exercise's Open, Put and Get); command line only",
		fill: func(s *Spec, a arg, _ Limits) error {
			if !a.given {
				return nil
			}
			if a.v == "" {
				return fmt.Errorf("-src: needs a file name, e.g. -src store.go")
			}
			if !slices.ContainsFunc(s.Engines, TakesSource) {
				return fmt.Errorf("-src %s: only an engine that runs your code takes it (-engine %s); -engine %s runs its own", a.v, strings.Join(sourceEngineNames(), ","), strings.Join(s.Engines, ","))
			}
			return nil
		}}
}

// srcFile is the line's -src FILE, or "". (It is kept only as given, so
// the Spec's fields stay those of every other line.)
func (s *Spec) srcFile() string { return s.given["src"] }

// sourceEngineNames lists the source engines, sorted.
func sourceEngineNames() []string {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	var names []string
	for n := range sourceEngines {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// MaxSourceBytes bounds a store's source: an exercise's store is some
// 3 KB, and a websocket message is at most 64 KiB by default.
const MaxSourceBytes = 32 << 10

// lineSource returns the source a line's source engines run: env.Source,
// or on the command line (readFiles) the file of -src. It is "" for a
// line without a source engine.
func lineSource(s *Spec, env Env, readFiles bool) (string, error) {
	file := s.srcFile()
	if file != "" && !readFiles {
		return "", fmt.Errorf("-src %s: a run line here cannot read a file of the machine it runs on; on the page, \"Measure on this disk\" sends the editor's code", file)
	}
	if !slices.ContainsFunc(s.Engines, TakesSource) {
		return "", nil
	}
	src := env.Source
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("-src %s: %w", file, err)
		}
		src = string(b)
	}
	if len(src) > MaxSourceBytes {
		return "", fmt.Errorf("-engine %s: the store's code is %d bytes: must be at most %d", strings.Join(s.Engines, ","), len(src), MaxSourceBytes)
	}
	for _, e := range s.Engines {
		if TakesSource(e) && strings.TrimSpace(src) == "" {
			return "", errNoSource(e)
		}
	}
	return src, nil
}
