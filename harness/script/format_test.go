package script

import (
	"math"
	"math/rand/v2"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// formatBoth calls string.format(pattern, args...) in a state with
// gopher-lua's own string library and in a script's state, and returns
// each one's result (or error).
func formatBoth(t testing.TB, pattern string, args ...lua.LValue) (stock, ours string) {
	t.Helper()
	call := func(L *lua.LState) string {
		L.Push(L.GetField(L.GetGlobal("string"), "format"))
		L.Push(lua.LString(pattern))
		for _, a := range args {
			L.Push(a)
		}
		if err := L.PCall(1+len(args), 1, nil); err != nil {
			return "error: " + luaErr(err).Error()
		}
		v := L.Get(-1)
		L.Pop(1)
		return v.Type().String() + ":" + v.String()
	}
	s := lua.NewState()
	defer s.Close()
	o := newState(Limits{}.defaults(), rand.New(rand.NewPCG(1, 1)))
	defer o.Close()
	return call(s), call(o)
}

// TestFormatMatchesGopherLua: string.format's fast path gives exactly
// gopher-lua's output for the shapes it writes itself, and the shapes it
// hands back give gopher-lua's output (or error) too.
func TestFormatMatchesGopherLua(t *testing.T) {
	n := func(x float64) lua.LValue { return lua.LNumber(x) }
	s := func(x string) lua.LValue { return lua.LString(x) }
	cases := []struct {
		pattern string
		args    []lua.LValue
	}{
		{"k%010d", []lua.LValue{n(42)}},
		{"k%010d", []lua.LValue{n(-42)}},
		{"k%010d", []lua.LValue{n(12345678901)}},
		{"cart/%04d/%04d", []lua.LValue{n(7), n(123456)}},
		{"%d", []lua.LValue{n(2.75)}},
		{"%d", []lua.LValue{n(-2.75)}},
		{"%d", []lua.LValue{n(math.Inf(1))}},
		{"%d", []lua.LValue{n(math.NaN())}},
		{"%5d|%-5d|%-05d|%05d", []lua.LValue{n(-3), n(-3), n(3), n(-3)}},
		{"%00d|%0-3d", []lua.LValue{n(1), n(1)}},
		{"%s/%s", []lua.LValue{s("user"), n(3)}},
		{"%s", []lua.LValue{n(0.5)}},
		{"%s", []lua.LValue{n(1e21)}},
		{"%8s|%-8s|", []lua.LValue{s("ab"), s("ab")}},
		{"%s", []lua.LValue{s("")}},
		{"no verbs", nil},
		{"no verbs", []lua.LValue{n(1)}},
		{"", nil},
		{"%d %d", []lua.LValue{n(1), n(2), n(3)}},
		// handed back to gopher-lua:
		{"%d", nil},
		{"%d %d", []lua.LValue{n(1)}},
		{"%d", []lua.LValue{s("12")}},
		{"%s", []lua.LValue{lua.LTrue}},
		{"%s", []lua.LValue{lua.LNil}},
		{"%05s", []lua.LValue{s("ab")}},
		{"%.3f", []lua.LValue{n(1.5)}},
		{"%x", []lua.LValue{n(255)}},
		{"%+d", []lua.LValue{n(5)}},
		{"100%% %d", []lua.LValue{n(5)}},
		{"%5.2s", []lua.LValue{s("abc")}},
		{"trailing %", []lua.LValue{n(5)}},
		{"%", nil},
		{"%q", []lua.LValue{s("a\"b")}},
		{"%123d", []lua.LValue{n(1)}},
	}
	for _, c := range cases {
		stock, ours := formatBoth(t, c.pattern, c.args...)
		if ours != stock {
			t.Errorf("string.format(%q, %v): got %q, want gopher-lua's %q", c.pattern, c.args, ours, stock)
		}
	}
}

// FuzzFormat holds string.format's fast path to gopher-lua's output for
// any pattern and a number, a string and a fraction as arguments.
func FuzzFormat(f *testing.F) {
	f.Add("k%010d/%s", int64(42), "x", 0.5)
	f.Add("%-5d|%05d|%8s", int64(-7), "ab", 1e21)
	f.Add("%s%d%%", int64(0), "", -0.0)
	f.Fuzz(func(t *testing.T, pattern string, i int64, s string, x float64) {
		args := []lua.LValue{lua.LNumber(i), lua.LString(s), lua.LNumber(x)}
		for j := range args {
			rot := append(args[j:len(args):len(args)], args[:j]...)
			stock, ours := formatBoth(t, pattern, rot...)
			if ours != stock {
				t.Errorf("string.format(%q, %v): got %q, want gopher-lua's %q", pattern, rot, ours, stock)
			}
		}
	})
}
