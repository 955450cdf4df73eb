package server

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"kvlab/harness"
	"kvlab/internal/archive"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/liveclass"
	"kvlab/internal/server/run"
	"kvlab/internal/server/runq"
	"kvlab/internal/server/runspage"
	"kvlab/internal/server/web"
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
	// action (package liveclass). 0 = 4h.
	RoomTTL time.Duration
	// Writes bound what students write to the archive (writes.go). Zero
	// fields take DefaultWriteLimits'.
	Writes WriteLimits
	// MaxTokenFailures is how many wrong tokens and presenter secrets
	// one address may send in a minute before every token check of it
	// is refused with 429 for the rest of the minute. 0 = 30.
	MaxTokenFailures int
	// MaxUnknownCodes is how many lookups of a well-formed room code that
	// names no open room one address may make in a minute before every
	// room lookup of it is refused with 429 for the rest of the minute.
	// 0 = 30.
	MaxUnknownCodes int
	// PresenterToken, when set, presents every room and opens the past
	// classes from any machine (package guard). It must differ from Token,
	// which students are given.
	PresenterToken string
	// Test seams, set by this package's tests only: exec runs one parsed
	// line in place of harness.ExecOutput; maxWaiting caps the runs waiting
	// over all clients (0 = 64).
	exec       func(ctx context.Context, sp *harness.Spec, env harness.Env) (harness.Output, error)
	maxWaiting int

	// Hosts are names (no port) a server with a token answers in the
	// Host header besides IP addresses, localhost and this machine's
	// host name (guard.HostOK): the names students type.
	Hosts []string
}

// Budget bounds what one cell (or one quiz's run: lines) may cost as a
// whole: its runs, its time and the memory of each run (runq.Budget).
type Budget = runq.Budget

// DefaultBudget is the server's budget (runq.DefaultBudget).
func DefaultBudget() Budget { return runq.DefaultBudget() }

// DefaultLimits are the server's caps: smaller than the command line's,
// since a page visitor should not tie up the disk for minutes.
func DefaultLimits() harness.Limits {
	l := harness.DefaultLimits()
	l.MaxOps = min(l.MaxOps, 2_000_000)
	l.MaxDuration = min(l.MaxDuration, 30*time.Second)
	l.MaxValueSize = min(l.MaxValueSize, 64<<10)
	l.MaxTotalBytes = min(l.MaxTotalBytes, 512<<20)
	// 256 writers: lesson 6's sweep must reach past group commit's knee,
	// n* ≈ T_fsync ÷ T_write, about a hundred writers on a disk whose
	// flush costs a millisecond. Writers are goroutines, and the budget
	// bounds the time.
	l.MaxThreads = min(l.MaxThreads, 256)
	l.MaxTrials = min(l.MaxTrials, 50)
	l.MaxRepeat = min(l.MaxRepeat, 5)
	return l
}

// Server serves the course. It is safe for concurrent use.
type Server struct {
	cfg Config
	mux *http.ServeMux
	log *log.Logger
	// guard checks Host, Origin, tokens and presenters, counts runs and
	// connections per address and logs refusals.
	guard   *guard.Guard
	writes  *writeGate   // the bounds on students' writes (writes.go)
	tmpData bool         // DataDir was created by New and is removed by Close
	static  *staticFiles // GET /static/ (static.go)
	course  *course      // the lessons and their pages (lessons.go, pages.go)

	// runs is the disk's one runner and its queue: cells, run: quizzes,
	// presenters' and followers' runs.
	runs *runq.Runner
	// cells owns each reader's runs, from message to result (package run):
	// a /ws client's and a room follower's.
	cells *run.Service
	quiz  *quizAPI // POST /api/quiz, /api/predict and the quiz queue (quizapi.go)

	arch    archive.Archive // the run archive; see record.go
	ownArch bool            // arch was opened by New and is closed by Close
	version string          // labserver's version, recorded with each run
	hostID  string          // this machine's id, recorded with each run

	// pongWait is how long a websocket may stay silent (no message, no
	// pong) before it is dropped; pings go out at half of it.
	pongWait time.Duration

	// sentHook, when set (benchmarks), sees every websocket message as it
	// is handed to a client's writer. Set before serving.
	sentHook func(b []byte)

	ctx    context.Context // cancelled by Close; parent of every run
	cancel context.CancelFunc
	wg     sync.WaitGroup // websocket readers and writers, the rooms' goroutines

	mu      sync.Mutex // guards the fields below
	clients map[*client]struct{}
	closed  bool

	owner   *owner           // this server's claim on its run directories (owner.go)
	rooms   *liveclass.Rooms // live classes: followers, polls, the board (package liveclass)
	targets *shareTargets    // the room servers this server's pages may share to (share.go)

	// Timeouts of the plain HTTP routes (HTTPServer): reading a whole
	// request, and writing a reply. The websocket sets its own deadlines
	// after the upgrade, and a run: quiz lifts the write deadline while
	// it waits for its measurement.
	readTimeout, writeTimeout time.Duration
}

// New checks cfg, loads the lessons and starts the run queue.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:          cfg,
		log:          log.New(cfg.Log, "labserver: ", log.LstdFlags),
		clients:      map[*client]struct{}{},
		pongWait:     pongWait,
		readTimeout:  30 * time.Second,
		writeTimeout: 2 * time.Minute,
	}
	if !guard.IsLoopback(cfg.Addr) {
		if cfg.Token == "" {
			return nil, fmt.Errorf("-addr %s is not a loopback address: pass -token-file FILE (or set $%s, or pass -token SECRET) so that only people given the token can run cells", cfg.Addr, TokenEnv)
		}
	}
	if cfg.PresenterToken != "" && cfg.PresenterToken == cfg.Token {
		return nil, fmt.Errorf("-presenter-token: must differ from -token: students are given the token, and the presenter token presents every room")
	}
	if s.cfg.MaxTokenFailures <= 0 {
		s.cfg.MaxTokenFailures = guard.DefaultMaxTokenFailures
	}
	s.guard = guard.New(guard.Config{Token: cfg.Token, PresenterToken: cfg.PresenterToken, Hosts: cfg.Hosts,
		MaxTokenFailures: s.cfg.MaxTokenFailures, MaxQueuedPerAddress: cfg.MaxQueuedPerAddress, Log: s.log})
	// Which servers a line may name by an address depends on whom the
	// server serves (runq.Addresses).
	s.cfg.Budget.Addresses.ServesOthers = s.servesOthers()
	s.cfg.Writes = s.cfg.Writes.withDefaults()
	s.writes = newWriteGate(s.guard, s.cfg.Writes)
	if err := s.makeDataDir(); err != nil {
		return nil, err
	}
	if err := s.claimAndLoad(); err != nil {
		return nil, err
	}
	if err := s.openArchive(); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.runs = s.newRunner()
	s.cells = run.NewService(s.ctx, s.runConfig())
	if err := s.startRooms(); err != nil {
		s.Close()
		return nil, err
	}

	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.course.handleIndex)
	s.mux.HandleFunc("GET /lessons/{slug}", s.course.handleLesson)
	s.mux.HandleFunc("GET /static/{path...}", s.static.handleStatic)
	s.mux.HandleFunc("GET /ws", s.handleWS)
	s.quiz = newQuizAPI(s)
	s.quiz.route(s.mux)
	rp := runspage.New(s.arch, s.hostID)
	rp.ShowPaths = !s.servesOthers()
	rp.Route(s.mux)
	s.mux.HandleFunc("GET "+web.SourcePrefix+"{path...}", web.Source().SourcePage)
	s.rooms.Route(s.mux)
	s.routeShareTargets()
	s.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/static/favicon.svg", http.StatusMovedPermanently)
	})
	// Any other address gets the site's error page, not Go's bare text.
	s.mux.HandleFunc("GET /", web.NotFound)
	return s, nil
}

// The defaults of Config's caps, also the defaults of their flags.
const (
	defaultMaxMessageBytes     = 64 << 10
	defaultMaxQueuedPerClient  = 4
	defaultMaxQueuedPerAddress = 8
)

// withDefaults returns c with every zero field that has a default filled in.
func (c Config) withDefaults() Config {
	if c.Lessons == nil {
		c.Lessons = lessons.FS
	}
	if c.Static == nil {
		c.Static = static.FS
	}
	if c.Limits == (harness.Limits{}) {
		c.Limits = DefaultLimits()
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = defaultMaxMessageBytes
	}
	if c.MaxQueuedPerClient <= 0 {
		c.MaxQueuedPerClient = defaultMaxQueuedPerClient
	}
	if c.MaxQueuedPerAddress <= 0 {
		c.MaxQueuedPerAddress = defaultMaxQueuedPerAddress
	}
	if c.MaxLinesPerCell <= 0 {
		c.MaxLinesPerCell = 16
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.maxWaiting <= 0 {
		// The per-client cap alone does not stop one page opening many
		// sockets.
		c.maxWaiting = 64
	}
	c.Budget = c.Budget.WithDefaults()
	return c
}

// makeDataDir creates the data directory, or a temporary one that Close
// removes when cfg.DataDir is "".
func (s *Server) makeDataDir() error {
	if s.cfg.DataDir == "" {
		d, err := os.MkdirTemp("", "kvlab-data-")
		if err != nil {
			return err
		}
		s.cfg.DataDir, s.tmpData = d, true
	} else if err := os.MkdirAll(s.cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("-data %s: %w", s.cfg.DataDir, err)
	}
	return nil
}

// claimAndLoad claims the data directory's runs (owner.go), builds the
// code highlighting stylesheet and loads the lessons. On failure it gives
// the claim back.
func (s *Server) claimAndLoad() error {
	o, err := claimRuns(s.cfg.DataDir, s.log.Printf)
	if err != nil {
		return err
	}
	s.owner = o
	css, err := web.ChromaStylesheet()
	if err == nil {
		s.static = &staticFiles{fsys: s.cfg.Static, chromaCSS: css, authorMode: s.cfg.Reload, tags: map[string]string{}}
		s.course = &course{fsys: s.cfg.Lessons, authorMode: s.cfg.Reload, needToken: s.guard.NeedToken(), logf: s.log.Printf,
			checkCell: func(text string) error {
				_, _, _, err := runq.CheckCell(text, 0, s.cfg.Limits, s.cfg.Budget, s.cfg.MaxLinesPerCell)
				return err
			},
			checkRun: func(lines []string) error {
				_, err := s.checkRunLines(lines)
				return err
			}}
		err = s.course.reload(s.course.stampNow())
	}
	if err != nil {
		o.release()
		return err
	}
	return nil
}

// ServeHTTP serves every route.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", s.csp())
	if !staticPath(r.URL.Path) && !s.hostGate(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// HTTPServer is the http.Server that serves s: read and write timeouts
// for the plain routes (a body that trickles in is cut off), a header
// timeout, an idle timeout.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: s.readTimeout,
		WriteTimeout: s.writeTimeout, IdleTimeout: 2 * time.Minute}
}

// newRunner starts the runner of the server's data directory: under its
// claim (owner.go), with its limits and budget, recording in its archive,
// results as others may see them in room mode (servesOthers,
// harness.Output.Public): what the room sees is what the archive keeps,
// and its pages are public.
func (s *Server) newRunner() *runq.Runner {
	return runq.New(runq.Config{RunsDir: filepath.Join(s.cfg.DataDir, "runs"), Name: s.owner.name, Limits: s.cfg.Limits,
		Budget: s.cfg.Budget, Exe: s.cfg.Exe, MaxWaiting: s.cfg.maxWaiting, Public: s.servesOthers(),
		Archive: s.arch, Version: s.version, HostID: s.hostID, Exec: s.cfg.exec, Logf: s.log.Printf})
}

// runConfig is what package run needs to own a reader's runs: the
// runner and guard, the caps, whether a reader's own code may run here,
// the lessons (which lines and script of a cell are the lesson's own),
// and the room's fan-out for a presenter's run.
func (s *Server) runConfig() run.Config {
	cfg := run.Config{Runner: s.runs, Guard: s.guard, Limits: s.cfg.Limits, Budget: s.cfg.Budget,
		MaxLines: s.cfg.MaxLinesPerCell, MaxPerOwner: s.cfg.MaxQueuedPerClient, Lesson: s.course.lesson,
		Room: func(m run.Msg, addr string, follower bool, out run.Sink) (run.Fanout, error) {
			rr, err := s.rooms.PresenterRun(m, addr, follower, out)
			if rr == nil {
				return nil, err
			}
			return rr, err
		}}
	switch {
	case !guard.IsLoopback(s.cfg.Addr):
		cfg.NoReaderCode = fmt.Sprintf("this server listens on %s, beyond this machine, and runs no one's code there", s.cfg.Addr)
	case s.cfg.Token != "":
		cfg.NoReaderCode = "this server has a token: it serves others (a class), and runs no one's code for them"
	}
	return cfg
}

// startRooms loads the share targets and starts the rooms (package
// liveclass): they reload the open ones from the archive and sweep the
// expired ones. The rooms reach the server through what they are given
// here: the archive, the guard, the lessons, the owner of a follower's
// own runs (run.Service), the write gate and caps, and the log; their
// goroutines are their own (Close ends them, Wait waits for them).
func (s *Server) startRooms() error {
	t, err := loadShareTargets(s.cfg.DataDir, s.log.Printf)
	if err != nil {
		return err
	}
	s.targets = t
	w := s.cfg.Writes
	rs, err := liveclass.New(liveclass.Config{Archive: s.arch, Guard: s.guard, Runs: s.cells,
		Lesson: s.course.lesson, WriteRate: s.writes.rate,
		Log: s.log, Upgrader: s.upgrader(), PongWait: s.pongWait,
		TTL: s.cfg.RoomTTL, MaxUnknownCodes: s.cfg.MaxUnknownCodes, HasPresenterToken: s.cfg.PresenterToken != "",
		Writes: liveclass.Limits{PerBrowser: w.PerBrowser, BallotsPerAddress: w.BallotsPerAddress, SharesPerAddressRoom: w.SharesPerAddressRoom,
			MaxBytes: w.MaxBytes, MaxShareBytes: w.MaxShareBytes}})
	if err != nil {
		return err
	}
	s.rooms = rs
	return nil
}

// servesOthers reports whether the server serves others than its own user:
// it has a token, or listens beyond loopback (its pages and the room are
// then seen by people other than the one who started it).
func (s *Server) servesOthers() bool { return s.guard.NeedToken() || !guard.IsLoopback(s.cfg.Addr) }

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
	if s.rooms != nil {
		s.rooms.Close()
	}
	for _, c := range clients {
		// The writer sends close 1001 (going away) and then closes the
		// socket; closing it here first would cut that frame off (1006).
		c.runs.Stop()
	}
	s.runs.Close()
	if s.rooms != nil {
		s.rooms.Wait()
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
