package gohost

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"hash/crc32"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/traefik/yaegi/interp"

	"kvlab/gohost/kvfs"
)

// This file lets a store written for the crash exercises run outside a
// grading, on a real disk, through the harness (kvlab/harness/mine): the
// same interpreter, the same symbols and the same checks as in the
// browser, loaded once and then called for every operation of a
// benchmark. The browser stops a runaway store by terminating its Web
// Worker; a server cannot kill a goroutine, so here the interpreter
// itself is stopped (Native.Stop), which ends every interpreted call at
// its next step.

// nativeMu is held for the whole of every call into a Native's code: it
// guards each Native's store and the package's print buffer, output,
// which every program of the process prints into.
var nativeMu sync.Mutex

// Native is a student's store, loaded for a run outside a grading. Its
// methods are safe for concurrent use: they run the student's code one
// call at a time, and one at a time across every Native of the process
// (the student's store has no locks of its own, a data race in
// interpreted code can end the whole process, and the print buffer is
// the package's).
type Native struct {
	p       *Program
	cancel  context.CancelFunc // stops the interpreter (EvalWithContext's watch)
	watched chan struct{}      // closed when the watch's Eval has returned
	store   *Store             // the student's open store; guarded by nativeMu

	stopMu sync.Mutex // guards cause
	cause  error      // why Stop was called; nil while running
}

// LoadNative evaluates src, a store of the crash exercises (func Open(fs
// kvfs.FS) (*Store, error), Put, Get), for a run outside a grading. A
// problem with the code is a *CodeError with the student's line and
// column, as in the browser. Code that starts goroutines is refused: a
// panic in a goroutine of its own would end the whole server, which
// cannot recover it.
//
// ctx bounds the evaluation of the declarations, which runs the
// initializers of the code's package-level variables: when it is done
// first, the interpreter is stopped and LoadNative fails.
//
// The Native must be closed (Close) to end the interpreter's watch.
func LoadNative(ctx context.Context, src string) (*Native, error) {
	if ce := refuseGoStatements(src); ce != nil {
		return nil, ce
	}
	if ce := refuseHugeTypes(src); ce != nil {
		return nil, ce
	}
	src = boundMakes(src)
	p, ce := loadContext(ctx, src, Prelude{Code: StorePrelude.Code, Shape: StorePrelude.Shape, Header: makeHeader, Exports: makeExports})
	if ce != nil {
		return nil, ce
	}
	// The interpreter can only be stopped from inside an EvalWithContext:
	// one is left waiting in a host function until the run ends (Close)
	// or is stopped (Stop, which cancels its context). It is compiled
	// before any of the student's code runs, so no compilation overlaps
	// a call.
	ctx, cancel := context.WithCancel(context.Background())
	entered := make(chan struct{})
	wait := func() {
		close(entered)
		<-ctx.Done()
	}
	if err := p.in.Use(interp.Exports{"kvlabwatch/kvlabwatch": {"Wait": reflect.ValueOf(wait)}}); err != nil {
		cancel()
		return nil, fmt.Errorf("gohost: the interpreter refused the watch: %w", err)
	}
	if _, err := p.in.Eval(`import "kvlabwatch"`); err != nil {
		cancel()
		return nil, fmt.Errorf("gohost: the interpreter refused the watch: %w", err)
	}
	n := &Native{p: p, cancel: cancel, watched: make(chan struct{})}
	go func() {
		defer close(n.watched)
		p.in.EvalWithContext(ctx, "kvlabwatch.Wait()")
	}()
	select {
	case <-entered:
	case <-n.watched:
		return nil, errors.New("gohost: the interpreter's watch ended before the store ran")
	}
	return n, nil
}

// refuseGoStatements returns a CodeError at the first go statement of src.
func refuseGoStatements(src string) *CodeError {
	f, fset, shift := parseStudent(src)
	if f == nil {
		return nil
	}
	var ce *CodeError
	ast.Inspect(f, func(n ast.Node) bool {
		if g, ok := n.(*ast.GoStmt); ok && ce == nil {
			p := fset.Position(g.Go)
			ce = at(p.Line-shift, p.Column, "a go statement cannot run on the real disk: a panic in a goroutine of your store would end the whole server, which cannot catch it; do the work inside Put (the browser's exercises allow goroutines)")
		}
		return ce == nil
	})
	return ce
}

// MaxAlloc is the most bytes one allocation may take in a store run on a
// real disk: one make (its length or capacity times the size of an
// element, nested arrays and structs included), or one variable,
// new or composite literal of an array or struct type. Go allocates
// each whole, and one the machine cannot give ends the whole process
// ("fatal error: runtime: out of memory", which no recover catches).
// A store of the exercises makes buffers of a record.
const MaxAlloc = 64 << 20

// makeHeader declares the check boundMakes wraps each size of a make in:
// the host works out the bytes from the make's type (t is a nil pointer
// to it), so a slice of huge arrays counts as what it is.
const makeHeader = `import kvlabsize "kvlabsize"

func kvlabMakeLen(n int, t interface{}) int {
	if msg := kvlabsize.Check(n, t); msg != "" {
		panic(msg)
	}
	return n
}
`

// makeExports are the host functions makeHeader imports.
var makeExports = interp.Exports{"kvlabsize/kvlabsize": {"Check": reflect.ValueOf(checkMake)}}

// checkMake returns why a make of n of the type t points to may not run,
// or "" when it may.
func checkMake(n int, t any) string {
	if n < 0 {
		return fmt.Sprintf("make: a negative size (%d)", n)
	}
	rt := reflect.TypeOf(t)
	if rt == nil || rt.Kind() != reflect.Pointer {
		return ""
	}
	rt = rt.Elem()
	var elem int64
	what := "elements"
	switch rt.Kind() {
	case reflect.Slice, reflect.Chan:
		elem = int64(rt.Elem().Size())
	case reflect.Map:
		elem = int64(rt.Key().Size() + rt.Elem().Size())
		what = "entries"
	default:
		return ""
	}
	elem = max(elem, 1)
	if int64(n) <= MaxAlloc/elem {
		return ""
	}
	total := "more than 8 EiB"
	if int64(n) <= math.MaxInt64/elem {
		total = formatBytes(int64(n) * elem)
	}
	return fmt.Sprintf("make: %s (%d %s of %s each): one allocation of a store here may be at most %s (Go allocates it whole, and one the machine cannot give ends the whole server)",
		total, n, what, formatBytes(elem), formatBytes(MaxAlloc))
}

// formatBytes writes n in B, KiB, MiB, GiB, TiB, PiB or EiB, with up to three
// decimals, or in bytes when those would hide that it is not a whole
// number of them.
func formatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i, v := 0, float64(n)
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f %s", v, units[i])
	}
	for prec := 1; prec <= 3; prec++ {
		if s := strconv.FormatFloat(v, 'f', prec, 64); strings.TrimRight(s, "0") != strings.Split(s, ".")[0]+"." {
			return s + " " + units[i]
		}
	}
	return fmt.Sprintf("%d B", n) // 64.0 MiB would read as the limit itself
}

// boundMakes wraps every size argument of a make in src in
// kvlabMakeLen, with a nil pointer to the make's type: one make of a
// terabyte would make Go end the whole process ("out of memory", which
// no recover catches) before any watch could look. Lines stay where they
// were; on a line with a make, the columns after it move.
func boundMakes(src string) string {
	f, fset, lines := parseStudent(src)
	if f == nil {
		return src
	}
	shift := lines * len("package main\n") // in bytes
	type insert struct {
		at   int
		text string
	}
	var ins []insert
	var aliases []string // types written over more than one line, named at the end
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "make" && len(call.Args) > 1 {
			typ := call.Args[0]
			text := src[fset.Position(typ.Pos()).Offset-shift : fset.Position(typ.End()).Offset-shift]
			if strings.ContainsAny(text, "\n") {
				// Written where it is, it would move the lines below.
				aliases = append(aliases, fmt.Sprintf("\ntype kvlabMakeType%d = %s\n", len(aliases), text))
				text = fmt.Sprintf("kvlabMakeType%d", len(aliases)-1)
			}
			t := ", (*" + text + ")(nil))"
			for _, a := range call.Args[1:] {
				ins = append(ins, insert{fset.Position(a.Pos()).Offset - shift, "kvlabMakeLen(int("}, insert{fset.Position(a.End()).Offset - shift, ")" + t})
			}
		}
		return true
	})
	// From the last to the first, so that each insertion leaves the
	// offsets before it right, a make nested in another's size included.
	slices.SortStableFunc(ins, func(a, b insert) int { return b.at - a.at })
	for _, in := range ins {
		src = src[:in.at] + in.text + src[in.at:]
	}
	return src + strings.Join(aliases, "")
}

// refuseHugeTypes returns a CodeError at the first array or struct type
// of src whose size in bytes is over MaxAlloc: a variable, new or
// composite literal of it is allocated whole, and one of a terabyte ends
// the process ("out of memory"). The size counts nested arrays and
// structs, the types the file declares and those of the packages a store
// may import; an array's length must be a constant the check can read
// (the file's, or an imported package's such as crc32.Size), and an
// element whose type it cannot work out counts as one byte.
func refuseHugeTypes(src string) *CodeError {
	f, fset, shift := parseStudent(src)
	if f == nil {
		return nil
	}
	sz := newSizer(f)
	var ce *CodeError
	ast.Inspect(f, func(n ast.Node) bool {
		if ce != nil {
			return false
		}
		var what string
		var pos token.Pos
		switch t := n.(type) {
		case *ast.ArrayType:
			if t.Len == nil {
				return true
			}
			if _, ok := t.Len.(*ast.Ellipsis); ok {
				return true // as long as its literal, which is in the source
			}
			v, ok := constInt(t.Len, sz.consts, 0)
			if !ok {
				return true
			}
			pos = t.Lbrack
			if constant.Sign(v) < 0 {
				p := fset.Position(pos)
				ce = at(p.Line-shift, p.Column, fmt.Sprintf("an array of %s elements: an array's length cannot be negative", v.ExactString()))
				return false
			}
			what = fmt.Sprintf("an array of %s elements of %s each", v.ExactString(), formatBytes(sz.size(t.Elt, 0)))
		case *ast.StructType:
			pos, what = t.Struct, "a struct"
		default:
			return true
		}
		if size := sz.size(n.(ast.Expr), 0); size > MaxAlloc {
			p := fset.Position(pos)
			total := "more than 8 EiB"
			if size < math.MaxInt64 {
				total = formatBytes(size)
			}
			ce = at(p.Line-shift, p.Column, fmt.Sprintf("%s (%s in all): one allocation of a store here may be at most %s (Go allocates a variable of this type whole, and one the machine cannot give ends the whole server)", what, total, formatBytes(MaxAlloc)))
		}
		return ce == nil
	})
	return ce
}

// sizer works out the size in bytes of a type written in a student's
// file, from the file's declarations alone.
type sizer struct {
	consts  map[string]ast.Expr // every constant of the file by name, whatever its scope
	types   map[string]ast.Expr // every type of the file by name, whatever its scope
	imports map[string]string   // the path of each import, by the name the file uses
}

func newSizer(f *ast.File) *sizer {
	sz := &sizer{consts: map[string]ast.Expr{}, types: map[string]ast.Expr{}, imports: map[string]string{}}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		if alias, ok := importAliases[path]; ok {
			path = alias
		}
		name := lastElem(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		sz.imports[name] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		d, ok := n.(*ast.GenDecl)
		if !ok {
			return true
		}
		for _, sp := range d.Specs {
			switch sp := sp.(type) {
			case *ast.ValueSpec:
				if d.Tok != token.CONST {
					continue
				}
				for i, name := range sp.Names {
					if i < len(sp.Values) {
						sz.consts[name.Name] = sp.Values[i]
					}
				}
			case *ast.TypeSpec:
				sz.types[sp.Name.Name] = sp.Type
			}
		}
		return true
	})
	return sz
}

// basicSizes are the sizes of Go's predeclared types on a 64-bit host.
var basicSizes = map[string]int64{
	"bool": 1, "int8": 1, "uint8": 1, "byte": 1,
	"int16": 2, "uint16": 2,
	"int32": 4, "uint32": 4, "rune": 4, "float32": 4,
	"int": 8, "uint": 8, "int64": 8, "uint64": 8, "uintptr": 8, "float64": 8, "complex64": 8,
	"complex128": 16, "string": 16, "error": 16, "any": 16,
}

// size returns the size of the type e in bytes, at least (a field's
// alignment is not counted, and a type it cannot work out counts as one
// byte); math.MaxInt64 when it is larger.
func (sz *sizer) size(e ast.Expr, depth int) int64 {
	if depth > 20 {
		return 1
	}
	switch e := e.(type) {
	case *ast.ParenExpr:
		return sz.size(e.X, depth+1)
	case *ast.Ident:
		if n, ok := basicSizes[e.Name]; ok {
			return n
		}
		if t, ok := sz.types[e.Name]; ok {
			return sz.size(t, depth+1)
		}
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok {
			if path, ok := sz.imports[pkg.Name]; ok {
				v, ok := symbols[path+"/"+lastElem(path)][e.Sel.Name]
				if ok && v.Kind() == reflect.Pointer && v.IsNil() {
					return int64(v.Type().Elem().Size())
				}
			}
		}
	case *ast.StarExpr, *ast.FuncType, *ast.MapType, *ast.ChanType:
		return 8
	case *ast.InterfaceType:
		return 16
	case *ast.ArrayType:
		if e.Len == nil {
			return 24 // a slice
		}
		v, ok := constInt(e.Len, sz.consts, 0)
		if !ok {
			return 1
		}
		n, ok := constant.Int64Val(v)
		if !ok || n < 0 {
			return math.MaxInt64
		}
		return mulSat(n, sz.size(e.Elt, depth+1))
	case *ast.StructType:
		var total int64
		for _, field := range e.Fields.List {
			names := int64(max(len(field.Names), 1))
			total = addSat(total, mulSat(names, sz.size(field.Type, depth+1)))
		}
		return total
	}
	return 1
}

// mulSat and addSat are a*b and a+b for sizes, at most math.MaxInt64.
func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// constInt evaluates e as an integer constant, reading the constants of
// consts by name; ok is false when it is not one it can evaluate.
func constInt(e ast.Expr, consts map[string]ast.Expr, depth int) (v constant.Value, ok bool) {
	if depth > 20 {
		return nil, false
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.INT {
			return nil, false
		}
		v = constant.MakeFromLiteral(e.Value, e.Kind, 0)
		return v, v.Kind() == constant.Int
	case *ast.ParenExpr:
		return constInt(e.X, consts, depth+1)
	case *ast.Ident:
		if x, ok := consts[e.Name]; ok {
			return constInt(x, consts, depth+1)
		}
	case *ast.SelectorExpr:
		// The integer constants of the packages a store may import.
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "crc32" && e.Sel.Name == "Size" {
			return constant.MakeInt64(crc32.Size), true
		}
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "math" {
			switch e.Sel.Name {
			case "MaxInt", "MaxInt64":
				return constant.MakeInt64(math.MaxInt64), true
			case "MinInt64":
				return constant.MakeInt64(math.MinInt64), true
			}
		}
	case *ast.UnaryExpr:
		if x, ok := constInt(e.X, consts, depth+1); ok && (e.Op == token.SUB || e.Op == token.ADD) {
			return constant.UnaryOp(e.Op, x, 0), true
		}
	case *ast.BinaryExpr:
		x, okx := constInt(e.X, consts, depth+1)
		y, oky := constInt(e.Y, consts, depth+1)
		if !okx || !oky {
			return nil, false
		}
		switch e.Op {
		case token.SHL, token.SHR:
			if s, ok := constant.Uint64Val(y); ok && s < 256 {
				return constant.Shift(x, e.Op, uint(s)), true
			}
		case token.ADD, token.SUB, token.MUL, token.OR, token.AND, token.XOR:
			return constant.BinaryOp(x, e.Op, y), true
		}
	}
	return nil, false
}

// parseStudent parses src as Load does, with a package clause added when
// it has none (shift is then 1, the lines added); f is nil when src does
// not parse (Load reports why).
func parseStudent(src string) (f *ast.File, fset *token.FileSet, shift int) {
	fset = token.NewFileSet()
	f, err := parser.ParseFile(fset, "student.go", src, parser.SkipObjectResolution)
	if err != nil && missingPackage(err) {
		shift = 1
		f, err = parser.ParseFile(fset, "student.go", "package main\n"+src, parser.SkipObjectResolution)
	}
	if err != nil {
		return nil, nil, 0
	}
	return f, fset, shift
}

// Stop stops the interpreter: a call running the student's code returns
// at its next step, and every later call fails at once; each returns an
// error wrapping ErrStopped and cause. Safe to call more than once and
// from any goroutine; the first cause is kept.
func (n *Native) Stop(cause error) {
	n.stopMu.Lock()
	if n.cause == nil {
		n.cause = cause
	}
	n.stopMu.Unlock()
	n.cancel()
}

// stopped returns the error of a call after Stop, or nil.
func (n *Native) stopped() error {
	n.stopMu.Lock()
	defer n.stopMu.Unlock()
	if n.cause == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrStopped, n.cause)
}

// Close ends the interpreter's watch. The Native cannot be used after.
func (n *Native) Close() {
	n.cancel()
	<-n.watched
}

// enter starts a call into the student's code: it holds nativeMu until
// the returned func, which clears what the code printed (nobody reads it
// on a real disk, and it must not grow).
func (n *Native) enter() (leave func()) {
	nativeMu.Lock()
	return func() {
		output.Reset()
		nativeMu.Unlock()
	}
}

// Open calls the student's Open on fsys; Put and Get then use the store
// it returned.
func (n *Native) Open(fsys kvfs.FS) error {
	defer n.enter()()
	if err := n.stopped(); err != nil {
		return err
	}
	s, err := OpenStore(n.p, fsys)
	if err := n.stopped(); err != nil {
		return err
	}
	if err != nil {
		return fmt.Errorf("Open: %w", err)
	}
	n.store = s
	return nil
}

// Put calls the student's Put. A panic comes back as a *PanicError.
func (n *Native) Put(key, value string) error {
	defer n.enter()()
	if err := n.ready(); err != nil {
		return err
	}
	err := n.store.Put(key, value)
	if err := n.stopped(); err != nil {
		return err
	}
	return err
}

// Get calls the student's Get. A panic comes back as a *PanicError.
func (n *Native) Get(key string) (string, bool, error) {
	defer n.enter()()
	if err := n.ready(); err != nil {
		return "", false, err
	}
	v, ok, err := n.store.Get(key)
	if err := n.stopped(); err != nil {
		return "", false, err
	}
	return v, ok, err
}

// ready fails a call before Open or after Stop.
//
// REQUIRES: nativeMu held.
func (n *Native) ready() error {
	if err := n.stopped(); err != nil {
		return err
	}
	if n.store == nil {
		return ErrNotOpen
	}
	return nil
}
