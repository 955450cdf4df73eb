package gohost

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/traefik/yaegi/interp"
)

// The crash exercises' feedback points at the line of the student's code
// that issued the operation whose promise broke. The interpreter cannot
// tell a host function which line called it (runtime.Caller sees the
// interpreter's own frames), so the student's source is rewritten before
// it is evaluated: every statement that calls a method of the name of a
// kvfs operation that changes the disk is preceded by a call that tells
// the host its line,
//
//	x := 1
//	if err := s.log.Sync(); err != nil {
//
// becoming
//
//	x := 1; kvlabAtLine(12)
//	if err := s.log.Sync(); err != nil {
//
// The call goes at the end of the statement before it (or after the
// block's "{" or the case's ":"), so no line moves and nothing of a
// statement moves within its line either: a compile error's line and
// column are the student's own. A grader's recording reads the line
// back (StudentLine) for each operation (kvfs.Op.Line). It is the same rewrite in the
// browser's worker and in a native go test: plain Go, evaluated by the
// same interpreter.
//
// What it cannot see: a method value called later (w := f.Sync; w()), a
// deferred call (its statement's line is set when the defer runs, not
// when the call does) and a goroutine's call racing another's; an
// operation then carries the line set last, or 0 before any.

// lineOps are the names of the kvfs methods that change the disk, whose
// calls are marked with their line. A store's own method of the same
// name is marked too, which does no harm: the kvfs call inside it marks
// its own line when it runs.
var lineOps = map[string]bool{
	"Create": true, "OpenAppend": true, "Rename": true, "Remove": true, "SyncDir": true,
	"Write": true, "WriteAt": true, "Sync": true, "Truncate": true,
}

// lineHeader declares the function the rewrite calls; lineExports is the
// host function it reaches.
const lineHeader = `import kvlabline "kvlabline"

func kvlabAtLine(n int) { kvlabline.Set(n) }
`

var lineExports = interp.Exports{"kvlabline/kvlabline": {"Set": reflect.ValueOf(setStudentLine)}}

// studentLine is the line the student's code last said it was at
// (kvlabAtLine), read when an operation is recorded. Atomic: a store may
// sync from a goroutine of its own.
var studentLine atomic.Int64

func setStudentLine(n int) { studentLine.Store(int64(n)) }

// StudentLine returns the line of the student's source that issued the
// last kvfs operation changing the disk, in a program loaded with
// Prelude.Lines; 0 before any, or after ResetStudentLine.
func StudentLine() int { return int(studentLine.Load()) }

// ResetStudentLine sets StudentLine to 0: the calls that follow have
// issued no operation yet.
func ResetStudentLine() { studentLine.Store(0) }

// markLines returns src with a kvlabAtLine call before every statement
// that calls a method named in lineOps, giving the line of the first such
// call (a line of the student's text: shift is how many lines were added
// in front of it). src must parse; when it does not, it comes back as it
// was.
func markLines(src string, shift int) string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "student.go", src, parser.SkipObjectResolution)
	if err != nil {
		return src
	}
	type insert struct {
		at   int
		text string
	}
	var ins []insert
	// mark puts the call for stmt after the end of what precedes it:
	// prev, the statement before it in the same list, or the position
	// open (a block's "{", a case's ":"), which is one byte long.
	mark := func(list []ast.Stmt, open token.Pos) {
		for i, st := range list {
			line := firstOpCall(fset, st)
			if line == 0 {
				continue
			}
			call := "kvlabAtLine(" + strconv.Itoa(line-shift) + ")"
			if i == 0 {
				ins = append(ins, insert{fset.Position(open).Offset + 1, " " + call + ";"})
			} else {
				ins = append(ins, insert{fset.Position(list[i-1].End()).Offset, "; " + call})
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			mark(n.List, n.Lbrace)
		case *ast.CaseClause:
			mark(n.Body, n.Colon)
		case *ast.CommClause:
			mark(n.Body, n.Colon)
		}
		return true
	})
	// From the last to the first, so that each insertion leaves the
	// offsets before it right.
	slices.SortStableFunc(ins, func(a, b insert) int { return b.at - a.at })
	for _, in := range ins {
		src = src[:in.at] + in.text + src[in.at:]
	}
	return src
}

// firstOpCall returns the line of the first call in st of a method named
// in lineOps, or 0. The bodies st holds (an if's or a loop's block, a
// switch's cases, a function literal) are not looked into: their own
// statements are marked where they are. An else-if's condition is part
// of st.
func firstOpCall(fset *token.FileSet, st ast.Stmt) int {
	first := token.NoPos
	var look func(n ast.Node) bool
	look = func(n ast.Node) bool {
		switch n := n.(type) {
		case nil:
			return false
		case *ast.BlockStmt, *ast.FuncLit, *ast.CaseClause, *ast.CommClause:
			return false
		case *ast.IfStmt:
			// Its init and condition, and an else-if's, run as part
			// of the statement; its bodies are blocks.
			ast.Inspect(n.Init, look)
			ast.Inspect(n.Cond, look)
			ast.Inspect(n.Else, look)
			return false
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && lineOps[sel.Sel.Name] {
				if !first.IsValid() || sel.Sel.Pos() < first {
					first = sel.Sel.Pos()
				}
			}
		}
		return true
	}
	ast.Inspect(st, look)
	if !first.IsValid() {
		return 0
	}
	return fset.Position(first).Line
}
