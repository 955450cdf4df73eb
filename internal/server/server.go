// Package server is labserver's web side: it renders the course's lessons
// as notebook pages, runs their lab cells over a websocket, and checks
// quiz answers against measurements taken on this machine.
//
// Routes:
//
//	GET  /                  the index: lessons with the browser's progress
//	GET  /lessons/SLUG      one lesson
//	GET  /static/PATH       embedded CSS, JS, SVG and the wasm folder
//	GET  /static/chroma.css code highlighting, light and dark
//	GET  /ws                the run websocket (see ws.go for the messages)
//	POST /api/quiz          check a quiz answer (see quizapi.go)
//	GET  /api/quiz/queue    a run: quiz's place in the queue (see quizapi.go)
//	POST /api/predict       store a prediction before its run (see predict.go)
//	GET  /runs              the run archive, newest first (see runs.go)
//	GET  /runs/ID           one run's permalink; ID.json and ID.tsv export it
//	GET  /compare           two groups of runs compared (see runs.go)
//
// Runs are serialized: one at a time per server (which owns one data
// directory), others wait in a FIFO queue and are told their position.
// Two fsync benchmarks running at once would each report the other's noise.
//
// Decisions a reader may look for: a rendered lesson page is cached until
// the lessons change (author mode checks file sizes and times on every
// request); a server on a non-loopback address refuses to start without a
// token, and then every run (cells and run: quizzes) must present it;
// requests with an Origin header from another host are refused; without a
// token, runs are refused unless the Host header is localhost or a
// loopback address (DNS rebinding).
package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"mime"
	"net"
	"net/http"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"kvlab/harness"
	"kvlab/internal/archive"
	"kvlab/internal/lesson"
	"kvlab/lessons"
	"kvlab/static"
)

// Config configures a Server. The zero value of each field has a default.
type Config struct {
	// Addr is where the server is reachable. It decides whether a token is
	// required: any address that is not loopback needs Token. "" counts as
	// loopback (tests).
	Addr string
	// DataDir is the parent of the per-run directories. "" = a fresh
	// temporary directory removed by Close.
	DataDir string
	// Token, when set, must be presented by every run. Required when Addr
	// is not a loopback address.
	Token string
	// Lessons holds NN-slug.md files. nil = the embedded kvlab/lessons.FS.
	Lessons fs.FS
	// Reload re-reads Lessons when a file changes (author mode).
	Reload bool
	// Static holds the files served under /static/. nil = kvlab/static.FS.
	Static fs.FS
	// Limits are the caps every run line is checked against.
	// The zero value means DefaultLimits().
	Limits harness.Limits
	// MaxMessageBytes caps one incoming websocket message and a quiz
	// request body. 0 = 64 KiB for websocket messages, 4x that for quiz bodies.
	MaxMessageBytes int64
	// MaxQueuedPerClient caps how many runs one websocket client may have
	// queued or running at once. 0 = 4.
	MaxQueuedPerClient int
	// MaxQueuedPerAddress caps the runs (cells and run: quizzes) queued or
	// running for one remote address over all its sockets and requests.
	// 0 = 8.
	MaxQueuedPerAddress int
	// MaxLinesPerCell caps the run lines of one cell. 0 = 16.
	MaxLinesPerCell int
	// Budget bounds a cell as a whole: its runs, its time and the memory
	// of each run. Zero fields take DefaultBudget's.
	Budget Budget
	// Exe is the binary `crash` re-executes; "" = os.Executable().
	Exe string
	// Log receives one line per notable event; nil = io.Discard.
	Log io.Writer
	// Archive records every run; nil = New opens ArchiveTarget and Close
	// closes it. An Archive given here is the caller's to close, after Close.
	Archive archive.Archive
	// ArchiveTarget is where New opens the archive when Archive is nil:
	// "" = kvlab.db (SQLite) in DataDir, or a postgres:// URL.
	ArchiveTarget string
	// RoomTTL is how long a room stays open after its presenter's last
	// action (room_api.go). 0 = 4h.
	RoomTTL time.Duration
}

// DefaultLimits are the server's caps: smaller than the command line's,
// since a page visitor should not tie up the disk for minutes.
func DefaultLimits() harness.Limits {
	l := harness.DefaultLimits()
	l.MaxOps = min(l.MaxOps, 2_000_000)
	l.MaxDuration = min(l.MaxDuration, 30*time.Second)
	l.MaxValueSize = min(l.MaxValueSize, 64<<10)
	l.MaxTotalBytes = min(l.MaxTotalBytes, 512<<20)
	l.MaxThreads = min(l.MaxThreads, 64)
	l.MaxTrials = min(l.MaxTrials, 50)
	l.MaxRepeat = min(l.MaxRepeat, 5)
	return l
}

// Server serves the course. It is safe for concurrent use.
type Server struct {
	cfg       Config
	mux       *http.ServeMux
	log       *log.Logger
	needToken bool
	tmpData   bool // DataDir was created by New and is removed by Close
	chromaCSS []byte

	// exec runs one line; harness.Exec except in tests that need a
	// controllable runner.
	exec func(ctx context.Context, line string, env harness.Env) ([]byte, error)

	q         *queue
	quizRuns  atomic.Int32  // run: quizzes queued or running
	quizSlots chan struct{} // one token per quiz answer being checked

	arch    archive.Archive // the run archive; see record.go
	ownArch bool            // arch was opened by New and is closed by Close
	version string          // labserver's version, recorded with each run
	hostID  string          // this machine's id, recorded with each run

	// pongWait is how long a websocket may stay silent (no message, no
	// pong) before it is dropped; pings go out at half of it.
	pongWait time.Duration
	// maxWaiting caps the waiting runs over all clients: the per-client
	// cap alone does not stop one page opening many sockets.
	maxWaiting int
	// bodyWait bounds the time to read a quiz request's body.
	bodyWait time.Duration

	// sentHook, when set (benchmarks), sees every websocket message as it
	// is handed to a client's writer. Set before serving.
	sentHook func(b []byte)

	ctx    context.Context // cancelled by Close; parent of every run
	cancel context.CancelFunc
	wg     sync.WaitGroup // runner, websocket readers and writers

	mu      sync.Mutex // guards the fields below
	lessons []*lesson.Lesson
	loadErr error
	stamp   string
	pages   map[string][]byte // rendered lesson pages by slug, and "" for the index
	clients map[*client]struct{}
	closed  bool

	room  room   // per-address counts, connection caps, refusals (room.go)
	owner *owner // this server's claim on its run directories (owner.go)
	rooms *rooms // live classes: followers, polls, the board (room_api.go)

	staticMu   sync.Mutex        // guards staticTags
	staticTags map[string]string // ETag by static path
}

// New checks cfg, loads the lessons and starts the run queue.
func New(cfg Config) (*Server, error) {
	if cfg.Lessons == nil {
		cfg.Lessons = lessons.FS
	}
	if cfg.Static == nil {
		cfg.Static = static.FS
	}
	if cfg.Limits == (harness.Limits{}) {
		cfg.Limits = DefaultLimits()
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 64 << 10
	}
	if cfg.MaxQueuedPerClient <= 0 {
		cfg.MaxQueuedPerClient = 4
	}
	if cfg.MaxQueuedPerAddress <= 0 {
		cfg.MaxQueuedPerAddress = 8
	}
	if cfg.MaxLinesPerCell <= 0 {
		cfg.MaxLinesPerCell = 16
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	cfg.Budget = cfg.Budget.withDefaults()
	s := &Server{
		cfg:        cfg,
		log:        log.New(cfg.Log, "labserver: ", log.LstdFlags),
		pages:      map[string][]byte{},
		clients:    map[*client]struct{}{},
		staticTags: map[string]string{},
		pongWait:   pongWait,
		bodyWait:   30 * time.Second,
		maxWaiting: 64,
		quizSlots:  make(chan struct{}, quizCheckSlots),
		room:       newRoom(),
	}
	if !IsLoopback(cfg.Addr) {
		if cfg.Token == "" {
			return nil, fmt.Errorf("-addr %s is not a loopback address: pass -token-file FILE (or set $%s, or pass -token SECRET) so that only people given the token can run cells", cfg.Addr, TokenEnv)
		}
	}
	s.needToken = cfg.Token != ""
	if s.cfg.DataDir == "" {
		d, err := os.MkdirTemp("", "kvlab-data-")
		if err != nil {
			return nil, err
		}
		s.cfg.DataDir, s.tmpData = d, true
	} else if err := os.MkdirAll(s.cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("-data %s: %w", s.cfg.DataDir, err)
	}
	o, err := claimRuns(s.cfg.DataDir, s.log.Printf)
	if err != nil {
		return nil, err
	}
	s.owner = o
	css, err := chromaStylesheet()
	if err == nil {
		err = s.reload(s.stampNow())
	}
	if err != nil {
		o.release()
		return nil, err
	}
	s.chromaCSS = css
	s.exec = func(ctx context.Context, line string, env harness.Env) ([]byte, error) {
		return harness.Exec(ctx, line, env)
	}
	if err := s.openArchive(); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.q = newQueue()
	s.wg.Add(1)
	go s.runLoop()
	if err := s.startRooms(); err != nil {
		s.Close()
		return nil, err
	}

	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.handleIndex)
	s.mux.HandleFunc("GET /lessons/{slug}", s.handleLesson)
	s.mux.HandleFunc("GET /static/{path...}", s.handleStatic)
	s.mux.HandleFunc("GET /ws", s.handleWS)
	s.mux.HandleFunc("POST /api/quiz", s.handleQuiz)
	s.mux.HandleFunc("GET /api/quiz/queue", s.handleQuizQueue)
	s.routeArchive()
	s.routeRooms()
	s.routeRoomPages()
	s.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/static/favicon.svg", http.StatusMovedPermanently)
	})
	return s, nil
}

// IsLoopback reports whether addr (host:port, :port or host) only accepts
// connections from this machine. "" and ":port" listen on every interface
// and so are not loopback, except the empty string, which means "not
// listening" (tests).
func IsLoopback(addr string) bool {
	if addr == "" {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP serves every route.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", s.csp())
	s.mux.ServeHTTP(w, r)
}

// Close cancels every queued and running run, closes the websockets and
// waits for the server's goroutines. It does not close listeners: the
// caller owns those.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	clients := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	s.cancel()
	s.closeRooms()
	for _, c := range clients {
		// The writer sends close 1001 (going away) and then closes the
		// socket; closing it here first would cut that frame off (1006).
		c.stopRuns()
	}
	s.wg.Wait()
	if s.ownArch {
		if err := s.arch.Close(); err != nil {
			s.log.Printf("archive: closing: %v", err)
		}
	}
	s.owner.release()
	if s.tmpData {
		return os.RemoveAll(s.cfg.DataDir)
	}
	return nil
}

// lessonsNow returns the current lessons, re-reading them in author mode
// when a file changed.
func (s *Server) lessonsNow() ([]*lesson.Lesson, error) {
	if s.cfg.Reload {
		if st := s.stampNow(); st != s.currentStamp() {
			if err := s.reload(st); err != nil {
				return nil, err
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lessons, s.loadErr
}

func (s *Server) currentStamp() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stamp
}

// stampNow summarizes the lesson files' names, sizes and times.
func (s *Server) stampNow() string {
	var b strings.Builder
	ents, err := fs.ReadDir(s.cfg.Lessons, ".")
	if err != nil {
		return "error: " + err.Error()
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s %d %d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String()
}

// reload parses the lessons and drops the page cache; stamp is the
// stampNow taken before the files are read. In author mode a broken lesson
// is shown as an error page instead of stopping the server.
func (s *Server) reload(stamp string) error {
	ls, err := lesson.Load(s.cfg.Lessons)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stamp = stamp
	s.pages = map[string][]byte{}
	if err != nil {
		s.loadErr = err
		if s.cfg.Reload {
			s.log.Printf("lessons: %v", err)
			return nil
		}
		return fmt.Errorf("lessons: %w", err)
	}
	s.lessons, s.loadErr = ls, nil
	s.warnLines(ls)
	return nil
}

// warnLines logs every cell or quiz line that would be refused under the
// server's caps, so an author sees it before a student does.
func (s *Server) warnLines(ls []*lesson.Lesson) {
	for _, l := range ls {
		for _, c := range l.Cells {
			lines, _, err := CheckCell(c.Text, s.cfg.Limits, s.cfg.MaxLinesPerCell)
			if err == nil {
				_, err = s.cfg.Budget.check(lines, s.cfg.Limits)
			}
			if err != nil {
				s.log.Printf("%s: cell %s: %v", l.File, c.ID, err)
			}
		}
		for _, q := range l.Quizzes {
			ok := true
			for i, line := range q.Run {
				if err := checkLine(line, s.cfg.Limits); err != nil {
					s.log.Printf("%s: quiz %s: %v", l.File, q.ID, runLineError(i, line, err))
					ok = false
				}
			}
			if _, err := s.cfg.Budget.check(q.Run, s.cfg.Limits); ok && err != nil {
				s.log.Printf("%s: quiz %s: run: %v", l.File, q.ID, err)
			}
		}
	}
}

var slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

func (s *Server) findLesson(slug string) (*lesson.Lesson, int, []*lesson.Lesson, error) {
	ls, err := s.lessonsNow()
	if err != nil {
		return nil, 0, nil, err
	}
	for i, l := range ls {
		if l.Slug == slug {
			return l, i, ls, nil
		}
	}
	return nil, -1, ls, nil
}

func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	ls, err := s.lessonsNow()
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "The lessons do not parse", err.Error())
		return
	}
	page, err := s.cachedPage("", func() ([]byte, error) { return s.renderIndex(ls) })
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "Rendering the index failed", err.Error())
		return
	}
	writeHTML(w, page)
}

// cachedPage returns the page cached under key ("" for the index, else the
// lesson's slug), rendering and caching it first when reload dropped it.
func (s *Server) cachedPage(key string, render func() ([]byte, error)) ([]byte, error) {
	s.mu.Lock()
	page, ok := s.pages[key]
	s.mu.Unlock()
	if ok {
		return page, nil
	}
	page, err := render()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.pages[key] = page
	s.mu.Unlock()
	return page, nil
}

func (s *Server) handleLesson(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("slug")
	if !slugRE.MatchString(slug) {
		s.errorPage(w, http.StatusNotFound, "No such lesson", fmt.Sprintf("%q is not a lesson name (lowercase letters, digits and '-').", slug))
		return
	}
	l, i, ls, err := s.findLesson(slug)
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "The lessons do not parse", err.Error())
		return
	}
	if l == nil {
		s.errorPage(w, http.StatusNotFound, "No such lesson", fmt.Sprintf("There is no lesson %q.", slug))
		return
	}
	page, err := s.cachedPage(slug, func() ([]byte, error) { return s.renderLesson(l, i, ls) })
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "Rendering the lesson failed", err.Error())
		return
	}
	writeHTML(w, page)
}

func writeHTML(w http.ResponseWriter, page []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(page)
}

// handleStatic serves the embedded static files. Paths are checked with
// fs.ValidPath, so "..", absolute paths and backslashes never reach the
// file system; directories are not listed.
func (s *Server) handleStatic(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("path")
	if p == "chroma.css" {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(s.chromaCSS)
		return
	}
	if !fs.ValidPath(p) || strings.Contains(p, "\\") || p == "." {
		http.NotFound(w, r)
		return
	}
	if p == "wasm/yaegi.wasm" {
		s.serveWasm(w, r)
		return
	}
	s.serveFile(w, r, p, "")
}

// serveFile streams one static file with http.ServeContent, which answers
// Range and If-None-Match requests; the file is never read whole into
// memory (the gzipped wasm is megabytes). Files that cannot seek (not the
// case for embed.FS or os.DirFS) are read into memory as a fallback.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, p, encoding string) {
	f, err := s.cfg.Static.Open(p)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.IsDir() {
		http.NotFound(w, r)
		return
	}
	content, ok := f.(io.ReadSeeker)
	if !ok {
		data, err := io.ReadAll(f)
		if err != nil {
			http.Error(w, "reading "+p+": "+err.Error(), http.StatusInternalServerError)
			return
		}
		content = bytes.NewReader(data)
	}
	tag, err := s.etag(p, content)
	if err != nil {
		http.Error(w, "reading "+p+": "+err.Error(), http.StatusInternalServerError)
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
func (s *Server) etag(p string, content io.ReadSeeker) (string, error) {
	if !s.cfg.Reload {
		s.staticMu.Lock()
		t, ok := s.staticTags[p]
		s.staticMu.Unlock()
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
	if !s.cfg.Reload {
		s.staticMu.Lock()
		s.staticTags[p] = t
		s.staticMu.Unlock()
	}
	return t, nil
}

// serveWasm serves wasm/yaegi.wasm.gz with Content-Encoding: gzip when the
// request accepts gzip, else wasm/yaegi.wasm; 404 when neither was built.
func (s *Server) serveWasm(w http.ResponseWriter, r *http.Request) {
	const plain, gz = "wasm/yaegi.wasm", "wasm/yaegi.wasm.gz"
	if acceptsGzip(r) {
		if _, err := fs.Stat(s.cfg.Static, gz); err == nil {
			s.serveFile(w, r, gz, "gzip")
			return
		}
	}
	if _, err := fs.Stat(s.cfg.Static, plain); err == nil {
		w.Header().Set("Vary", "Accept-Encoding")
		s.serveFile(w, r, plain, "")
		return
	}
	http.Error(w, "yaegi.wasm is not built into this binary: run `make wasm` and rebuild", http.StatusNotFound)
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

// sameOrigin reports whether a browser request comes from a page this
// server served. Requests without Origin (curl, tests, same-origin GETs)
// pass.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	i := strings.Index(origin, "://")
	if i < 0 {
		return false
	}
	return strings.EqualFold(origin[i+3:], r.Host)
}

// hostOK reports whether a request that can start runs names this machine
// in its Host header. A server without a token relies on listening on
// loopback; a page from another site can still reach it by renaming
// itself to 127.0.0.1 (DNS rebinding), and then its Origin and Host agree.
// Such a request arrives with the attacker's name as Host, so runs are
// refused unless Host is localhost or a loopback address. With a token
// the token is the check.
func (s *Server) hostOK(r *http.Request) bool {
	if s.needToken {
		return true
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func (s *Server) hostError(r *http.Request) string {
	return fmt.Sprintf("Host %q is not this machine: without -token, labserver runs cells only for pages opened as localhost, 127.0.0.1 or [::1]; to serve other names, start it with -addr and -token", r.Host)
}

var errTokenRequired = errors.New("this server needs the instructor token to run anything: ask the instructor and enter it when the page asks")

func (s *Server) tokenOK(tok string) bool {
	if !s.needToken {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1
}
