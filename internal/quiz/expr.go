package quiz

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// An Expr is a parsed answer or show expression. It is safe for concurrent
// use: evaluation does not modify it.
//
// Grammar (lowest precedence first):
//
//	expr    = or
//	or      = and { "||" and }
//	and     = cmp { "&&" cmp }
//	cmp     = sum [ ("<" | "<=" | ">" | ">=" | "==" | "!=") sum ]
//	sum     = product { ("+" | "-") product }
//	product = unary { ("*" | "/") unary }
//	unary   = [ "-" | "!" ] primary
//	primary = number | string | path | func "(" expr { "," expr } ")" | "(" expr ")"
//	path    = "$" digits { "." key | "[" ["-"] digits "]" }
//
// Comparisons and logical operators give 1 or 0. Strings may only be
// compared with == and !=. JSON booleans read as 1 and 0.
//
// Functions: if(c, a, b); min, max and median of one or more numbers
// (median of three runs is the usual summary of -repeat 3); abs, log10,
// sqrt; len($path) of an array.
type Expr struct {
	src  string
	root node
}

// String returns the source text of the expression.
func (e *Expr) String() string { return e.src }

// Value is the result of evaluating an expression: a number or a string.
type Value struct {
	Num   float64
	Str   string
	IsStr bool
}

func (v Value) String() string {
	if v.IsStr {
		return v.Str
	}
	return FormatNumber(v.Num)
}

// FormatNumber prints a number the way quiz feedback shows it: integers
// without a fraction, other values with up to four significant digits.
func FormatNumber(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return strconv.FormatFloat(f, 'g', -1, 64)
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return strconv.FormatInt(int64(f), 10)
	case math.Abs(f) >= 100:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
}

type node interface {
	eval(results []any) (Value, error)
}

// functions lists the callable functions with their argument counts;
// variadic (-1) ones take one or more.
var functions = map[string]int{
	"if": 3, "min": variadic, "max": variadic, "median": variadic, "abs": 1, "log10": 1, "sqrt": 1, "len": 1,
}

const variadic = -1

// ParseExpr parses an expression. Errors name the offending position.
func ParseExpr(src string) (*Expr, error) {
	p := &parser{src: src}
	p.next()
	if p.tok.kind == tEOF {
		return nil, fmt.Errorf("empty expression")
	}
	n, err := p.parseOr()
	if p.err != nil {
		return nil, p.err
	}
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.errorf("unexpected %q", p.tok.text)
	}
	return &Expr{src: src, root: n}, nil
}

// Eval evaluates the expression against results, where results[N] is the
// decoded JSON (encoding/json into any) of line N.
func (e *Expr) Eval(results []any) (Value, error) {
	return e.root.eval(results)
}

// maxLine returns the highest line number ($N) the expression reads, or -1.
func (e *Expr) maxLine() int {
	m := -1
	walk(e.root, func(n node) {
		if p, ok := n.(*pathNode); ok && p.line > m {
			m = p.line
		}
	})
	return m
}

func walk(n node, fn func(node)) {
	fn(n)
	switch n := n.(type) {
	case *binNode:
		walk(n.l, fn)
		walk(n.r, fn)
	case *unNode:
		walk(n.x, fn)
	case *callNode:
		for _, a := range n.args {
			walk(a, fn)
		}
	}
}

// ---- lexer

type tokKind int

const (
	tEOF tokKind = iota
	tNum
	tStr
	tIdent
	tPath
	tOp
)

type token struct {
	kind tokKind
	text string
	pos  int
	num  float64
}

type parser struct {
	src string
	off int
	tok token
	err error
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("expression %q at column %d: %s", p.src, p.tok.pos+1, fmt.Sprintf(format, args...))
}

func (p *parser) next() {
	s := p.src
	for p.off < len(s) && (s[p.off] == ' ' || s[p.off] == '\t') {
		p.off++
	}
	start := p.off
	if p.off >= len(s) {
		p.tok = token{kind: tEOF, pos: start, text: "end of expression"}
		return
	}
	c := s[p.off]
	switch {
	case c >= '0' && c <= '9' || c == '.' && p.off+1 < len(s) && s[p.off+1] >= '0' && s[p.off+1] <= '9':
		end := p.off
		for end < len(s) && (isDigit(s[end]) || s[end] == '.' || s[end] == '_' ||
			s[end] == 'e' || s[end] == 'E' ||
			(s[end] == '-' || s[end] == '+') && end > 0 && (s[end-1] == 'e' || s[end-1] == 'E')) {
			end++
		}
		text := s[start:end]
		f, err := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64)
		if err != nil {
			p.tok = token{kind: tOp, text: text, pos: start}
			p.err = fmt.Errorf("expression %q at column %d: bad number %q", p.src, start+1, text)
		}
		p.off = end
		p.tok = token{kind: tNum, text: text, pos: start, num: f}
	case c == '"' || c == '\'':
		end := strings.IndexByte(s[p.off+1:], c)
		if end < 0 {
			p.err = fmt.Errorf("expression %q at column %d: unterminated string", p.src, start+1)
			p.off = len(s)
			p.tok = token{kind: tEOF, pos: start, text: "end of expression"}
			return
		}
		p.tok = token{kind: tStr, text: s[p.off+1 : p.off+1+end], pos: start}
		p.off += end + 2
	case c == '$':
		end := p.off + 1
		for end < len(s) && (isIdent(s[end]) || s[end] == '.' || s[end] == '[' || s[end] == ']' || s[end] == '-' && end > 0 && s[end-1] == '[') {
			end++
		}
		p.tok = token{kind: tPath, text: s[start:end], pos: start}
		p.off = end
	case isIdent(c):
		end := p.off
		for end < len(s) && isIdent(s[end]) {
			end++
		}
		p.tok = token{kind: tIdent, text: s[start:end], pos: start}
		p.off = end
	default:
		for _, op := range []string{"<=", ">=", "==", "!=", "&&", "||", "<", ">", "+", "-", "*", "/", "(", ")", ",", "!"} {
			if strings.HasPrefix(s[p.off:], op) {
				p.tok = token{kind: tOp, text: op, pos: start}
				p.off += len(op)
				return
			}
		}
		p.tok = token{kind: tOp, text: string(c), pos: start}
		p.err = fmt.Errorf("expression %q at column %d: unexpected character %q (allowed: numbers, $paths, + - * / ( ), comparisons, && ||, functions)", p.src, start+1, string(c))
		p.off++
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c)
}

func (p *parser) is(op string) bool { return p.tok.kind == tOp && p.tok.text == op }

// parseLeft parses one precedence level, operand (op operand)*, grouping
// to the left: a - b - c is (a - b) - c.
func (p *parser) parseLeft(operand func() (node, error), ops ...string) (node, error) {
	l, err := operand()
	for err == nil && slices.ContainsFunc(ops, p.is) {
		op := p.tok.text
		p.next()
		var r node
		if r, err = operand(); err == nil {
			l = &binNode{op: op, l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) parseOr() (node, error)  { return p.parseLeft(p.parseAnd, "||") }
func (p *parser) parseAnd() (node, error) { return p.parseLeft(p.parseCmp, "&&") }

func (p *parser) parseCmp() (node, error) {
	l, err := p.parseSum()
	if err != nil {
		return nil, err
	}
	for _, op := range []string{"<", "<=", ">", ">=", "==", "!="} {
		if p.is(op) {
			p.next()
			r, err := p.parseSum()
			if err != nil {
				return nil, err
			}
			return &binNode{op: op, l: l, r: r}, nil
		}
	}
	return l, nil
}

func (p *parser) parseSum() (node, error)     { return p.parseLeft(p.parseProduct, "+", "-") }
func (p *parser) parseProduct() (node, error) { return p.parseLeft(p.parseUnary, "*", "/") }

func (p *parser) parseUnary() (node, error) {
	if p.is("-") || p.is("!") {
		op := p.tok.text
		p.next()
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return &unNode{op: op, x: x}, nil
	}
	return p.parsePrimary()
}

func (p *parser) parsePrimary() (node, error) {
	if p.err != nil {
		return nil, p.err
	}
	t := p.tok
	switch t.kind {
	case tNum:
		p.next()
		return numNode(t.num), nil
	case tStr:
		p.next()
		return strNode(t.text), nil
	case tPath:
		n, err := parsePath(t.text)
		if err != nil {
			return nil, p.errorf("%v", err)
		}
		p.next()
		return n, nil
	case tIdent:
		want, ok := functions[t.text]
		if !ok {
			return nil, p.errorf("unknown name %q (functions: if, min, max, median, abs, log10, sqrt, len; results are $0, $1, ...)", t.text)
		}
		p.next()
		if !p.is("(") {
			return nil, p.errorf("want ( after %s", t.text)
		}
		p.next()
		var args []node
		for {
			a, err := p.parseOr()
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if p.is(",") {
				p.next()
				continue
			}
			if p.is(")") {
				p.next()
				break
			}
			return nil, p.errorf("want , or ) in call to %s, got %q", t.text, p.tok.text)
		}
		if want == variadic && len(args) == 0 {
			return nil, fmt.Errorf("expression %q at column %d: %s takes one or more arguments, got none", p.src, t.pos+1, t.text)
		}
		if want != variadic && len(args) != want {
			return nil, fmt.Errorf("expression %q at column %d: %s takes %d arguments, got %d", p.src, t.pos+1, t.text, want, len(args))
		}
		return &callNode{fn: t.text, args: args}, nil
	case tOp:
		if t.text == "(" {
			p.next()
			n, err := p.parseOr()
			if err != nil {
				return nil, err
			}
			if !p.is(")") {
				return nil, p.errorf("want ), got %q", p.tok.text)
			}
			p.next()
			return n, nil
		}
	}
	return nil, p.errorf("unexpected %q: want a number, a $path, a function or (", t.text)
}

// ---- nodes

type numNode float64

func (n numNode) eval([]any) (Value, error) { return Value{Num: float64(n)}, nil }

type strNode string

func (n strNode) eval([]any) (Value, error) { return Value{Str: string(n), IsStr: true}, nil }

type pathStep struct {
	key   string
	index int
	isIdx bool
}

type pathNode struct {
	text  string
	line  int
	steps []pathStep
}

func parsePath(text string) (*pathNode, error) {
	s := text[1:]
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == 0 {
		return nil, fmt.Errorf("path %q: want a line number after $ ($0 is the first line)", text)
	}
	line, _ := strconv.Atoi(s[:i])
	n := &pathNode{text: text, line: line}
	s = s[i:]
	for len(s) > 0 {
		switch s[0] {
		case '.':
			j := 1
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			if j == 1 {
				return nil, fmt.Errorf("path %q: want a field name after '.'", text)
			}
			n.steps = append(n.steps, pathStep{key: s[1:j]})
			s = s[j:]
		case '[':
			j := strings.IndexByte(s, ']')
			if j < 0 {
				return nil, fmt.Errorf("path %q: missing ]", text)
			}
			idx, err := strconv.Atoi(s[1:j])
			if err != nil {
				return nil, fmt.Errorf("path %q: index %q is not an integer", text, s[1:j])
			}
			n.steps = append(n.steps, pathStep{index: idx, isIdx: true})
			s = s[j+1:]
		default:
			return nil, fmt.Errorf("path %q: unexpected %q (use .field or [index])", text, s[:1])
		}
	}
	return n, nil
}

// resolve walks the path through results and returns the raw JSON value.
func (n *pathNode) resolve(results []any) (any, error) {
	if n.line >= len(results) || results[n.line] == nil {
		return nil, fmt.Errorf("%s: there is no result for line %d (have %d)", n.text, n.line, len(results))
	}
	v := results[n.line]
	walked := fmt.Sprintf("$%d", n.line)
	for _, st := range n.steps {
		switch x := v.(type) {
		case map[string]any:
			if st.isIdx {
				return nil, fmt.Errorf("%s: %s is an object, not an array", n.text, walked)
			}
			f, ok := x[st.key]
			if !ok {
				return nil, fmt.Errorf("%s: %s has no field %q", n.text, walked, st.key)
			}
			v = f
			walked += "." + st.key
		case []any:
			if !st.isIdx {
				return nil, fmt.Errorf("%s: %s is an array of %d, not an object (use [i])", n.text, walked, len(x))
			}
			i := st.index
			if i < 0 {
				i += len(x)
			}
			if i < 0 || i >= len(x) {
				return nil, fmt.Errorf("%s: index %d out of range for %s (length %d)", n.text, st.index, walked, len(x))
			}
			v = x[i]
			walked += fmt.Sprintf("[%d]", st.index)
		default:
			return nil, fmt.Errorf("%s: %s is a %s, it has no fields", n.text, walked, typeName(v))
		}
	}
	return v, nil
}

func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "number"
}

func (n *pathNode) eval(results []any) (Value, error) {
	v, err := n.resolve(results)
	if err != nil {
		return Value{}, err
	}
	switch x := v.(type) {
	case float64:
		return Value{Num: x}, nil
	case string:
		return Value{Str: x, IsStr: true}, nil
	case bool:
		if x {
			return Value{Num: 1}, nil
		}
		return Value{Num: 0}, nil
	}
	return Value{}, fmt.Errorf("%s is a %s, not a number (pick a field inside it)", n.text, typeName(v))
}

type binNode struct {
	op   string
	l, r node
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (n *binNode) eval(results []any) (Value, error) {
	l, err := n.l.eval(results)
	if err != nil {
		return Value{}, err
	}
	// Short-circuit the logical operators.
	if n.op == "&&" || n.op == "||" {
		if l.IsStr {
			return Value{}, fmt.Errorf("%s needs numbers, got string %q", n.op, l.Str)
		}
		if n.op == "&&" && l.Num == 0 || n.op == "||" && l.Num != 0 {
			return Value{Num: b2f(l.Num != 0)}, nil
		}
	}
	r, err := n.r.eval(results)
	if err != nil {
		return Value{}, err
	}
	if l.IsStr || r.IsStr {
		if !(l.IsStr && r.IsStr) || n.op != "==" && n.op != "!=" {
			return Value{}, fmt.Errorf("cannot apply %s to %s and %s (strings only compare with == and !=)", n.op, l.quoted(), r.quoted())
		}
		return Value{Num: b2f((l.Str == r.Str) == (n.op == "=="))}, nil
	}
	a, b := l.Num, r.Num
	switch n.op {
	case "+":
		return Value{Num: a + b}, nil
	case "-":
		return Value{Num: a - b}, nil
	case "*":
		return Value{Num: a * b}, nil
	case "/":
		if b == 0 {
			return Value{}, fmt.Errorf("division by zero (the right side of / is 0)")
		}
		return Value{Num: a / b}, nil
	case "<":
		return Value{Num: b2f(a < b)}, nil
	case "<=":
		return Value{Num: b2f(a <= b)}, nil
	case ">":
		return Value{Num: b2f(a > b)}, nil
	case ">=":
		return Value{Num: b2f(a >= b)}, nil
	case "==":
		return Value{Num: b2f(a == b)}, nil
	case "!=":
		return Value{Num: b2f(a != b)}, nil
	case "&&", "||":
		return Value{Num: b2f(b != 0)}, nil
	}
	panic("quiz: unknown operator " + n.op + " (parser invariant broken)")
}

func (v Value) quoted() string {
	if v.IsStr {
		return strconv.Quote(v.Str)
	}
	return FormatNumber(v.Num)
}

type unNode struct {
	op string
	x  node
}

func (n *unNode) eval(results []any) (Value, error) {
	v, err := n.x.eval(results)
	if err != nil {
		return Value{}, err
	}
	if v.IsStr {
		return Value{}, fmt.Errorf("cannot apply %s to string %q", n.op, v.Str)
	}
	if n.op == "-" {
		return Value{Num: -v.Num}, nil
	}
	return Value{Num: b2f(v.Num == 0)}, nil
}

type callNode struct {
	fn   string
	args []node
}

func (n *callNode) eval(results []any) (Value, error) {
	if n.fn == "len" {
		if p, ok := n.args[0].(*pathNode); ok {
			v, err := p.resolve(results)
			if err != nil {
				return Value{}, err
			}
			switch x := v.(type) {
			case []any:
				return Value{Num: float64(len(x))}, nil
			case map[string]any:
				return Value{Num: float64(len(x))}, nil
			case string:
				return Value{Num: float64(len(x))}, nil
			}
			return Value{}, fmt.Errorf("len(%s): it is a %s, not an array", p.text, typeName(v))
		}
		return Value{}, fmt.Errorf("len needs a $path to an array")
	}
	if n.fn == "if" {
		c, err := n.args[0].eval(results)
		if err != nil {
			return Value{}, err
		}
		if c.IsStr {
			return Value{}, fmt.Errorf("if: the condition is a string %q, want a comparison", c.Str)
		}
		if c.Num != 0 {
			return n.args[1].eval(results)
		}
		return n.args[2].eval(results)
	}
	vals := make([]float64, len(n.args))
	for i, a := range n.args {
		v, err := a.eval(results)
		if err != nil {
			return Value{}, err
		}
		if v.IsStr {
			return Value{}, fmt.Errorf("%s: argument %d is string %q, want a number", n.fn, i+1, v.Str)
		}
		vals[i] = v.Num
	}
	switch n.fn {
	case "min":
		return Value{Num: slices.Min(vals)}, nil
	case "max":
		return Value{Num: slices.Max(vals)}, nil
	case "median":
		// The middle value; of an even count, the mean of the middle two.
		slices.Sort(vals)
		m := len(vals) / 2
		if len(vals)%2 == 1 {
			return Value{Num: vals[m]}, nil
		}
		return Value{Num: (vals[m-1] + vals[m]) / 2}, nil
	case "abs":
		return Value{Num: math.Abs(vals[0])}, nil
	case "log10":
		if vals[0] <= 0 {
			return Value{}, fmt.Errorf("log10(%s): the argument must be positive", FormatNumber(vals[0]))
		}
		return Value{Num: math.Log10(vals[0])}, nil
	case "sqrt":
		if vals[0] < 0 {
			return Value{}, fmt.Errorf("sqrt(%s): the argument must not be negative", FormatNumber(vals[0]))
		}
		return Value{Num: math.Sqrt(vals[0])}, nil
	}
	panic("quiz: unknown function " + n.fn + " (parser invariant broken)")
}
