package grader

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"sync"

	"github.com/traefik/yaegi/interp"

	"kvlab/wasm/kvfs"
)

// This file lets a store written for the crash exercises run outside the
// grader, on a real disk, through the harness (kvlab/harness/mine): the
// same interpreter, the same symbols and the same checks as in the
// browser, loaded once and then called for every operation of a
// benchmark. The browser stops a runaway store by terminating its Web
// Worker; a server cannot kill a goroutine, so here the interpreter
// itself is stopped (Native.Stop), which ends every interpreted call at
// its next step.

// ErrStopped is wrapped by every call into a Native after Stop: the
// interpreter no longer runs the student's code.
var ErrStopped = errors.New("grader: the store's code was stopped")

// nativeMu is held for the whole of every call into a Native's code: it
// guards each Native's store and the package's print buffer, output,
// which every program of the process prints into.
var nativeMu sync.Mutex

// Native is a student's store, loaded for a run outside the grader. Its
// methods are safe for concurrent use: they run the student's code one
// call at a time, and one at a time across every Native of the process
// (the student's store has no locks of its own, a data race in
// interpreted code can end the whole process, and the print buffer is
// the package's).
type Native struct {
	p       *program
	cancel  context.CancelFunc // stops the interpreter (EvalWithContext's watch)
	watched chan struct{}      // closed when the watch's Eval has returned
	store   *store             // the student's open store; guarded by nativeMu

	stopMu sync.Mutex // guards cause
	cause  error      // why Stop was called; nil while running
}

// LoadNative evaluates src, a store of the crash exercises (func Open(fs
// kvfs.FS) (*Store, error), Put, Get), for a run outside the grader. A
// problem with the code is a *CodeError with the student's line and
// column, as in the browser. Code that starts goroutines is refused: a
// panic in a goroutine of its own would end the whole server, which
// cannot recover it.
//
// The Native must be closed (Close) to end the interpreter's watch.
func LoadNative(src string) (*Native, error) {
	if ce := refuseGoStatements(src); ce != nil {
		return nil, ce
	}
	if ce := refuseHugeArrays(src); ce != nil {
		return nil, ce
	}
	src = boundMakes(src)
	p, ce := load(src, prelude{code: storePrelude.code + makePrelude, shape: storePrelude.shape})
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
		return nil, fmt.Errorf("grader: the interpreter refused the watch: %w", err)
	}
	if _, err := p.in.Eval(`import "kvlabwatch"`); err != nil {
		cancel()
		return nil, fmt.Errorf("grader: the interpreter refused the watch: %w", err)
	}
	n := &Native{p: p, cancel: cancel, watched: make(chan struct{})}
	go func() {
		defer close(n.watched)
		p.in.EvalWithContext(ctx, "kvlabwatch.Wait()")
	}()
	select {
	case <-entered:
	case <-n.watched:
		return nil, errors.New("grader: the interpreter's watch ended before the store ran")
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

// maxMake is the most elements one make may ask for in a store run on a
// real disk: a store of the exercises makes buffers of a record.
const maxMake = 16 << 20

// makePrelude is the check boundMakes wraps each size of a make in. (It
// is appended to the student's file, which may not import fmt.)
var makePrelude = fmt.Sprintf(`

func kvlabMakeLen(n int) int {
	if n < 0 || n > %d {
		panic("make: more elements than a store here may make at once (%d)")
	}
	return n
}
`, maxMake, maxMake)

// boundMakes wraps every size argument of a make in src in
// kvlabMakeLen: one make of a terabyte would make Go end the whole
// process ("out of memory", which no recover catches) before any watch
// could look. Lines stay where they were; on a line with a make, the
// columns after it move.
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
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "make" {
			for _, a := range call.Args[min(1, len(call.Args)):] {
				ins = append(ins, insert{fset.Position(a.Pos()).Offset - shift, "kvlabMakeLen(int("}, insert{fset.Position(a.End()).Offset - shift, "))"})
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
	return src
}

// refuseHugeArrays returns a CodeError at the first array type whose
// length is a constant over maxMake: such a variable is allocated whole,
// and one of a terabyte ends the process ("out of memory"). A length
// that is not a constant of the file (a package's, crc32.Size) is let
// through.
func refuseHugeArrays(src string) *CodeError {
	f, fset, shift := parseStudent(src)
	if f == nil {
		return nil
	}
	consts := map[string]ast.Expr{} // every constant of the file by name, whatever its scope
	ast.Inspect(f, func(n ast.Node) bool {
		if d, ok := n.(*ast.GenDecl); ok && d.Tok == token.CONST {
			for _, sp := range d.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						consts[name.Name] = vs.Values[i]
					}
				}
			}
		}
		return true
	})
	var ce *CodeError
	ast.Inspect(f, func(n ast.Node) bool {
		arr, ok := n.(*ast.ArrayType)
		if !ok || arr.Len == nil || ce != nil {
			return ce == nil
		}
		if v, ok := constInt(arr.Len, consts, 0); ok && (constant.Sign(v) < 0 || constant.Compare(v, token.GTR, constant.MakeInt64(maxMake))) {
			p := fset.Position(arr.Lbrack)
			ce = at(p.Line-shift, p.Column, fmt.Sprintf("an array of %s elements: a store here may hold at most %d in one array or make (Go allocates it whole, and one too large ends the whole server)", v.ExactString(), maxMake))
		}
		return ce == nil
	})
	return ce
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

// parseStudent parses src as load does, with a package clause added when
// it has none (shift is then 1, the lines added); f is nil when src does
// not parse (load reports why).
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
	s, err := openStore(n.p, fsys)
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
		return errors.New("grader: the store is not open")
	}
	return nil
}
