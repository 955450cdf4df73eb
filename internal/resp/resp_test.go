package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
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
		{"PING\n", nil, "does not end in CRLF"},
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
