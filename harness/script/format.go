package script

import (
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// string.format is what most scripts call to build their keys
// (string.format("cart/%04d/%04d", u, i)), once or more per unit, so its
// cost is most of the framework's floor. gopher-lua's own formats
// through fmt.Sprintf, rebuilding a format string for every argument;
// fastFormat writes the common shapes itself, with exactly the output
// gopher-lua's gives for them, and hands every other shape back to it:
//
//	%d with flags - and 0 and a width, for a number (its integer part)
//	%s with flag - and a width, for a string or a number
//
// A format with %%, a precision, another verb or flag, or an argument of
// another type (or one missing) is formatted by gopher-lua's own
// function. TestFormatMatchesGopherLua and FuzzFormat hold the two to
// the same output.

// formatter is one state's string.format: stock is gopher-lua's, buf the
// output buffer it reuses. It is not safe for concurrent use: a state
// runs on one goroutine at a time.
type formatter struct {
	stock lua.LGFunction
	buf   []byte
}

func (f *formatter) format(L *lua.LState) int {
	if s, ok := L.Get(1).(lua.LString); ok {
		if out, ok := f.fast(L, string(s)); ok {
			L.Push(lua.LString(out))
			return 1
		}
	}
	return f.stock(L)
}

// fast formats pattern with the arguments from stack index 2 on, and
// reports false for a shape it leaves to gopher-lua.
func (f *formatter) fast(L *lua.LState, pattern string) (string, bool) {
	b := f.buf[:0]
	arg, top := 2, L.GetTop()
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		// %[-0]*[width](d|s)
		left, zero := false, false
		for i++; i < len(pattern) && (pattern[i] == '-' || pattern[i] == '0'); i++ {
			left = left || pattern[i] == '-'
			zero = zero || pattern[i] == '0'
		}
		width := 0
		for ; i < len(pattern) && pattern[i] >= '0' && pattern[i] <= '9'; i++ { // the flags took any leading 0
			width = width*10 + int(pattern[i]-'0')
			if width > 99 {
				return "", false
			}
		}
		if i == len(pattern) || arg > top {
			return "", false
		}
		v := L.Get(arg)
		arg++
		start := len(b)
		switch pattern[i] {
		case 'd':
			n, ok := v.(lua.LNumber)
			if !ok {
				return "", false
			}
			b = strconv.AppendInt(b, int64(n), 10)
		case 's':
			if zero {
				return "", false
			}
			switch v := v.(type) {
			case lua.LString:
				b = append(b, v...)
			case lua.LNumber:
				b = append(b, v.String()...)
			default:
				return "", false
			}
		default:
			return "", false
		}
		b = pad(b, start, width, left, zero && !left)
	}
	f.buf = b
	return string(b), true
}

// pad widens b[start:] to width as fmt does: spaces on the right when
// left, zeros after the sign when zero, else spaces on the left.
func pad(b []byte, start, width int, left, zero bool) []byte {
	n := width - (len(b) - start)
	if n <= 0 {
		return b
	}
	if left {
		for range n {
			b = append(b, ' ')
		}
		return b
	}
	fill, at := byte(' '), start
	if zero {
		fill = '0'
		if b[start] == '-' || b[start] == '+' {
			at++
		}
	}
	for range n {
		b = append(b, 0)
	}
	copy(b[at+n:], b[at:len(b)-n])
	for i := at; i < at+n; i++ {
		b[i] = fill
	}
	return b
}
