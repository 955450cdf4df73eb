// Package workloads holds the project's own workload scripts, in Lua, for
// `labserver bench -script NAME`: each is course material, commented,
// and runs on every engine that can do the operations it uses. A lesson
// cell names them by NAME (a page cannot read the server's files); the
// command line also takes a path to a script of one's own.
package workloads

import (
	"embed"
	"sort"
	"strings"
)

//go:embed *.lua
var files embed.FS

// Lookup returns the text of the shipped script name ("cart" or
// "cart.lua").
func Lookup(name string) (string, bool) {
	b, err := files.ReadFile(strings.TrimSuffix(name, ".lua") + ".lua")
	if err != nil {
		return "", false
	}
	return string(b), true
}

// Names lists the shipped scripts, without ".lua", sorted.
func Names() []string {
	entries, _ := files.ReadDir(".")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".lua"))
	}
	sort.Strings(out)
	return out
}
