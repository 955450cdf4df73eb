package server

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMainFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"-nope"}, 2, "flag provided but not defined: -nope"},
		{"argument", []string{"extra"}, 2, `unexpected argument "extra"`},
		{"zero cap", []string{"-max-ops", "0"}, 2, "-max-ops must be positive"},
		{"public without token", []string{"-addr", "0.0.0.0:0", "-data", t.TempDir()}, 1, "pass -token"},
		{"lessons not a dir", []string{"-lessons", "/nonexistent/kvlab"}, 2, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), tt.args, &out, &errb)
			if code != tt.code || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("got exit %d, stderr %q; want exit %d and %q", code, errb.String(), tt.code, tt.want)
			}
		})
	}
}

func TestMainServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
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
