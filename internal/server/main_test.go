package server

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"kvlab/internal/browsertest"
	"kvlab/internal/lesson"
)

func TestMainFlagErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"-nope"}, 2, "flag provided but not defined: -nope"},
		{"mistyped flag", []string{"-adr", "127.0.0.1:0"}, 2, "-adr (did you mean `-addr`?); see labserver serve -h"},
		{"port alone", []string{"-addr", "8081"}, 2, "-addr 8081: want host:port, e.g. 127.0.0.1:8081"},
		{"argument", []string{"extra"}, 2, `unexpected argument "extra"`},
		{"zero cap", []string{"-max-ops", "0"}, 2, "-max-ops must be positive"},
		{"zero room ttl", []string{"-room-ttl", "0s"}, 2, "-room-ttl must be positive"},
		{"public without token", []string{"-addr", "0.0.0.0:0", "-data", t.TempDir()}, 1, "pass -token"},
		{"lessons not a dir", []string{"-lessons", "/nonexistent/kvlab"}, 2, "not a directory"},
		{"port in use", []string{"-addr", busy.Addr().String(), "-data", t.TempDir()}, 1, "pick a free port with -addr, e.g. -addr 127.0.0.1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), tt.args, &out, &errb)
			if code != tt.code || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("got exit %d, stderr %q; want exit %d and %q", code, errb.String(), tt.code, tt.want)
			}
			// A server that refuses to start says why, and nothing else.
			if code != 0 && strings.Contains(errb.String(), "WARNING") {
				t.Errorf("got stderr %q, want the error without a warning", errb.String())
			}
		})
	}
}

func TestMainServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb browsertest.Buffer
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"-addr", "127.0.0.1:0", "-data", t.TempDir(), "-lessons", "testdata/lessons"}, &out, &errb)
	}()
	re := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	var url string
	for range 200 {
		if url = re.FindString(out.String()); url != "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if url == "" {
		cancel()
		t.Fatalf("Main printed no URL; stdout %q stderr %q", out.String(), errb.String())
	}
	r, err := http.Get(url + "lessons/01-fixture")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Errorf("got %d, want 200", r.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("got exit %d after cancel, want 0; stderr %q", code, errb.String())
	}
}

// In author mode a lesson that is a symlink out of the -lessons folder is
// not read: its text could be any file the server's user can read, and a
// parse error would show a line of it on the page.
func TestAuthorLessonsStayInDir(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	os.WriteFile(secret, []byte("---\nsecret password\n---\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "01-ok.md"), []byte("---\ntitle: Fine\norder: 1\n---\nhello\n"), 0o644)
	if err := os.Symlink(secret, filepath.Join(dir, "02-leak.md")); err != nil {
		t.Skip(err)
	}
	fsys, err := lessonsFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lesson.Load(fsys)
	if err == nil || !strings.Contains(err.Error(), "02-leak.md") {
		t.Fatalf("got %v, want an error naming 02-leak.md", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows text from outside the folder: %v", err)
	}
	// A symlink that stays inside the folder is fine.
	os.Remove(filepath.Join(dir, "02-leak.md"))
	os.WriteFile(filepath.Join(dir, "real.txt"), []byte("---\ntitle: Two\norder: 2\n---\nhi\n"), 0o644)
	os.Symlink("real.txt", filepath.Join(dir, "02-inside.md"))
	ls, err := lesson.Load(fsys)
	if err != nil || len(ls) != 2 {
		t.Errorf("got %d lessons, %v; want 2 and no error", len(ls), err)
	}
}

// On every interface with a token, the first line keeps its format (the
// README and scripts parse it) and each address the room can use follows.
func TestMainServesRoom(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb browsertest.Buffer
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"-addr", "0.0.0.0:0", "-token", "s3cret", "-data", t.TempDir(), "-lessons", "testdata/lessons"}, &out, &errb)
	}()
	first := regexp.MustCompile(`^kvlab: serving the course on http://localhost:(\d+)/ \(run data in .+\)$`)
	var port string
	waitFor(t, "the URL", func() bool {
		line, _, ok := strings.Cut(out.String(), "\n")
		if m := first.FindStringSubmatch(line); ok && m != nil {
			port = m[1]
		}
		return port != "" || strings.Contains(errb.String(), "labserver serve:")
	})
	if port == "" {
		cancel()
		t.Fatalf("Main printed no URL; stdout %q stderr %q", out.String(), errb.String())
	}
	// The server answers only once everything above is printed.
	waitFor(t, "the server to answer", func() bool {
		r, err := http.Get("http://localhost:" + port + "/")
		if err == nil {
			r.Body.Close()
		}
		return err == nil
	})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")[1:]
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	want := 0
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
			want++
		}
	}
	if len(lines) != want {
		t.Errorf("got %d student lines %q, want %d (one per non-loopback address)", len(lines), lines, want)
	}
	for _, l := range lines {
		u, ok := strings.CutPrefix(l, "  students: ")
		if !ok || !strings.HasSuffix(u, ":"+port+"/") {
			t.Errorf("got line %q, want \"  students: http://ADDR:%s/\"", l, port)
			continue
		}
		r, err := http.Get(u + "lessons/01-fixture")
		if err != nil {
			t.Errorf("%s: %v", u, err)
			continue
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Errorf("%s: got %d, want 200", u, r.StatusCode)
		}
	}
	if !strings.Contains(errb.String(), "WARNING: 0.0.0.0:0 is reachable from other machines") {
		t.Errorf("got stderr %q, want the warning", errb.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("got exit %d after cancel, want 0; stderr %q", code, errb.String())
	}
}

func TestRoomURLs(t *testing.T) {
	addrs := []net.Addr{
		&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
		&net.IPNet{IP: net.ParseIP("::1"), Mask: net.CIDRMask(128, 128)},
		&net.IPNet{IP: net.ParseIP("10.0.0.5"), Mask: net.CIDRMask(24, 32)},
		&net.IPNet{IP: net.ParseIP("fe80::1"), Mask: net.CIDRMask(64, 128)},
		&net.IPNet{IP: net.ParseIP("fd00::2"), Mask: net.CIDRMask(64, 128)},
	}
	tests := []struct {
		listen string
		want   string
	}{
		{"0.0.0.0:8080", "http://10.0.0.5:8080/ http://[fd00::2]:8080/"},
		{"[::]:8080", "http://10.0.0.5:8080/ http://[fd00::2]:8080/"},
		{"10.0.0.5:8080", ""},
		{"127.0.0.1:8080", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(roomURLs(tt.listen, addrs), " "); got != tt.want {
			t.Errorf("roomURLs(%s): got %q, want %q", tt.listen, got, tt.want)
		}
	}
}

// Every cap flag (-max-*) refuses zero and names itself, so a cap added
// later cannot be switched off by mistake.
func TestMainCapFlagsMustBePositive(t *testing.T) {
	fl, _ := newServeFlags(io.Discard)
	n := 0
	fl.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Name, "max-") {
			return
		}
		n++
		var out, errb bytes.Buffer
		// Cancelled: a cap that is not checked starts a server that
		// stops at once (exit 0) instead of serving forever.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		args := []string{"-addr", "127.0.0.1:0", "-data", t.TempDir(), "-" + f.Name, "0"}
		code := Main(ctx, args, &out, &errb)
		if want := "-" + f.Name + " must be positive"; code != 2 || !strings.Contains(errb.String(), want) {
			t.Errorf("-%s 0: got exit %d, stderr %q; want exit 2 and %q", f.Name, code, errb.String(), want)
		}
	})
	if n == 0 {
		t.Fatal("found no -max-* flags")
	}
}

// A port in use gets a suggestion that was free when made: not the next
// port when that one is taken too.
func TestPortInUseSuggestsAFreePort(t *testing.T) {
	var a, b net.Listener
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+1))); err == nil {
			a, b = l, l2
			break
		}
		l.Close()
	}
	if a == nil {
		t.Skip("found no two free ports in a row")
	}
	defer a.Close()
	defer b.Close()
	_, err := net.Listen("tcp", a.Addr().String())
	if err == nil {
		t.Fatal("listening twice on one port succeeded")
	}
	var out bytes.Buffer
	listenFailed(&out, a.Addr().String(), err)
	m := regexp.MustCompile(`e\.g\. -addr (\S+) \(free a moment ago\)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no suggestion in %q", out.String())
	}
	if m[1] == b.Addr().String() || m[1] == a.Addr().String() {
		t.Errorf("suggested %s, which is taken (%s and %s are)", m[1], a.Addr(), b.Addr())
	}
}
