package quiz

// A Ref is one $path an expression reads, for tools that check what an
// answer depends on (the lesson checker builds synthetic results from
// them).
type Ref struct {
	Text  string // as written, e.g. "$0.latency.put.p99_ns"
	Line  int    // N of $N
	Steps []Step // the .field and [index] steps after $N
	// Len is true when the path is the argument of len(): it names an
	// array (or object or string) whose length is read, not a number.
	Len bool
}

// Step is one step of a Ref: a field name, or an array index (negative
// counts from the end).
type Step struct {
	Key     string
	Index   int
	IsIndex bool
}

// Field is the last field name the path reads ("p99_ns" for
// $0.latency.put.p99_ns, "ops_per_sec" for $0[2].ops_per_sec), or "" for
// a path of indexes only.
func (r Ref) Field() string {
	for i := len(r.Steps) - 1; i >= 0; i-- {
		if !r.Steps[i].IsIndex {
			return r.Steps[i].Key
		}
	}
	return ""
}

// Refs returns the paths the expression reads, in the order written.
func (e *Expr) Refs() []Ref {
	var refs []Ref
	lenArg := map[*pathNode]bool{}
	walk(e.root, func(n node) {
		if c, ok := n.(*callNode); ok && c.fn == "len" {
			if p, ok := c.args[0].(*pathNode); ok {
				lenArg[p] = true
			}
		}
	})
	walk(e.root, func(n node) {
		p, ok := n.(*pathNode)
		if !ok {
			return
		}
		r := Ref{Text: p.text, Line: p.line, Len: lenArg[p]}
		for _, st := range p.steps {
			r.Steps = append(r.Steps, Step{Key: st.key, Index: st.index, IsIndex: st.isIdx})
		}
		refs = append(refs, r)
	})
	return refs
}
