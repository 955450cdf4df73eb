// Package resp reads and writes RESP2, the Redis serialization protocol,
// as far as kvlab speaks it: a client sends each command as an array of
// bulk strings (or, typed by hand, as one inline line), and a server
// answers with a simple string, an error, an integer, a bulk string (or
// the null bulk string) or an array of those.
//
//	*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n    the command SET k v
//	+OK\r\n   -ERR message\r\n   :1\r\n   $1\r\nv\r\n   $-1\r\n
//
// Both sides may pipeline: a client writes many commands before reading
// any reply, and a server answers them in order. Nothing here buffers on
// its own: callers wrap their connection in a bufio.Reader and
// bufio.Writer and decide when to flush, which is where pipelining is
// won or lost.
package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Limits on what a peer may send, so a bad or hostile peer cannot make
// the reader allocate without bound. (A line, inline command or header,
// is bounded by the bufio.Reader's size.)
const (
	MaxArgs = 1024     // elements of one command or array reply
	MaxBulk = 16 << 20 // bytes of one bulk string
)

// ErrProtocol is wrapped by every error about malformed input.
var ErrProtocol = errors.New("resp: protocol error")

// Kind is the type of a reply.
type Kind byte

// The reply kinds, by their first byte on the wire.
const (
	Simple  Kind = '+'
	Error   Kind = '-'
	Integer Kind = ':'
	Bulk    Kind = '$'
	Array   Kind = '*'
)

// Reply is one decoded reply.
type Reply struct {
	Kind  Kind
	Str   []byte  // Simple, Error, Bulk
	Int   int64   // Integer
	Null  bool    // Bulk or Array: the null reply ($-1 or *-1)
	Elems []Reply // Array
}

// Err returns the reply as an error when it is one, else nil.
func (r Reply) Err() error {
	if r.Kind == Error {
		return ServerError(r.Str)
	}
	return nil
}

// ServerError is an error reply from the server, e.g. "ERR unknown command".
type ServerError string

func (e ServerError) Error() string { return "resp: server replied: " + string(e) }

// line reads one CRLF-terminated line without its CRLF.
func line(r *bufio.Reader) ([]byte, error) {
	b, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%w: line longer than %d bytes", ErrProtocol, r.Size())
	}
	if err != nil {
		if err == io.EOF && len(b) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if len(b) < 2 || b[len(b)-2] != '\r' {
		return nil, fmt.Errorf("%w: line %q does not end in CRLF", ErrProtocol, b)
	}
	return b[:len(b)-2], nil
}

// number parses the length or integer after a type byte.
func number(b []byte, what string) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q is not a number", ErrProtocol, what, b)
	}
	return n, nil
}

// bulk reads the n bytes and CRLF of a bulk string whose header said n.
func bulk(r *bufio.Reader, n int64) ([]byte, error) {
	if n < 0 || n > MaxBulk {
		return nil, fmt.Errorf("%w: bulk length %d, allowed 0..%d", ErrProtocol, n, MaxBulk)
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if b[n] != '\r' || b[n+1] != '\n' {
		return nil, fmt.Errorf("%w: bulk string of %d bytes not followed by CRLF", ErrProtocol, n)
	}
	return b[:n], nil
}

// ReadCommand reads one command: an array of bulk strings, or an inline
// command (words separated by spaces, as typed into telnet). It returns
// io.EOF when the peer closed the connection between commands. An empty
// inline line is skipped.
func ReadCommand(r *bufio.Reader) ([][]byte, error) {
	for {
		b, err := line(r)
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			continue
		}
		if b[0] != '*' {
			return inline(b), nil
		}
		n, err := number(b[1:], "array length")
		if err != nil {
			return nil, err
		}
		if n < 1 || n > MaxArgs {
			return nil, fmt.Errorf("%w: command of %d arguments, allowed 1..%d", ErrProtocol, n, MaxArgs)
		}
		args := make([][]byte, n)
		for i := range args {
			h, err := line(r)
			if err != nil {
				return nil, noEOF(err)
			}
			if len(h) == 0 || h[0] != '$' {
				return nil, fmt.Errorf("%w: argument %d is %q, want a bulk string ($LEN)", ErrProtocol, i+1, h)
			}
			size, err := number(h[1:], "bulk length")
			if err != nil {
				return nil, err
			}
			if args[i], err = bulk(r, size); err != nil {
				return nil, noEOF(err)
			}
		}
		return args, nil
	}
}

// inline splits an inline command into its words.
func inline(b []byte) [][]byte {
	var args [][]byte
	start := -1
	for i, c := range b {
		switch {
		case c == ' ' || c == '\t':
			if start >= 0 {
				args = append(args, b[start:i:i])
				start = -1
			}
		case start < 0:
			start = i
		}
	}
	if start >= 0 {
		args = append(args, b[start:len(b):len(b)])
	}
	// The words point into the reader's buffer, which the next read reuses.
	for i, a := range args {
		args[i] = append([]byte(nil), a...)
	}
	return args
}

// noEOF turns an EOF in the middle of a message into ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ReadReply reads one reply.
func ReadReply(r *bufio.Reader) (Reply, error) {
	return readReply(r, 0)
}

func readReply(r *bufio.Reader, depth int) (Reply, error) {
	b, err := line(r)
	if err != nil {
		return Reply{}, err
	}
	if len(b) == 0 {
		return Reply{}, fmt.Errorf("%w: empty reply line", ErrProtocol)
	}
	rep := Reply{Kind: Kind(b[0])}
	switch rep.Kind {
	case Simple, Error:
		rep.Str = append([]byte(nil), b[1:]...)
	case Integer:
		rep.Int, err = number(b[1:], "integer")
	case Bulk:
		var n int64
		if n, err = number(b[1:], "bulk length"); err == nil {
			if n == -1 {
				rep.Null = true
			} else {
				rep.Str, err = bulk(r, n)
			}
		}
	case Array:
		var n int64
		if n, err = number(b[1:], "array length"); err != nil {
			break
		}
		if n == -1 {
			rep.Null = true
			break
		}
		if n < 0 || n > MaxArgs || depth > 8 {
			return Reply{}, fmt.Errorf("%w: array of %d elements at depth %d, allowed 0..%d, depth 8", ErrProtocol, n, depth, MaxArgs)
		}
		rep.Elems = make([]Reply, n)
		for i := range rep.Elems {
			if rep.Elems[i], err = readReply(r, depth+1); err != nil {
				return Reply{}, noEOF(err)
			}
		}
	default:
		return Reply{}, fmt.Errorf("%w: reply starts with %q, want one of + - : $ *", ErrProtocol, b[0])
	}
	return rep, noEOF(err)
}

// WriteCommand writes args as an array of bulk strings.
func WriteCommand(w *bufio.Writer, args ...[]byte) {
	w.WriteByte('*')
	w.WriteString(strconv.Itoa(len(args)))
	w.WriteString("\r\n")
	for _, a := range args {
		WriteBulk(w, a)
	}
}

// WriteSimple writes a simple string reply (+OK). s must not contain CR or LF.
func WriteSimple(w *bufio.Writer, s string) {
	w.WriteByte('+')
	w.WriteString(s)
	w.WriteString("\r\n")
}

// WriteError writes an error reply; by convention msg starts with a code
// word such as ERR. CR and LF in msg are replaced by spaces.
func WriteError(w *bufio.Writer, msg string) {
	w.WriteByte('-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		w.WriteByte(c)
	}
	w.WriteString("\r\n")
}

// WriteInt writes an integer reply.
func WriteInt(w *bufio.Writer, n int64) {
	w.WriteByte(':')
	w.WriteString(strconv.FormatInt(n, 10))
	w.WriteString("\r\n")
}

// WriteBulk writes a bulk string reply or argument.
func WriteBulk(w *bufio.Writer, b []byte) {
	w.WriteByte('$')
	w.WriteString(strconv.Itoa(len(b)))
	w.WriteString("\r\n")
	w.Write(b)
	w.WriteString("\r\n")
}

// WriteNull writes the null bulk string ($-1), GET's reply for a missing key.
func WriteNull(w *bufio.Writer) {
	w.WriteString("$-1\r\n")
}
