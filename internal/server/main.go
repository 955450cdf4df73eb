package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"kvlab/internal/server/guard"
	"kvlab/internal/server/liveclass"
	"kvlab/internal/server/runq"
	"kvlab/internal/suggest"
)

// Main is `labserver [serve]`: it parses flags, listens, prints the URL
// and serves until ctx is cancelled. It returns the process exit code.
//
// The first stdout line is always "kvlab: serving the course on URL (run
// data in DIR)"; scripts and the README read it. On every interface
// (-addr 0.0.0.0:PORT or [::]:PORT) that URL says localhost, so a line
// "  students: URL" follows for each address the room can use.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseServe(args, stderr)
	if !ok {
		return code
	}
	// New refuses a non-loopback address without a token; the warning is
	// for a server that does start.
	s, err := New(f.cfg)
	if err != nil {
		fmt.Fprintf(stderr, "labserver serve: %v\n", err)
		return 1
	}
	if !guard.IsLoopback(f.cfg.Addr) {
		fmt.Fprintf(stderr, "labserver: WARNING: %s is reachable from other machines; runs need the token\n", f.cfg.Addr)
	}
	ln, err := net.Listen("tcp", f.cfg.Addr)
	if err != nil {
		s.Close()
		listenFailed(stderr, f.cfg.Addr, err)
		return 1
	}
	url := s.announce(ln.Addr().String(), stdout, stderr)
	if f.open {
		openBrowser(url, stderr)
	}
	return s.serveUntil(ctx, s.guard.LimitListener(ln, f.maxConns, f.maxConnsAddr), stderr)
}

// serveFlags are labserver serve's flags. Most fill cfg directly; the
// rest say how to finish it (finish) and how to listen.
type serveFlags struct {
	cfg              Config
	lessonsDir       string // -lessons: serve this folder in author mode
	open             bool   // -open: open the course in the browser
	token, tokenFile string // -token and -token-file; see tokenFrom
	// -presenter-token and -presenter-token-file; see presenterTokenFrom
	presenterToken, presenterTokenFile string
	maxConns                           int // -max-conns: open connections in all (LimitListener)
	maxConnsAddr                       int // -max-conns-per-address
}

// newServeFlags defines the flags on a new FlagSet that reports to stderr.
func newServeFlags(stderr io.Writer) (*flag.FlagSet, *serveFlags) {
	fl := flag.NewFlagSet("labserver serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	f := &serveFlags{cfg: Config{Log: stderr, Limits: DefaultLimits(), Budget: DefaultBudget()}}
	c, lim, bud := &f.cfg, &f.cfg.Limits, &f.cfg.Budget
	fl.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "address to listen on; a non-loopback address requires a token (-token-file, $"+TokenEnv+" or -token)")
	fl.StringVar(&c.DataDir, "data", "", "directory for run data (default: kvlab in the user's cache directory)")
	fl.StringVar(&f.lessonsDir, "lessons", "", "serve the lessons in this directory, re-read on change (author mode); default: the embedded lessons")
	fl.BoolVar(&f.open, "open", false, "open the course in the browser")
	fl.StringVar(&f.token, "token", "", "instructor token every run must present (required on a non-loopback -addr); other local users can read it in the process list: prefer -token-file or $"+TokenEnv)
	fl.StringVar(&f.tokenFile, "token-file", "", "read the instructor token from this file (its first line), instead of -token; default: $"+TokenEnv+" when set")
	fl.StringVar(&f.presenterToken, "presenter-token", "", "presenter token: presents every room and opens the past classes from any machine; never give it to students (prefer -presenter-token-file or $"+PresenterTokenEnv+")")
	fl.StringVar(&f.presenterTokenFile, "presenter-token-file", "", "read the presenter token from this file (its first line), instead of -presenter-token; default: $"+PresenterTokenEnv+" when set")
	fl.Int64Var(&lim.MaxOps, "max-ops", lim.MaxOps, "largest -ops a run may ask for")
	fl.DurationVar(&lim.MaxDuration, "max-duration", lim.MaxDuration, "longest -duration a run may ask for")
	fl.IntVar(&lim.MaxValueSize, "max-value-size", lim.MaxValueSize, "largest -value-size in bytes")
	fl.Int64Var(&lim.MaxTotalBytes, "max-total-bytes", lim.MaxTotalBytes, "most bytes one run may write")
	fl.IntVar(&lim.MaxThreads, "max-threads", lim.MaxThreads, "most -threads")
	fl.IntVar(&lim.MaxTrials, "max-trials", lim.MaxTrials, "most crash -trials")
	fl.IntVar(&lim.MaxRepeat, "max-repeat", lim.MaxRepeat, "most -repeat")
	fl.Int64Var(&c.MaxMessageBytes, "max-message-bytes", defaultMaxMessageBytes, "largest websocket message accepted")
	fl.IntVar(&c.MaxQueuedPerClient, "max-queued", defaultMaxQueuedPerClient, "most runs one browser tab may have queued or running")
	fl.IntVar(&c.MaxQueuedPerAddress, "max-queued-per-address", defaultMaxQueuedPerAddress, "most runs one remote address may have queued or running, over all its tabs and quiz requests")
	fl.IntVar(&f.maxConns, "max-conns", 256, "most open connections; more are answered 503 and closed")
	fl.IntVar(&f.maxConnsAddr, "max-conns-per-address", 64, "most open connections from one remote address")
	fl.IntVar(&bud.MaxRunsPerLine, "max-line-runs", bud.MaxRunsPerLine, "most runs one line may make (engines x thread counts x repeats)")
	fl.IntVar(&bud.MaxRunsPerCell, "max-cell-runs", bud.MaxRunsPerCell, "most runs all the lines of one cell may make")
	fl.DurationVar(&bud.MaxCellTime, "max-cell-time", bud.MaxCellTime, "longest one cell may hold the disk, preload and every run included; a cell whose -duration (or -ops / -rate) adds up to more is refused")
	fl.Int64Var(&bud.MaxMemory, "max-memory", bud.MaxMemory, "most bytes of memory one run may need, estimated from its -keys, -value-size, -engine and the latency samples it keeps")
	fl.DurationVar(&c.RoomTTL, "room-ttl", liveclass.DefaultTTL, "a room (a live class: /api/rooms) closes this long after its presenter's last action; its code then answers 404")
	fl.Func("allow-engine", "a server a cell's line may name by its address (resp://HOST:PORT or postgres://USER@HOST:PORT/DB; repeat or separate with commas): a server with a token or beyond loopback refuses every other address, and one on loopback for its owner alone also allows servers on this machine; the throwaway engines redis, postgres and kvserver need none", func(v string) error {
		keys, err := runq.ParseAllowedEngines(v)
		if err != nil {
			return err
		}
		bud.Addresses.Allowed = append(bud.Addresses.Allowed, keys...)
		return nil
	})
	fl.Func("host", "a name students type to reach this server (e.g. lab.example.edu; repeat or separate with commas): a server with a token answers IP addresses, localhost and this machine's host name, and refuses every other Host (DNS rebinding)", func(v string) error {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				if strings.ContainsAny(n, ":/ ") {
					return fmt.Errorf("%q: want a host name without scheme or port, e.g. lab.example.edu", n)
				}
				c.Hosts = append(c.Hosts, n)
			}
		}
		return nil
	})
	wl := &c.Writes
	*wl = DefaultWriteLimits()
	fl.IntVar(&wl.Rate, "write-rate", wl.Rate, "predictions, poll ballots and board shares one address may send a minute, all together; more get 429 (behind a NAT the whole class is one address)")
	fl.IntVar(&wl.TotalRate, "write-rate-total", wl.TotalRate, "predictions, poll ballots and board shares every address together may send a minute (a burst of two seconds' worth passes); more get 429, so many machines flooding at once cannot take the disk from a measurement")
	fl.IntVar(&wl.PerBrowser, "max-predictions-per-browser", wl.PerBrowser, "predictions one browser may store for one quiz, and ballot changes it may make in one poll")
	fl.IntVar(&wl.BallotsPerAddress, "max-ballots-per-address", wl.BallotsPerAddress, "browsers from one address that may vote in one poll")
	fl.IntVar(&wl.SharesPerAddressRoom, "max-shares-per-address", wl.SharesPerAddressRoom, "results one address may share with one room's board")
	fl.Int64Var(&wl.MaxBytes, "max-write-bytes", wl.MaxBytes, "largest body of a prediction (POST /api/predict) or a poll ballot")
	fl.Int64Var(&wl.MaxShareBytes, "max-share-bytes", wl.MaxShareBytes, "largest body of a share to a class board")
	fl.IntVar(&c.MaxTokenFailures, "max-token-failures", guard.DefaultMaxTokenFailures, "wrong tokens and presenter secrets one address may send in a minute; past that its token checks get 429 for the rest of the minute")
	fl.IntVar(&c.MaxUnknownCodes, "max-unknown-codes", liveclass.DefaultMaxUnknownCodes, "lookups of room codes that name no open room one address may make in a minute; past that its room lookups get 429 for the rest of the minute (behind a NAT the whole class is one address)")
	fl.StringVar(&c.ArchiveTarget, "archive", "", "where every run is recorded: empty = kvlab.db (SQLite) in -data; a postgres:// URL for PostgreSQL, shared by several servers")
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), "usage: labserver [serve] [flags]\n\nServe the course on http://ADDR/. Cells run on this machine's disk, one at a time.\nThe measuring commands (bench, sweep, probe, model, crash) are listed by `labserver help`.\n\nflags:\n")
		fl.PrintDefaults()
	}
	return fl, f
}

// parseServe parses Main's arguments. ok is false when Main should return
// code at once: 0 after -help, 2 for a bad flag or argument, which it has
// reported on stderr.
func parseServe(args []string, stderr io.Writer) (f *serveFlags, code int, ok bool) {
	fl, f := newServeFlags(stderr)
	// The flag package prints every flag after any mistake; a mistake
	// gets one line instead, and -h the whole usage.
	fl.SetOutput(io.Discard)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fl.SetOutput(stderr)
			fl.Usage()
			return nil, 0, false
		}
		fmt.Fprintf(stderr, "labserver serve: %v; see labserver serve -h\n", suggest.FlagError(fl, err))
		return nil, 2, false
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "labserver serve: unexpected argument %q (flags only; see labserver help)\n", fl.Arg(0))
		return nil, 2, false
	}
	if err := f.finish(); err != nil {
		fmt.Fprintf(stderr, "labserver serve: %v\n", err)
		return nil, 2, false
	}
	return f, 0, true
}

// finish completes cfg from the parsed flags: the token from its sources,
// every cap checked to be positive, the default data directory, and the
// -lessons folder in author mode.
func (f *serveFlags) finish() error {
	if err := checkAddr(f.cfg.Addr); err != nil {
		return err
	}
	tok, err := tokenFrom(f.token, f.tokenFile, os.Getenv)
	if err != nil {
		return err
	}
	f.cfg.Token = tok
	if f.cfg.PresenterToken, err = presenterTokenFrom(f.presenterToken, f.presenterTokenFile, os.Getenv); err != nil {
		return err
	}
	if err := f.checkPositive(); err != nil {
		return err
	}
	if f.cfg.DataDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		f.cfg.DataDir = filepath.Join(dir, "kvlab")
	}
	if f.lessonsDir != "" {
		if st, err := os.Stat(f.lessonsDir); err != nil || !st.IsDir() {
			return fmt.Errorf("-lessons %s: not a directory", f.lessonsDir)
		}
		fsys, err := lessonsFS(f.lessonsDir)
		if err != nil {
			return fmt.Errorf("-lessons %s: %v", f.lessonsDir, err)
		}
		f.cfg.Lessons = fsys
		f.cfg.Reload = true
	}
	return nil
}

// checkAddr refuses an -addr that is not host:port with a numeric port,
// saying which form is wanted: -addr 8081 is a port without its host.
func checkAddr(addr string) error {
	example := "127.0.0.1:8080 (this machine only) or 0.0.0.0:8080 (every interface, with a token)"
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 0 || n > 65535 {
			return fmt.Errorf("-addr %s: the port must be a number from 0 to 65535; want host:port, e.g. %s", addr, example)
		}
		return nil
	}
	if n, perr := strconv.Atoi(addr); perr == nil && n >= 0 && n <= 65535 {
		example = fmt.Sprintf("127.0.0.1:%d (this machine only) or 0.0.0.0:%d (every interface, with a token)", n, n)
	}
	return fmt.Errorf("-addr %s: want host:port, e.g. %s", addr, example)
}

// checkPositive refuses a cap flag that is zero or negative, naming the
// first such flag in the order of the usage text.
func (f *serveFlags) checkPositive() error {
	c, lim, bud, wl := &f.cfg, &f.cfg.Limits, &f.cfg.Budget, &f.cfg.Writes
	for _, v := range []struct {
		name string
		v    int64
	}{
		{"-max-cell-runs", int64(bud.MaxRunsPerCell)}, {"-max-cell-time", int64(bud.MaxCellTime)},
		{"-max-conns", int64(f.maxConns)}, {"-max-conns-per-address", int64(f.maxConnsAddr)},
		{"-max-duration", int64(lim.MaxDuration)}, {"-max-line-runs", int64(bud.MaxRunsPerLine)},
		{"-max-memory", bud.MaxMemory}, {"-max-message-bytes", c.MaxMessageBytes},
		{"-max-ops", lim.MaxOps}, {"-max-queued", int64(c.MaxQueuedPerClient)},
		{"-max-queued-per-address", int64(c.MaxQueuedPerAddress)}, {"-max-repeat", int64(lim.MaxRepeat)},
		{"-max-threads", int64(lim.MaxThreads)}, {"-max-total-bytes", lim.MaxTotalBytes},
		{"-max-trials", int64(lim.MaxTrials)}, {"-max-value-size", int64(lim.MaxValueSize)},
		{"-room-ttl", int64(c.RoomTTL)}, {"-max-token-failures", int64(c.MaxTokenFailures)}, {"-max-unknown-codes", int64(c.MaxUnknownCodes)},
		{"-write-rate", int64(wl.Rate)}, {"-write-rate-total", int64(wl.TotalRate)}, {"-max-predictions-per-browser", int64(wl.PerBrowser)}, {"-max-ballots-per-address", int64(wl.BallotsPerAddress)},
		{"-max-shares-per-address", int64(wl.SharesPerAddressRoom)}, {"-max-write-bytes", wl.MaxBytes}, {"-max-share-bytes", wl.MaxShareBytes},
	} {
		if v.v <= 0 {
			return fmt.Errorf("%s must be positive", v.name)
		}
	}
	return nil
}

// listenFailed reports that the server could not listen on addr, with a
// free port to try when the address is taken.
func listenFailed(stderr io.Writer, addr string, err error) {
	fmt.Fprintf(stderr, "labserver serve: %v\n", err)
	if addrInUse(err) {
		if free := freePort(addr); free != "" {
			fmt.Fprintf(stderr, "something (another labserver?) already listens on %s; pick a free port with -addr, e.g. -addr %s (free a moment ago)\n", addr, free)
		} else {
			fmt.Fprintf(stderr, "something (another labserver?) already listens on %s; pick a free port with -addr\n", addr)
		}
	}
}

// announce prints where the course is served (the first stdout line, then
// one "students:" line per address the room can use) and where runs are
// recorded. It returns the course's URL.
func (s *Server) announce(listen string, stdout, stderr io.Writer) string {
	url := "http://" + displayAddr(listen) + "/"
	fmt.Fprintf(stdout, "kvlab: serving the course on %s (run data in %s)\n", url, s.cfg.DataDir)
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, u := range roomURLs(listen, addrs) {
			fmt.Fprintf(stdout, "  students: %s\n", u)
		}
	}
	fmt.Fprintf(stderr, "labserver: every run is recorded in %s; browse them at %sruns\n", s.arch.Where(), url)
	return url
}

// serveUntil serves ln until ctx is cancelled, then closes s (cancelling
// every run) and shuts the HTTP server down, giving requests 3 seconds.
// It returns Main's exit code: 1 when serving fails first.
func (s *Server) serveUntil(ctx context.Context, ln net.Listener, stderr io.Writer) int {
	hs := s.HTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		fmt.Fprintf(stderr, "labserver serve: %v\n", err)
		s.Close()
		return 1
	}
	s.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return 0
}

// freePort returns the first of the 20 ports after addr's on which a
// listener could be opened just now (and was closed again), or "" when
// none could.
func freePort(addr string) string {
	for range 20 {
		next := nextPort(addr)
		if next == addr {
			return ""
		}
		addr = next
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	return ""
}

// nextPort suggests the address one port above addr, or addr itself when
// it has no numeric port.
func nextPort(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil || n <= 0 || n >= 65535 {
		return addr
	}
	return net.JoinHostPort(host, strconv.Itoa(n+1))
}

// displayAddr turns a listen address into one a browser can open.
func displayAddr(a string) string {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return a
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// roomURLs lists, for a server listening on every interface (0.0.0.0 or
// [::]), a URL per interface address other machines can use: not
// loopback, not link-local (an fe80:: address needs a zone, which
// browsers do not take). A server on one address, or on loopback, gets
// none: the first URL is already the one to give out.
func roomURLs(listen string, addrs []net.Addr) []string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		return nil
	}
	var urls []string
	for _, a := range addrs {
		var ip net.IP
		switch a := a.(type) {
		case *net.IPNet:
			ip = a.IP
		case *net.IPAddr:
			ip = a.IP
		}
		if ip == nil || ip.IsLoopback() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() || ip.IsMulticast() {
			continue
		}
		urls = append(urls, "http://"+net.JoinHostPort(ip.String(), port)+"/")
	}
	return urls
}

func openBrowser(url string, stderr io.Writer) {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "labserver: could not open a browser (%v); open %s yourself\n", err, url)
		return
	}
	go cmd.Wait()
}

// lessonsFS is the -lessons folder as seen by the server: an os.Root, so a
// symlink that leads out of the folder fails to open instead of serving
// (or quoting in an error page) a file from elsewhere.
func lessonsFS(dir string) (fs.FS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return root.FS(), nil
}
