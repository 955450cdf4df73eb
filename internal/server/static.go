package server

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"kvlab/internal/server/web"
)

// staticFiles serves /static/: the embedded files (or -static's), with
// ETags and gzip, and the code highlighting stylesheet. It is safe for
// concurrent use.
type staticFiles struct {
	fsys       fs.FS
	chromaCSS  []byte // /static/chroma.css, light and dark
	authorMode bool   // ETags are computed on every request (-lessons DIR)

	mu   sync.Mutex        // guards tags
	tags map[string]string // ETag by static path
}

// handleStatic serves the embedded static files. Paths are checked with
// fs.ValidPath, so "..", absolute paths and backslashes never reach the
// file system; directories are not listed.
func (sf *staticFiles) handleStatic(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("path")
	if p == "chroma.css" {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(sf.chromaCSS)
		return
	}
	if !fs.ValidPath(p) || strings.Contains(p, "\\") || p == "." {
		web.NotFound(w, r)
		return
	}
	if p == "wasm/yaegi.wasm" {
		sf.serveWasm(w, r)
		return
	}
	sf.serveFile(w, r, p, "")
}

// serveFile streams one static file with http.ServeContent, which answers
// Range and If-None-Match requests; the file is never read whole into
// memory (the gzipped wasm is megabytes). Files that cannot seek (not the
// case for embed.FS or os.DirFS) are read into memory as a fallback.
func (sf *staticFiles) serveFile(w http.ResponseWriter, r *http.Request, p, encoding string) {
	f, err := sf.fsys.Open(p)
	if err != nil {
		web.NotFound(w, r)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.IsDir() {
		web.NotFound(w, r)
		return
	}
	content, ok := f.(io.ReadSeeker)
	if !ok {
		data, err := io.ReadAll(f)
		if err != nil {
			web.ErrorPage(w, http.StatusInternalServerError, "Reading a file failed", "The server could not read its own file "+p+": "+err.Error())
			return
		}
		content = bytes.NewReader(data)
	}
	tag, err := sf.etag(p, content)
	if err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Reading a file failed", "The server could not read its own file "+p+": "+err.Error())
		return
	}
	name := p
	if encoding == "gzip" {
		name = strings.TrimSuffix(p, ".gz")
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Vary", "Accept-Encoding")
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".wasm":
		ctype = "application/wasm"
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".svg":
		ctype = "image/svg+xml"
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", tag)
	http.ServeContent(w, r, name, time.Time{}, content)
}

// etag is a hash of the file's bytes, computed once per path (the
// embedded files never change) or on every request in author mode. It
// reads content through and leaves it at its start.
func (sf *staticFiles) etag(p string, content io.ReadSeeker) (string, error) {
	if !sf.authorMode {
		sf.mu.Lock()
		t, ok := sf.tags[p]
		sf.mu.Unlock()
		if ok {
			return t, nil
		}
	}
	h := sha256.New()
	if _, err := io.Copy(h, content); err != nil {
		return "", err
	}
	if _, err := content.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	t := `"` + hex.EncodeToString(h.Sum(nil)[:8]) + `"`
	if !sf.authorMode {
		sf.mu.Lock()
		sf.tags[p] = t
		sf.mu.Unlock()
	}
	return t, nil
}

// serveWasm serves wasm/yaegi.wasm.gz with Content-Encoding: gzip when the
// request accepts gzip, else wasm/yaegi.wasm; 404 when neither was built.
// `make wasm` keeps only the gzipped file (it is what every browser asks
// for, and embedding both would add 11 MB to the binary), so a request
// that refuses gzip gets it decompressed as it streams, without Range.
func (sf *staticFiles) serveWasm(w http.ResponseWriter, r *http.Request) {
	const plain, gz = "wasm/yaegi.wasm", "wasm/yaegi.wasm.gz"
	_, gzErr := fs.Stat(sf.fsys, gz)
	if acceptsGzip(r) && gzErr == nil {
		sf.serveFile(w, r, gz, "gzip")
		return
	}
	w.Header().Set("Vary", "Accept-Encoding")
	if _, err := fs.Stat(sf.fsys, plain); err == nil {
		sf.serveFile(w, r, plain, "")
		return
	}
	if gzErr == nil {
		sf.serveGunzipped(w, r, gz)
		return
	}
	http.Error(w, "yaegi.wasm is not built into this binary: run `make wasm` and rebuild", http.StatusNotFound)
}

// serveGunzipped streams the gzipped static file p decompressed, as
// application/wasm.
func (sf *staticFiles) serveGunzipped(w http.ResponseWriter, r *http.Request, p string) {
	f, err := sf.fsys.Open(p)
	if err != nil {
		web.NotFound(w, r)
		return
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Reading a file failed", "The server could not read its own file "+p+": "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/wasm")
	io.Copy(w, zr) // a client that goes away mid-stream just stops it
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if enc = strings.TrimSpace(enc); enc == "gzip" || enc == "*" {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
