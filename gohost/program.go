package gohost

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io"
	"io/fs"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// CodeError is a problem with the student's code found before any case
// ran: a syntax or type error, a missing function, an import that is not
// available. Line and Col are 1-based positions in the student's own
// source; Line is 0 when the problem has no position.
type CodeError struct {
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
	Msg  string `json:"msg"`
}

func (e *CodeError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
	}
	return e.Msg
}

// preludeMin and preludeMax stand in for the min and max builtins, which
// yaegi v0.16.1 does not have. They are appended after the student's code,
// so every line number the student sees is still their own.
const preludeMin = `

func min[T ~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64 | ~string](x T, y ...T) T {
	for _, v := range y {
		if v < x {
			x = v
		}
	}
	return x
}
`

const preludeMax = `

func max[T ~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64 | ~string](x T, y ...T) T {
	for _, v := range y {
		if v > x {
			x = v
		}
	}
	return x
}
`

// Prelude is Go appended after the student's code before it is
// evaluated: functions through which the host calls methods of the
// student's own types, which it cannot name.
type Prelude struct {
	Code  string
	Shape string // what the student must declare for Code to compile, as a sentence

	// Header, when set, is evaluated in the student's package before the
	// student's code, with Exports registered first: declarations the
	// student's code is rewritten to call, which may import host
	// functions (code appended after the student's cannot import).
	Header  string
	Exports interp.Exports
	// Lines marks the student's calls of kvfs operations with their
	// line (markLines), for the crash exercises' timeline (StudentLine).
	Lines bool
}

// Program is a student's source evaluated by a fresh interpreter. It is
// not safe for concurrent use (Native serializes its calls).
type Program struct {
	in  *interp.Interpreter
	pkg string // the package name the student wrote

	// looked holds the names Lookup found.
	looked map[string]reflect.Value
}

// posRE matches the position yaegi puts in front of its errors, with or
// without a file name: "4:9: undefined: y", "_.go:5:1: expected operand".
var posRE = regexp.MustCompile(`^(?:[^\s:]*\.go:)?(\d+):(\d+): (.*)$`)

// yaegiTypeRE matches yaegi's names for basic types ("intT", "stringT").
var yaegiTypeRE = regexp.MustCompile(`\b(bool|string|int|int8|int16|int32|int64|uint|uint8|uint16|uint32|uint64|float32|float64|uintptr|byte|rune)T\b`)

// Load parses and evaluates src, a student's Go file (its package clause
// may be missing), with pre (code the host calls the student's code
// through) appended after it. A problem with the code is a *CodeError at
// the student's own line and column; Load never panics on bad code.
// What the code prints goes to Output.
func Load(src string, pre Prelude) (*Program, *CodeError) {
	return loadContext(nil, src, pre)
}

// loadContext is Load, with the evaluation of the declarations (which
// runs the initializers of package-level variables, the student's code)
// stopped when ctx is done; a nil ctx is never done. The browser needs
// none: its worker is terminated instead.
func loadContext(ctx context.Context, src string, pre Prelude) (*Program, *CodeError) {
	if strings.TrimSpace(src) == "" {
		return nil, &CodeError{Msg: "the editor is empty: write your code there, or press Reset to get the starting code back"}
	}
	shift := 0
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "student.go", src, parser.SkipObjectResolution)
	if err != nil && missingPackage(err) {
		src = "package main\n" + src
		shift = 1
		fset = token.NewFileSet()
		f, err = parser.ParseFile(fset, "student.go", src, parser.SkipObjectResolution)
	}
	if err != nil {
		return nil, syntaxError(err, shift)
	}
	if ce := checkImports(fset, f, shift); ce != nil {
		return nil, ce
	}
	if ce := checkRangeOverIntLiteral(fset, f, shift); ce != nil {
		return nil, ce
	}

	declared := map[string]bool{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
			declared[fd.Name.Name] = true
		}
	}
	full := constantsLast(aliasImports(src, fset, f), declared)
	if pre.Lines {
		full = markLines(full, shift)
	}
	if !declared["min"] {
		full += preludeMin
	}
	if !declared["max"] {
		full += preludeMax
	}
	full += pre.Code

	in := interp.New(interp.Options{
		Stdout: &output,
		// yaegi writes a trace here when interpreted code panics; the
		// Result says it better.
		Stderr: io.Discard,
		// Nothing is ever loaded from a disk: imports resolve only to the
		// symbols below.
		SourcecodeFilesystem: noFS{},
	})
	if err := in.Use(symbols); err != nil {
		panic("gohost: symbol table rejected by the interpreter: " + err.Error())
	}
	headers := []struct {
		code    string
		exports interp.Exports
	}{{pre.Header, pre.Exports}}
	if pre.Lines {
		headers = append(headers, struct {
			code    string
			exports interp.Exports
		}{lineHeader, lineExports})
	}
	for _, h := range headers {
		if h.code == "" {
			continue
		}
		if err := in.Use(h.exports); err != nil {
			panic("gohost: header symbols rejected by the interpreter: " + err.Error())
		}
		if _, err := in.Eval("package " + f.Name.Name + "\n" + h.code); err != nil {
			panic("gohost: header rejected by the interpreter: " + err.Error())
		}
	}
	if ce := eval(ctx, in, full, fset, f, shift); ce != nil {
		if ce.Line > strings.Count(src, "\n")+1-shift {
			// The error is in the prelude: the student's declarations
			// do not have the shape it calls.
			ce = &CodeError{Msg: pre.Shape + " (the grader's call of your code fails with: " + ce.Msg + ")"}
		}
		return nil, ce
	}
	return &Program{in: in, pkg: f.Name.Name}, nil
}

// eval runs the declarations, turning an interpreter panic into an error;
// when ctx (which may be nil) is done first, it stops the interpreter.
func eval(ctx context.Context, in *interp.Interpreter, src string, fset *token.FileSet, f *ast.File, shift int) (ce *CodeError) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if rs := rangeStmts(fset, f, shift); len(rs) > 0 {
			ce = rangeOverIntError(rs[0])
			if len(rs) > 1 {
				ce.Msg += fmt.Sprintf(" (the interpreter stopped on one of the %d range loops; this is the first)", len(rs))
			}
			return
		}
		ce = &CodeError{Msg: fmt.Sprintf("the interpreter could not run this code (%v); simplify the construct it stopped on", r)}
	}()
	var err error
	if ctx == nil {
		_, err = in.Eval(src)
	} else {
		_, err = in.EvalWithContext(ctx, src)
		if p, ok := errors.AsType[interp.Panic](err); ok {
			panic(p.Value) // EvalWithContext caught it; the recover above reads it
		}
		if ctx.Err() != nil {
			return &CodeError{Msg: fmt.Sprintf("evaluating your declarations was stopped (%v): does the initializer of a package-level variable loop forever?", context.Cause(ctx))}
		}
	}
	if err != nil {
		return interpError(err, shift)
	}
	return nil
}

// interpError converts an error from yaegi to student coordinates.
func interpError(err error, shift int) *CodeError {
	var list scanner.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		return syntaxError(list, shift)
	}
	msg := strings.TrimSpace(err.Error())
	// Panics in the student's code during evaluation of package-level
	// variables arrive as multi-line errors; keep the first line.
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	msg = unalias(yaegiTypeRE.ReplaceAllString(msg, "$1"))
	m := posRE.FindStringSubmatch(msg)
	if m == nil {
		return &CodeError{Msg: msg}
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	return at(line-shift, col, m[3])
}

// at builds a CodeError, dropping a position that is not in the student's
// text (it would point into the prelude or the added package clause).
func at(line, col int, msg string) *CodeError {
	if line < 1 {
		return &CodeError{Msg: msg}
	}
	return &CodeError{Line: line, Col: col, Msg: msg}
}

func missingPackage(err error) bool {
	var list scanner.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		return list[0].Pos.Line == 1 && strings.Contains(list[0].Msg, "expected 'package'")
	}
	return false
}

func syntaxError(err error, shift int) *CodeError {
	var list scanner.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		e := list[0]
		ce := at(e.Pos.Line-shift, e.Pos.Column, "syntax error: "+e.Msg)
		if len(list) > 1 {
			ce.Msg += fmt.Sprintf(" (and %d more)", len(list)-1)
		}
		return ce
	}
	return &CodeError{Msg: err.Error()}
}

func checkImports(fset *token.FileSet, f *ast.File, shift int) *CodeError {
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		if importable(path) {
			continue
		}
		p := fset.Position(imp.Path.Pos())
		return at(p.Line-shift, p.Column, fmt.Sprintf("import %q is not available in these exercises; allowed: %s",
			path, strings.Join(allowedImports(), ", ")))
	}
	return nil
}

func lastElem(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// rangePos is where a range loop starts, in student coordinates.
type rangePos struct{ line, col int }

// rangeStmts returns the range loops that may be over an int: every range
// statement whose expression is not obviously a slice, array, map, string
// or channel literal.
func rangeStmts(fset *token.FileSet, f *ast.File, shift int) []rangePos {
	var out []rangePos
	ast.Inspect(f, func(n ast.Node) bool {
		rs, ok := n.(*ast.RangeStmt)
		if !ok {
			return true
		}
		switch rs.X.(type) {
		case *ast.CompositeLit:
			return true
		}
		if lit, ok := rs.X.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			return true
		}
		p := fset.Position(rs.For)
		out = append(out, rangePos{p.Line - shift, p.Column})
		return true
	})
	return out
}

// checkRangeOverIntLiteral catches the case that needs no guessing:
// `for i := range 10`.
func checkRangeOverIntLiteral(fset *token.FileSet, f *ast.File, shift int) *CodeError {
	var ce *CodeError
	ast.Inspect(f, func(n ast.Node) bool {
		if ce != nil {
			return false
		}
		if rs, ok := n.(*ast.RangeStmt); ok {
			if lit, ok := rs.X.(*ast.BasicLit); ok && lit.Kind == token.INT {
				p := fset.Position(rs.For)
				ce = rangeOverIntError(rangePos{p.Line - shift, p.Column})
			}
		}
		return true
	})
	return ce
}

func rangeOverIntError(p rangePos) *CodeError {
	return at(p.line, p.col, "range over an int is not supported here; write for i := 0; i < n; i++")
}

// Lookup returns the student's top-level name as a value.
func (p *Program) Lookup(name string) (reflect.Value, bool) {
	if v, ok := p.looked[name]; ok {
		return v, true
	}
	v, err := p.in.Eval(p.pkg + "." + name)
	if err != nil || !v.IsValid() {
		return reflect.Value{}, false
	}
	if p.looked == nil {
		p.looked = map[string]reflect.Value{}
	}
	p.looked[name] = v // an Eval compiles the expression each time; the crash exercises look up once per Open
	return v, true
}

// Function finds the student's func name and checks it has the type of
// want (a nil function of the required type), converted to it. sig is the
// signature as the instructions write it, for the error.
func (p *Program) Function(name string, want any, sig string) (reflect.Value, *CodeError) {
	v, ok := p.Lookup(name)
	if !ok {
		return reflect.Value{}, &CodeError{Msg: fmt.Sprintf("your code must define %s", sig)}
	}
	wt := reflect.TypeOf(want)
	if v.Kind() != reflect.Func || !v.Type().ConvertibleTo(wt) {
		return reflect.Value{}, &CodeError{Msg: fmt.Sprintf("%s has type %s; the exercise needs %s", name, TypeString(v), sig)}
	}
	return v.Convert(wt), nil
}

// TypeString names the type of v for an error message ("nothing" when v
// is the zero Value: the student's code has no such name).
func TypeString(v reflect.Value) string {
	if !v.IsValid() {
		return "nothing"
	}
	return v.Type().String()
}

// PanicError is a panic in the student's code while a case ran.
type PanicError struct {
	Msg string // Go's runtime message, e.g. "index out of range"
}

func (e *PanicError) Error() string { return "panic: " + e.Msg }

// Call runs fn(args...) and turns a panic into a *PanicError that reads
// like Go's own runtime message. (yaegi's own panic trace names the
// function's frame, not the statement, so no line is reported.)
func Call(fn reflect.Value, args ...reflect.Value) (out []reflect.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Msg: panicText(r)}
		}
	}()
	return fn.Call(args), nil
}

// panicText cleans up a panic raised inside interpreted code.
func panicText(r any) string {
	s := fmt.Sprint(r)
	switch {
	case strings.Contains(s, "index out of range"):
		return "index out of range"
	case strings.Contains(s, "integer divide by zero"):
		return "integer divide by zero"
	case strings.Contains(s, "call of nil function"):
		return "call of a nil func"
	case strings.Contains(s, "nil pointer dereference"):
		return "nil pointer dereference"
	}
	return s
}

// noFS is an empty file system: the interpreter finds no source code to
// import, only the symbols it was given.
type noFS struct{}

func (noFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// constantsLast rewrites calls of the prelude's min and max so that an
// untyped constant is not the first argument: min(100, p) becomes
// min(p, 100). yaegi infers the type parameter from the first argument, so
// min(100, p) with p a float64 fails to compile where Go accepts it; min
// and max do not care about order. Only calls on one line are changed, so
// line numbers stay the student's.
func constantsLast(src string, declared map[string]bool) string {
	for range 100 { // each pass swaps one pair; the bound only guards the loop
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "student.go", src, parser.SkipObjectResolution)
		if err != nil {
			return src
		}
		var a, b ast.Expr
		ast.Inspect(f, func(n ast.Node) bool {
			if a != nil {
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 || !isConstant(call.Args[0]) {
				return true
			}
			id, ok := call.Fun.(*ast.Ident)
			if !ok || (id.Name != "min" && id.Name != "max") || declared[id.Name] {
				return true
			}
			if fset.Position(call.Pos()).Line != fset.Position(call.End()).Line {
				return true
			}
			for _, arg := range call.Args[1:] {
				if !isConstant(arg) {
					a, b = call.Args[0], arg
					return false
				}
			}
			return true
		})
		if a == nil {
			return src
		}
		as, ae := fset.Position(a.Pos()).Offset, fset.Position(a.End()).Offset
		bs, be := fset.Position(b.Pos()).Offset, fset.Position(b.End()).Offset
		src = src[:as] + src[bs:be] + src[ae:bs] + src[as:ae] + src[be:]
	}
	return src
}

// isConstant reports whether e is an untyped constant literal such as 0,
// -1, 100.0 or (1).
func isConstant(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.ParenExpr:
		return isConstant(e.X)
	case *ast.UnaryExpr:
		return (e.Op == token.SUB || e.Op == token.ADD) && isConstant(e.X)
	}
	return false
}

// aliasImports renames the packages listed in importAliases: the import
// path and, where the import has no name of its own, every use of the
// package name. Each alias has the length of the name it replaces, so no
// position moves.
func aliasImports(src string, fset *token.FileSet, f *ast.File) string {
	b := []byte(src)
	put := func(pos token.Pos, text string) {
		off := fset.Position(pos).Offset
		copy(b[off:off+len(text)], text)
	}
	renamed := map[string]string{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		alias, ok := importAliases[path]
		if !ok || len(alias) != len(path) {
			continue
		}
		put(imp.Path.Pos()+1, alias)
		switch {
		case imp.Name == nil:
			renamed[path] = alias
		case imp.Name.Name == path:
			put(imp.Name.Pos(), alias)
			renamed[path] = alias
		}
	}
	if len(renamed) == 0 {
		return src
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				if alias, ok := renamed[id.Name]; ok {
					put(id.Pos(), alias)
				}
			}
		}
		return true
	})
	return string(b)
}

// unalias turns the aliases of importAliases in a message back into the
// names the student wrote.
func unalias(msg string) string {
	for path, alias := range importAliases {
		msg = strings.ReplaceAll(msg, alias, path)
	}
	return msg
}
