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
	"syscall"
	"time"
)

// Main is `labserver [serve]`: it parses flags, listens, prints the URL
// and serves until ctx is cancelled. It returns the process exit code.
//
// The first stdout line is always "kvlab: serving the course on URL (run
// data in DIR)"; scripts and the README read it. On every interface
// (-addr 0.0.0.0:PORT or [::]:PORT) that URL says localhost, so a line
// "  students: URL" follows for each address the room can use.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("labserver serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	def := DefaultLimits()
	addr := fl.String("addr", "127.0.0.1:8080", "address to listen on; a non-loopback address requires a token (-token-file, $"+TokenEnv+" or -token)")
	data := fl.String("data", "", "directory for run data (default: kvlab in the user's cache directory)")
	lessonsDir := fl.String("lessons", "", "serve the lessons in this directory, re-read on change (author mode); default: the embedded lessons")
	open := fl.Bool("open", false, "open the course in the browser")
	token := fl.String("token", "", "instructor token every run must present (required on a non-loopback -addr); other local users can read it in the process list: prefer -token-file or $"+TokenEnv)
	tokenFile := fl.String("token-file", "", "read the instructor token from this file (its first line), instead of -token; default: $"+TokenEnv+" when set")
	maxOps := fl.Int64("max-ops", def.MaxOps, "largest -ops a run may ask for")
	maxDur := fl.Duration("max-duration", def.MaxDuration, "longest -duration a run may ask for")
	maxVal := fl.Int("max-value-size", def.MaxValueSize, "largest -value-size in bytes")
	maxBytes := fl.Int64("max-total-bytes", def.MaxTotalBytes, "most bytes one run may write")
	maxThreads := fl.Int("max-threads", def.MaxThreads, "most -threads")
	maxTrials := fl.Int("max-trials", def.MaxTrials, "most crash -trials")
	maxRepeat := fl.Int("max-repeat", def.MaxRepeat, "most -repeat")
	maxMsg := fl.Int64("max-message-bytes", 64<<10, "largest websocket message accepted")
	maxQueued := fl.Int("max-queued", 4, "most runs one browser tab may have queued or running")
	maxQueuedAddr := fl.Int("max-queued-per-address", 8, "most runs one remote address may have queued or running, over all its tabs and quiz requests")
	maxConns := fl.Int("max-conns", 256, "most open connections; more are answered 503 and closed")
	maxConnsAddr := fl.Int("max-conns-per-address", 64, "most open connections from one remote address")
	bud := DefaultBudget()
	maxLineRuns := fl.Int("max-line-runs", bud.MaxRunsPerLine, "most runs one line may make (engines x thread counts x repeats)")
	maxCellRuns := fl.Int("max-cell-runs", bud.MaxRunsPerCell, "most runs all the lines of one cell may make")
	maxCellTime := fl.Duration("max-cell-time", bud.MaxCellTime, "longest one cell may hold the disk, preload and every run included; a cell whose -duration (or -ops / -rate) adds up to more is refused")
	maxMemory := fl.Int64("max-memory", bud.MaxMemory, "most bytes of memory one run may need, estimated from its -keys, -value-size, -engine and the latency samples it keeps")
	roomTTL := fl.Duration("room-ttl", defaultRoomTTL, "a room (a live class: /api/rooms) closes this long after its presenter's last action; its code then answers 404")
	archiveTarget := fl.String("archive", "", "where every run is recorded: empty = kvlab.db (SQLite) in -data; a postgres:// URL for PostgreSQL, shared by several servers")
	fl.Usage = func() {
		fmt.Fprintf(stderr, "usage: labserver [serve] [flags]\n\nServe the course on http://ADDR/. Cells run on this machine's disk, one at a time.\nThe measuring commands (bench, sweep, probe, model, crash) are listed by `labserver help`.\n\nflags:\n")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "labserver serve: unexpected argument %q (flags only; see labserver help)\n", fl.Arg(0))
		return 2
	}
	tok, err := tokenFrom(*token, *tokenFile, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "labserver serve: %v\n", err)
		return 2
	}
	cfg := Config{Addr: *addr, DataDir: *data, Token: tok, Log: stderr, MaxMessageBytes: *maxMsg, MaxQueuedPerClient: *maxQueued, MaxQueuedPerAddress: *maxQueuedAddr, ArchiveTarget: *archiveTarget}
	cfg.Limits = def
	cfg.Limits.MaxOps, cfg.Limits.MaxDuration, cfg.Limits.MaxValueSize = *maxOps, *maxDur, *maxVal
	cfg.Limits.MaxTotalBytes, cfg.Limits.MaxThreads, cfg.Limits.MaxTrials, cfg.Limits.MaxRepeat = *maxBytes, *maxThreads, *maxTrials, *maxRepeat
	cfg.RoomTTL = *roomTTL
	cfg.Budget = Budget{MaxRunsPerLine: *maxLineRuns, MaxRunsPerCell: *maxCellRuns, MaxCellTime: *maxCellTime, MaxMemory: *maxMemory}
	for name, v := range map[string]int64{"-max-ops": *maxOps, "-max-duration": int64(*maxDur), "-max-value-size": int64(*maxVal),
		"-max-total-bytes": *maxBytes, "-max-threads": int64(*maxThreads), "-max-trials": int64(*maxTrials),
		"-max-repeat": int64(*maxRepeat), "-max-message-bytes": *maxMsg, "-max-queued": int64(*maxQueued),
		"-max-queued-per-address": int64(*maxQueuedAddr), "-max-conns": int64(*maxConns), "-max-conns-per-address": int64(*maxConnsAddr),
		"-max-line-runs": int64(*maxLineRuns), "-room-ttl": int64(*roomTTL), "-max-cell-runs": int64(*maxCellRuns), "-max-cell-time": int64(*maxCellTime), "-max-memory": *maxMemory} {
		if v <= 0 {
			fmt.Fprintf(stderr, "labserver serve: %s must be positive\n", name)
			return 2
		}
	}
	if cfg.DataDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		cfg.DataDir = filepath.Join(dir, "kvlab")
	}
	if *lessonsDir != "" {
		if st, err := os.Stat(*lessonsDir); err != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "labserver serve: -lessons %s: not a directory\n", *lessonsDir)
			return 2
		}
		fsys, err := lessonsFS(*lessonsDir)
		if err != nil {
			fmt.Fprintf(stderr, "labserver serve: -lessons %s: %v\n", *lessonsDir, err)
			return 2
		}
		cfg.Lessons = fsys
		cfg.Reload = true
	}
	// New refuses a non-loopback address without a token; the warning is
	// for a server that does start.
	s, err := New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "labserver serve: %v\n", err)
		return 1
	}
	if !IsLoopback(cfg.Addr) {
		fmt.Fprintf(stderr, "labserver: WARNING: %s is reachable from other machines; runs need the token\n", cfg.Addr)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		s.Close()
		fmt.Fprintf(stderr, "labserver serve: %v\n", err)
		if errors.Is(err, syscall.EADDRINUSE) {
			fmt.Fprintf(stderr, "something (another labserver?) already listens on %s; pick a free port with -addr, e.g. -addr %s\n", cfg.Addr, nextPort(cfg.Addr))
		}
		return 1
	}
	url := "http://" + displayAddr(ln.Addr().String()) + "/"
	fmt.Fprintf(stdout, "kvlab: serving the course on %s (run data in %s)\n", url, cfg.DataDir)
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, u := range roomURLs(ln.Addr().String(), addrs) {
			fmt.Fprintf(stdout, "  students: %s\n", u)
		}
	}
	fmt.Fprintf(stderr, "labserver: every run is recorded in %s; browse them at %sruns\n", s.arch.Where(), url)
	if *open {
		openBrowser(url, stderr)
	}
	hs := s.HTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(s.LimitListener(ln, *maxConns, *maxConnsAddr)) }()
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
