package gohost

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/traefik/yaegi/interp"

	"kvlab/gohost/kvfs"
)

// output collects what the student's code prints with fmt.Print* or the
// print builtins, for every Program of the process: the caller reads it
// (Output) and clears it (ResetOutput) around each use. Native clears it
// after every call, under nativeMu.
var output bytes.Buffer

// Output returns what the students' code has printed since the last
// ResetOutput.
func Output() string { return output.String() }

// ResetOutput forgets what the students' code has printed.
func ResetOutput() { output.Reset() }

// symbols is the whole standard library a student's code can import. It is
// hand-picked rather than yaegi's stdlib.Symbols: every package listed here
// is compiled into the WebAssembly binary, and the full set is about four
// times the size.
var symbols = interp.Exports{
	"fmt/fmt": {
		"Errorf":   reflect.ValueOf(fmt.Errorf),
		"Sprint":   reflect.ValueOf(fmt.Sprint),
		"Sprintf":  reflect.ValueOf(fmt.Sprintf),
		"Sprintln": reflect.ValueOf(fmt.Sprintln),
		// The Print family writes to the Result's output, not to a console.
		"Print":   reflect.ValueOf(func(a ...any) (int, error) { return fmt.Fprint(&output, a...) }),
		"Printf":  reflect.ValueOf(func(f string, a ...any) (int, error) { return fmt.Fprintf(&output, f, a...) }),
		"Println": reflect.ValueOf(func(a ...any) (int, error) { return fmt.Fprintln(&output, a...) }),
	},
	// The crash exercises' records carry a CRC-32C, as the engine's do.
	"hash/crc32/crc32": {
		"Castagnoli":   reflect.ValueOf(uint32(crc32.Castagnoli)),
		"Checksum":     reflect.ValueOf(crc32.Checksum),
		"ChecksumIEEE": reflect.ValueOf(crc32.ChecksumIEEE),
		"IEEE":         reflect.ValueOf(uint32(crc32.IEEE)),
		"MakeTable":    reflect.ValueOf(crc32.MakeTable),
		"Size":         reflect.ValueOf(int(crc32.Size)),
		"Table":        reflect.ValueOf((*crc32.Table)(nil)),
		"Update":       reflect.ValueOf(crc32.Update),
	},
	// The filesystem of the crash exercises, and nothing else of the
	// host: a student's store cannot make an FS of its own (kvfs.New is
	// not here), only use the one Open is given.
	"kvfs/kvfs": {
		"FS":         reflect.ValueOf((*kvfs.FS)(nil)),
		"File":       reflect.ValueOf((*kvfs.File)(nil)),
		"IsNotExist": reflect.ValueOf(kvfs.IsNotExist),
	},
	"math/math": {
		"Abs":                    reflect.ValueOf(math.Abs),
		"Ceil":                   reflect.ValueOf(math.Ceil),
		"Floor":                  reflect.ValueOf(math.Floor),
		"Inf":                    reflect.ValueOf(math.Inf),
		"IsInf":                  reflect.ValueOf(math.IsInf),
		"IsNaN":                  reflect.ValueOf(math.IsNaN),
		"Max":                    reflect.ValueOf(math.Max),
		"Min":                    reflect.ValueOf(math.Min),
		"NaN":                    reflect.ValueOf(math.NaN),
		"Round":                  reflect.ValueOf(math.Round),
		"Sqrt":                   reflect.ValueOf(math.Sqrt),
		"Trunc":                  reflect.ValueOf(math.Trunc),
		"MaxInt":                 reflect.ValueOf(int(math.MaxInt)),
		"MaxInt64":               reflect.ValueOf(int64(math.MaxInt64)),
		"MinInt64":               reflect.ValueOf(int64(math.MinInt64)),
		"MaxFloat64":             reflect.ValueOf(float64(math.MaxFloat64)),
		"SmallestNonzeroFloat64": reflect.ValueOf(float64(math.SmallestNonzeroFloat64)),
	},
	// Generic functions cannot be exported to the interpreter; these are
	// the []int64 instantiations, the only slices the exercises use. They
	// live under a name of their own because yaegi claims the name
	// "slices" for its generic source version, which v0.16.1 cannot
	// instantiate; Load renames a student's slices to xslice (same length,
	// so columns do not move) and errors name it slices again.
	"xslice/xslice": {
		"Clone":    reflect.ValueOf(slices.Clone[[]int64]),
		"Contains": reflect.ValueOf(slices.Contains[[]int64]),
		"IsSorted": reflect.ValueOf(slices.IsSorted[[]int64]),
		"Max":      reflect.ValueOf(slices.Max[[]int64]),
		"Min":      reflect.ValueOf(slices.Min[[]int64]),
		"Reverse":  reflect.ValueOf(slices.Reverse[[]int64]),
		"Sort":     reflect.ValueOf(slices.Sort[[]int64]),
	},
	"sort/sort": {
		"Float64s":      reflect.ValueOf(sort.Float64s),
		"Ints":          reflect.ValueOf(sort.Ints),
		"Search":        reflect.ValueOf(sort.Search),
		"Slice":         reflect.ValueOf(sort.Slice),
		"SliceStable":   reflect.ValueOf(sort.SliceStable),
		"SliceIsSorted": reflect.ValueOf(sort.SliceIsSorted),
	},
	"time/time": {
		"Duration":      reflect.ValueOf((*time.Duration)(nil)),
		"Nanosecond":    reflect.ValueOf(time.Nanosecond),
		"Microsecond":   reflect.ValueOf(time.Microsecond),
		"Millisecond":   reflect.ValueOf(time.Millisecond),
		"Second":        reflect.ValueOf(time.Second),
		"Minute":        reflect.ValueOf(time.Minute),
		"Hour":          reflect.ValueOf(time.Hour),
		"ParseDuration": reflect.ValueOf(time.ParseDuration),
	},
}

// importAliases maps an import path a student writes to the path its
// symbols are registered under, where the two differ.
var importAliases = map[string]string{"slices": "xslice"}

// importable reports whether a student may import path.
func importable(path string) bool {
	if alias, ok := importAliases[path]; ok {
		path = alias
	}
	_, ok := symbols[path+"/"+lastElem(path)]
	return ok
}

// allowedImports lists the import paths a student may use, for error
// messages.
func allowedImports() []string {
	var s []string
	for k := range symbols {
		path := k[:strings.LastIndexByte(k, '/')]
		for student, alias := range importAliases {
			if alias == path {
				path = student
			}
		}
		s = append(s, path)
	}
	sort.Strings(s)
	return s
}
