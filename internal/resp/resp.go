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
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Limits on what a peer may send, so a bad or hostile peer cannot make
// the reader allocate without bound. (A line, inline command or header,
// is bounded by the bufio.Reader's size.) Memory is taken as bytes
// arrive, never on a peer's word: a header that declares a 16 MiB bulk
// string costs nothing until the bytes come (see bulk).
const (
	MaxArgs    = 1024     // elements of one command or array reply
	MaxBulk    = 16 << 20 // bytes of one bulk string
	MaxCommand = 32 << 20 // bytes of one command's bulk strings together
)

// growStep is the most a bulk string's buffer grows by before the bytes
// it has room for have arrived.
const growStep = 16 << 10

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
// Its buffer grows with what arrives (at most growStep ahead of it, then
// doubling), so a peer that declares MaxBulk and sends nothing holds
// growStep bytes of the reader's memory, not MaxBulk.
func bulk(r *bufio.Reader, n int64) ([]byte, error) {
	if n < 0 || n > MaxBulk {
		return nil, fmt.Errorf("%w: bulk length %d, allowed 0..%d", ErrProtocol, n, MaxBulk)
	}
	want := int(n) + 2
	b := make([]byte, 0, min(want, growStep))
	for len(b) < want {
		if len(b) == cap(b) {
			// Double, but take the rest at once rather than leave a
			// sliver (the CRLF) for one more copy.
			size := min(want, max(2*len(b), growStep))
			if want-size < growStep {
				size = want
			}
			b = append(make([]byte, 0, size), b...)
		}
		m, err := io.ReadFull(r, b[len(b):min(cap(b), want)])
		b = b[:len(b)+m]
		if err != nil {
			return nil, noEOF(err)
		}
	}
	if b[n] != '\r' || b[n+1] != '\n' {
		return nil, fmt.Errorf("%w: bulk string of %d bytes not followed by CRLF", ErrProtocol, n)
	}
	return b[:n:n], nil
}

// ReadCommand reads one command: an array of bulk strings, or an inline
// command (one line of words, as typed into telnet), parsed as Redis
// parses it: the line ends at LF (a CR before it is dropped), words are
// separated by spaces or tabs, and a word may be quoted, "..." with the
// escapes \n \r \t \b \a \\ \" and \xHH, or '...' with \' only. A line
// with no words is skipped. ReadCommand returns io.EOF when the peer
// closed the connection between commands.
func ReadCommand(r *bufio.Reader) ([][]byte, error) {
	for {
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
		if len(b) == 0 || b[0] != '*' {
			args, err := inline(b)
			if err != nil || len(args) > 0 {
				return args, err
			}
			continue
		}
		if len(b) < 2 || b[len(b)-2] != '\r' {
			return nil, fmt.Errorf("%w: line %q does not end in CRLF", ErrProtocol, b)
		}
		n, err := number(b[1:len(b)-2], "array length")
		if err != nil {
			return nil, err
		}
		if n < 1 || n > MaxArgs {
			return nil, fmt.Errorf("%w: command of %d arguments, allowed 1..%d", ErrProtocol, n, MaxArgs)
		}
		args := make([][]byte, 0, min(n, 16))
		total := int64(0)
		for i := range n {
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
			if total += max(size, 0); size <= MaxBulk && total > MaxCommand {
				return nil, fmt.Errorf("%w: command of more than %d bytes", ErrProtocol, MaxCommand)
			}
			a, err := bulk(r, size)
			if err != nil {
				return nil, noEOF(err)
			}
			args = append(args, a)
		}
		return args, nil
	}
}

// HasCommand reports whether r's buffer holds a whole command, or the
// start of one that ReadCommand will reject, so that ReadCommand would
// return without reading from the connection. A server calls it to decide
// whether to answer what it has before it waits for more.
func HasCommand(r *bufio.Reader) bool {
	b, _ := r.Peek(r.Buffered())
	for len(b) > 0 {
		eol := bytes.IndexByte(b, '\n')
		if eol < 0 {
			return false
		}
		if b[0] != '*' {
			if args, err := inline(b[:eol+1]); err != nil || len(args) > 0 {
				return true
			}
			b = b[eol+1:] // an empty line, which ReadCommand skips
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSuffix(b[1:eol], []byte("\r"))), 10, 64)
		if err != nil || n < 1 || n > MaxArgs {
			return true
		}
		b = b[eol+1:]
		for range n {
			eol := bytes.IndexByte(b, '\n')
			if eol < 0 {
				return false
			}
			if b[0] != '$' {
				return true
			}
			size, err := strconv.ParseInt(string(bytes.TrimSuffix(b[1:eol], []byte("\r"))), 10, 64)
			if err != nil || size < 0 || size > MaxBulk {
				return true
			}
			b = b[eol+1:]
			if int64(len(b)) < size+2 {
				return false
			}
			b = b[size+2:]
		}
		return true
	}
	return false
}

// inline splits an inline command's line (with its LF) into its words,
// as Redis's sdssplitargs does. The words are copies: the line is in the
// reader's buffer, which the next read reuses.
func inline(line []byte) ([][]byte, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	var args [][]byte
	unbalanced := fmt.Errorf("%w: unbalanced quotes in inline command", ErrProtocol)
	p := line
	for {
		for len(p) > 0 && isSpace(p[0]) {
			p = p[1:]
		}
		if len(p) == 0 {
			return args, nil
		}
		if len(args) == MaxArgs {
			return nil, fmt.Errorf("%w: inline command of more than %d words", ErrProtocol, MaxArgs)
		}
		var word []byte
		inDouble, inSingle := false, false
		for done := false; !done; {
			switch {
			case inDouble:
				switch {
				case len(p) == 0:
					return nil, unbalanced
				case len(p) >= 4 && p[0] == '\\' && p[1] == 'x' && isHex(p[2]) && isHex(p[3]):
					word = append(word, unhex(p[2])<<4|unhex(p[3]))
					p = p[4:]
				case len(p) >= 2 && p[0] == '\\':
					c := p[1]
					switch c {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					}
					word = append(word, c)
					p = p[2:]
				case p[0] == '"':
					// A closing quote must be followed by a space or the end.
					if len(p) > 1 && !isSpace(p[1]) {
						return nil, unbalanced
					}
					p, done = p[1:], true
				default:
					word = append(word, p[0])
					p = p[1:]
				}
			case inSingle:
				switch {
				case len(p) == 0:
					return nil, unbalanced
				case len(p) >= 2 && p[0] == '\\' && p[1] == '\'':
					word = append(word, '\'')
					p = p[2:]
				case p[0] == '\'':
					if len(p) > 1 && !isSpace(p[1]) {
						return nil, unbalanced
					}
					p, done = p[1:], true
				default:
					word = append(word, p[0])
					p = p[1:]
				}
			default:
				switch {
				case len(p) == 0 || isSpace(p[0]):
					done = true
				case p[0] == '"':
					inDouble = true
					p = p[1:]
				case p[0] == '\'':
					inSingle = true
					p = p[1:]
				default:
					word = append(word, p[0])
					p = p[1:]
				}
			}
		}
		if word == nil {
			word = []byte{}
		}
		args = append(args, word)
	}
}

// isSpace is sdssplitargs's separator (C's isspace): space, tab, CR, LF,
// vertical tab or form feed.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
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

// Writer is where replies and commands are written: a bufio.Writer over a
// connection, or a bytes.Buffer that holds replies until they may go.
type Writer interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
}

// WriteCommand writes args as an array of bulk strings.
func WriteCommand(w Writer, args ...[]byte) {
	w.WriteByte('*')
	w.WriteString(strconv.Itoa(len(args)))
	w.WriteString("\r\n")
	for _, a := range args {
		WriteBulk(w, a)
	}
}

// WriteSimple writes a simple string reply (+OK). s must not contain CR or LF.
func WriteSimple(w Writer, s string) {
	w.WriteByte('+')
	w.WriteString(s)
	w.WriteString("\r\n")
}

// WriteError writes an error reply; by convention msg starts with a code
// word such as ERR. CR and LF in msg are replaced by spaces.
func WriteError(w Writer, msg string) {
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
func WriteInt(w Writer, n int64) {
	w.WriteByte(':')
	w.WriteString(strconv.FormatInt(n, 10))
	w.WriteString("\r\n")
}

// WriteBulk writes a bulk string reply or argument.
func WriteBulk(w Writer, b []byte) {
	w.WriteByte('$')
	w.WriteString(strconv.Itoa(len(b)))
	w.WriteString("\r\n")
	w.Write(b)
	w.WriteString("\r\n")
}

// WriteNull writes the null bulk string ($-1), GET's reply for a missing key.
func WriteNull(w Writer) {
	w.WriteString("$-1\r\n")
}

// WriteArray writes the header of an array of n elements; the caller
// writes the elements.
func WriteArray(w Writer, n int) {
	w.WriteByte('*')
	w.WriteString(strconv.Itoa(n))
	w.WriteString("\r\n")
}
