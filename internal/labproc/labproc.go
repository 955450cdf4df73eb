// Package labproc builds the labserver binary and runs it as a real
// process for tests that need one: the end-to-end browser test and the
// server's kill tests. It is test support; nothing in the binary imports it.
package labproc

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"kvlab/internal/browsertest"
)

// served matches the line `labserver serve` prints once it listens.
var served = regexp.MustCompile(`serving the course on (http://127\.0\.0\.1:[0-9]+/)`)

// Build builds ./labserver from the module at root into a temporary
// directory and returns the binary's path.
func Build(t testing.TB, root string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building labserver needs the go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "labserver")
	build := exec.Command(gobin, "build", "-o", bin, "./labserver")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./labserver: %v\n%s", err, out)
	}
	return bin
}

// Proc is one running `labserver serve`. It is not safe for concurrent use
// except that Exited may be received from by any goroutine.
type Proc struct {
	Cmd    *exec.Cmd
	URL    string              // http://127.0.0.1:PORT/
	Stderr *browsertest.Buffer // everything the process wrote to stderr
	Exited chan error          // receives the process's Wait result once
}

// Start starts `bin serve` on a free loopback port with -data data and
// returns once it prints its URL, failing the test if it exits first or
// prints nothing within wait. The process is killed at cleanup.
func Start(t testing.TB, bin, data string, wait time.Duration) *Proc {
	t.Helper()
	p := &Proc{Stderr: &browsertest.Buffer{}, Exited: make(chan error, 1)}
	p.Cmd = exec.Command(bin, "serve", "-addr", "127.0.0.1:0", "-data", data)
	p.Cmd.Stderr = p.Stderr
	stdout, err := p.Cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("starting labserver: %v", err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := served.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
		p.Exited <- p.Cmd.Wait()
	}()
	t.Cleanup(func() { p.Cmd.Process.Kill() })
	select {
	case p.URL = <-urls:
	case err := <-p.Exited:
		t.Fatalf("labserver exited before serving (%v); its stderr:\n%s", err, p.Stderr)
	case <-time.After(wait):
		t.Fatalf("labserver printed no URL within %v; its stderr:\n%s", wait, p.Stderr)
	}
	return p
}

// Interrupt sends SIGINT and checks that the process exits with status 0
// within limit and that its stderr shows no panic.
func (p *Proc) Interrupt(t testing.TB, limit time.Duration) {
	t.Helper()
	p.Cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-p.Exited:
		if err != nil {
			t.Errorf("labserver exited with %v after an interrupt, want 0; its stderr:\n%s", err, p.Stderr)
		}
	case <-time.After(limit):
		p.Cmd.Process.Kill()
		t.Errorf("labserver was still running %v after an interrupt; its stderr:\n%s", limit, p.Stderr)
	}
	if strings.Contains(p.Stderr.String(), "panic") {
		t.Errorf("labserver's stderr shows a panic:\n%s", p.Stderr)
	}
}
