package server

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokenFrom(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, empty, twoLines := file("good", "s3cret\n"), file("empty", " \n"), file("two", "a\nb\n")
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == TokenEnv {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name, flag, file, env string
		want, err             string
	}{
		{"flag", "f1", "", "e1", "f1", ""},
		{"file, trailing newline dropped", "", good, "e1", "s3cret", ""},
		{"environment when no flag", "", "", "e1", "e1", ""},
		{"none", "", "", "", "", ""},
		{"both flags", "f1", good, "", "", "-token and -token-file: give one or the other"},
		{"missing file", "", filepath.Join(dir, "nope"), "", "", "-token-file: open"},
		{"empty file", "", empty, "", "", "the file is empty"},
		{"two lines", "", twoLines, "", "", "must be one line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tokenFrom(tt.flag, tt.file, env(tt.env))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("got %q, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// A room server takes its token from a file or the environment: it starts
// on a non-loopback address without -token on its command line.
func TestMainTokenWithoutCommandLine(t *testing.T) {
	tokFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokFile, []byte("s3cret\n"), 0o600)
	for _, tt := range []struct {
		name string
		args []string
		env  string
	}{
		{"file", []string{"-token-file", tokFile}, ""},
		{"environment", nil, "s3cret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(TokenEnv, tt.env)
			ctx, cancel := context.WithCancel(context.Background())
			var out, errb bytes.Buffer
			done := make(chan int)
			args := append([]string{"-addr", "0.0.0.0:0", "-data", t.TempDir(), "-lessons", "testdata/lessons"}, tt.args...)
			go func() { done <- Main(ctx, args, &out, &errb) }()
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("got exit %d, stderr %q; want the server to start and stop", code, errb.String())
			}
		})
	}
}

// TestPresenterTokenFrom: the presenter token has its own flags and
// environment variable, and its errors name them.
func TestPresenterTokenFrom(t *testing.T) {
	env := func(k string) string {
		if k == PresenterTokenEnv {
			return "from-env"
		}
		return "wrong-variable"
	}
	if got, err := presenterTokenFrom("", "", env); err != nil || got != "from-env" {
		t.Errorf("from the environment: got %q, %v; want from-env", got, err)
	}
	if _, err := presenterTokenFrom("a", "b", env); err == nil || !strings.Contains(err.Error(), "-presenter-token and -presenter-token-file") {
		t.Errorf("both flags: got %v, want an error naming both", err)
	}
}
