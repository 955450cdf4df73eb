package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func reader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

func TestReadCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string // substring of the error; "" for none
	}{
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nvv\r\n", []string{"SET", "k", "vv"}, ""},
		{"*2\r\n$3\r\nGET\r\n$0\r\n\r\n", []string{"GET", ""}, ""},
		{"PING\r\n", []string{"PING"}, ""},
		{"\r\n  set  a   b \r\n", []string{"set", "a", "b"}, ""},
		{"*0\r\n", nil, "command of 0 arguments"},
		{"*2\r\n$3\r\nGET\r\n", nil, "unexpected EOF"},
		{"*1\r\n:3\r\n", nil, "want a bulk string"},
		{"*1\r\n$3\r\nGETX\r\n", nil, "not followed by CRLF"},
		{"*1\r\n$99999999\r\n", nil, "bulk length 99999999"},
		{"*x\r\n", nil, "array length \"x\" is not a number"},
		{"PING\n", []string{"PING"}, ""},
		{"set a b\nget a\n", []string{"set", "a", "b"}, ""},
		{`SET "a b" 'c d'` + "\r\n", []string{"SET", "a b", "c d"}, ""},
		{`SET k "x\x41\n\"y" 'it\'s'` + "\n", []string{"SET", "k", "xA\n\"y", "it's"}, ""},
		{`ECHO ""` + "\n", []string{"ECHO", ""}, ""},
		{`ECHO a"b c"` + "\n", []string{"ECHO", "ab c"}, ""},
		{`ECHO "abc` + "\n", nil, "unbalanced quotes"},
		{`ECHO "abc"d` + "\n", nil, "unbalanced quotes"},
		{`ECHO 'abc` + "\n", nil, "unbalanced quotes"},
		{"  \t \r\n\nPING\r\n", []string{"PING"}, ""},
		{"*1\n$4\r\nPING\r\n", nil, "does not end in CRLF"},
		{"*1\r\n$4\r\nPI", nil, "unexpected EOF"},
		{"", nil, "EOF"},
	}
	for _, tt := range tests {
		got, err := ReadCommand(reader(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ReadCommand(%q) error = %v, want one containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ReadCommand(%q): %v", tt.in, err)
			continue
		}
		var words []string
		for _, a := range got {
			words = append(words, string(a))
		}
		if !reflect.DeepEqual(words, tt.want) {
			t.Errorf("ReadCommand(%q) = %q, want %q", tt.in, words, tt.want)
		}
	}
}

// TestHasCommand checks that HasCommand answers true exactly when
// ReadCommand would return without reading past the buffered bytes.
func TestHasCommand(t *testing.T) {
	full := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nvv\r\n"
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"PING", false},
		{"PING\n", true},
		{"\r\n", false},
		{"\r\n\nPING\r\n", true},
		{full, true},
		{"*1\r\n$4\r\nPING\r\n" + full[:10], true},
		{"*x\r\n", true},              // an error ReadCommand reports at once
		{"*1\r\n$99999999\r\n", true}, // likewise
		{"ECHO \"a\n", true},
	}
	for i := 1; i < len(full); i++ {
		tests = append(tests, struct {
			in   string
			want bool
		}{full[:i], false})
	}
	for _, tt := range tests {
		// A reader over a pipe would block; this one returns EOF, so the
		// buffer holds exactly tt.in once Peek has filled it.
		r := bufio.NewReader(strings.NewReader(tt.in))
		r.Peek(len(tt.in))
		if got := HasCommand(r); got != tt.want {
			t.Errorf("HasCommand(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestBulkGrowsAsBytesArrive checks that a declared bulk length reserves
// nothing: a header saying 16 MiB followed by 100 bytes costs a few KiB,
// and a whole 1 MiB value costs about itself, not more.
func TestBulkGrowsAsBytesArrive(t *testing.T) {
	alloc := func(in string) uint64 {
		r := bufio.NewReaderSize(strings.NewReader(in), 4096)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ReadCommand(r)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	if got := alloc("*2\r\n$3\r\nSET\r\n$16777216\r\n" + strings.Repeat("x", 100)); got > 64<<10 {
		t.Errorf("a 16 MiB header and 100 bytes allocated %d bytes, want at most 64 KiB", got)
	}
	v := strings.Repeat("v", 1<<20)
	if got := alloc("*1\r\n$1048576\r\n" + v + "\r\n"); got > 3<<20 {
		t.Errorf("a 1 MiB bulk string allocated %d bytes, want at most 3 MiB", got)
	}
	r := bufio.NewReader(strings.NewReader("*1\r\n$1048576\r\n" + v + "\r\n"))
	got, err := ReadCommand(r)
	if err != nil || len(got) != 1 || string(got[0]) != v {
		t.Errorf("a 1 MiB bulk string read back as %d args, err %v", len(got), err)
	}
}

// TestPipelinedRoundTrip writes several commands and replies back to back,
// as a pipelining peer does, and reads them back in order.
func TestPipelinedRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	WriteCommand(w, []byte("SET"), []byte("k"), []byte("a\r\nb"))
	WriteCommand(w, []byte("GET"), []byte("k"))
	w.Flush()
	r := bufio.NewReader(&buf)
	for _, want := range [][]string{{"SET", "k", "a\r\nb"}, {"GET", "k"}} {
		got, err := ReadCommand(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || string(got[len(got)-1]) != want[len(want)-1] {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if _, err := ReadCommand(r); err != io.EOF {
		t.Errorf("after the last command: err = %v, want io.EOF", err)
	}

	buf.Reset()
	WriteSimple(w, "OK")
	WriteError(w, "ERR bad\r\nthing")
	WriteInt(w, -7)
	WriteBulk(w, []byte("v"))
	WriteNull(w)
	w.Flush()
	wants := []Reply{
		{Kind: Simple, Str: []byte("OK")},
		{Kind: Error, Str: []byte("ERR bad  thing")},
		{Kind: Integer, Int: -7},
		{Kind: Bulk, Str: []byte("v")},
		{Kind: Bulk, Null: true},
	}
	for _, want := range wants {
		got, err := ReadReply(r)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ReadReply = %+v, want %+v", got, want)
		}
	}
	if err := wants[1].Err(); err == nil || !strings.Contains(err.Error(), "ERR bad") {
		t.Errorf("error reply's Err() = %v, want the server's message", err)
	}
}

func TestReadReplyArrayAndErrors(t *testing.T) {
	got, err := ReadReply(reader("*2\r\n$4\r\nsave\r\n$0\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Elems) != 2 || string(got.Elems[0].Str) != "save" || len(got.Elems[1].Str) != 0 {
		t.Errorf("array reply = %+v, want [save, \"\"]", got)
	}
	for _, in := range []string{"?x\r\n", "*1\r\n", "$5\r\nab\r\n", "\r\n"} {
		if _, err := ReadReply(reader(in)); err == nil || (!errors.Is(err, ErrProtocol) && !errors.Is(err, io.ErrUnexpectedEOF)) {
			t.Errorf("ReadReply(%q) error = %v, want a protocol error or unexpected EOF", in, err)
		}
	}
}
