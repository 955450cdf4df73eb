package server

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/fstest"
)

// countingFS counts the bytes read from its files.
type countingFS struct {
	fs.FS
	read *atomic.Int64
}

func (c countingFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, read: c.read}, nil
}

type countingFile struct {
	fs.File
	read *atomic.Int64
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.read.Add(int64(n))
	return n, err
}

func (f *countingFile) Seek(off int64, whence int) (int64, error) {
	return f.File.(io.Seeker).Seek(off, whence)
}

// Static files stream: a Range request reads the range, not the file, and
// a conditional request with the current ETag gets 304 without reading.
// The gzipped wasm keeps its encoding and type.
func TestStaticRangeAndConditional(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	var read atomic.Int64
	fsys := countingFS{FS: fstest.MapFS{"wasm/yaegi.wasm.gz": {Data: big}, "wasm/yaegi.wasm": {Data: []byte("\x00asm")}}, read: &read}
	s := newServer(t, func(c *Config) { c.Static = fsys })

	first := get(t, s, "/static/wasm/yaegi.wasm", "Accept-Encoding", "gzip")
	if first.Code != 200 || !bytes.Equal(first.Body.Bytes(), big) {
		t.Fatalf("got %d and %d bytes, want 200 and the whole file", first.Code, first.Body.Len())
	}
	tag := first.Header().Get("ETag")

	read.Store(0)
	w := get(t, s, "/static/wasm/yaegi.wasm", "Accept-Encoding", "gzip", "Range", "bytes=16-25")
	if w.Code != http.StatusPartialContent || !bytes.Equal(w.Body.Bytes(), big[16:26]) {
		t.Errorf("Range: got %d %q, want 206 %q", w.Code, w.Body.Bytes(), big[16:26])
	}
	if got, want := w.Header().Get("Content-Range"), "bytes 16-25/1048576"; got != want {
		t.Errorf("Range: got Content-Range %q, want %q", got, want)
	}
	if w.Header().Get("Content-Encoding") != "gzip" || w.Header().Get("Content-Type") != "application/wasm" {
		t.Errorf("Range: got encoding %q type %q, want gzip and application/wasm", w.Header().Get("Content-Encoding"), w.Header().Get("Content-Type"))
	}
	if n := read.Load(); n > 64<<10 {
		t.Errorf("Range: read %d bytes of the file for 10, want it streamed", n)
	}

	read.Store(0)
	w = get(t, s, "/static/wasm/yaegi.wasm", "Accept-Encoding", "gzip", "If-None-Match", tag)
	if w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("If-None-Match: got %d with %d bytes, want 304 and none", w.Code, w.Body.Len())
	}
	if n := read.Load(); n != 0 {
		t.Errorf("If-None-Match: read %d bytes, want 0", n)
	}
	if w := get(t, s, "/static/wasm/yaegi.wasm", "Accept-Encoding", "gzip", "If-None-Match", `"other"`); w.Code != 200 {
		t.Errorf("If-None-Match with another tag: got %d, want 200", w.Code)
	}
	if w := get(t, s, "/static/nope.js"); w.Code != 404 {
		t.Errorf("missing file: got %d, want 404", w.Code)
	}
}
