package server

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"kvlab/harness"
	"kvlab/internal/archive"
	"kvlab/internal/server/liveclass"
	"kvlab/internal/server/run"
	"kvlab/internal/server/runq"
)

// apiDoc is docs/api.md, the reference scripts are written against,
// relative to this package's directory.
const apiDoc = "../../docs/api.md"

// apiTypes are the values whose JSON docs/api.md documents: the results
// of every command, the websocket messages in and out, and the quiz
// endpoints' request and replies. Nested struct types are followed.
var apiTypes = []any{
	harness.BenchResult{},
	harness.ProbeResult{},
	harness.ModelResult{},
	harness.CrashResult{},
	run.Msg{},
	runq.QueuedMsg{},
	runq.StartedMsg{},
	runq.ProgressMsg{},
	runq.ResultMsg{},
	runq.DoneMsg{},
	runq.ErrorMsg{},
	quizRequest{},
	quizReply{},
	placeReply{},
	archive.Run{},
	archive.Comparison{},
	// The room's are package liveclass's (liveclass.WireTypes); the share targets are this server's.
	shareTargetRequest{},
	archive.Room{},
	archive.Poll{},
	archive.BoardEntry{},
}

// TestAPIDoc fails when a JSON field exists in the code but docs/api.md
// does not name it as `name`.
func TestAPIDoc(t *testing.T) {
	b, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatalf("reading %s: %v", apiDoc, err)
	}
	doc := string(b)
	fields := map[string][]string{} // JSON name -> where it occurs
	seen := map[reflect.Type]bool{}
	for _, v := range append(apiTypes, liveclass.WireTypes()...) {
		jsonFields(reflect.TypeOf(v), seen, fields)
	}
	if len(fields) < 50 {
		t.Fatalf("found only %d JSON fields in the API types: the walk is broken", len(fields))
	}
	var missing []string
	for name, where := range fields {
		if !strings.Contains(doc, "`"+name+"`") {
			missing = append(missing, name+" ("+strings.Join(where, ", ")+")")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("JSON field %s is not documented in %s as `name`", m, apiDoc)
	}
}

// jsonFields adds the JSON names of t's fields to fields, following
// pointers, slices, arrays, maps and nested or embedded structs, the way
// encoding/json names them.
func jsonFields(t reflect.Type, seen map[reflect.Type]bool, fields map[string][]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			jsonFields(f.Type, seen, fields) // promoted fields
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = append(fields[name], t.String()+"."+f.Name)
		jsonFields(f.Type, seen, fields)
	}
}
