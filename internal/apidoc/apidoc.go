// Package apidoc checks that docs/api.md, the reference scripts are
// written against, names every JSON field of the values a package puts
// on the wire. Only tests import it: each package lists its own wire
// types and calls Check.
package apidoc

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Check fails t for every JSON field of types (their nested and embedded
// structs followed) that the document at path does not name as `name`.
// least guards the walk itself: fewer fields than that is a broken walk.
func Check(t *testing.T, path string, least int, types ...any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	doc := string(b)
	fields := map[string][]string{} // JSON name -> where it occurs
	seen := map[reflect.Type]bool{}
	for _, v := range types {
		jsonFields(reflect.TypeOf(v), seen, fields)
	}
	if len(fields) < least {
		t.Fatalf("found only %d JSON fields in the API types, want at least %d: the walk is broken", len(fields), least)
	}
	var missing []string
	for name, where := range fields {
		if !strings.Contains(doc, "`"+name+"`") {
			missing = append(missing, name+" ("+strings.Join(where, ", ")+")")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("JSON field %s is not documented in %s as `name`", m, path)
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
