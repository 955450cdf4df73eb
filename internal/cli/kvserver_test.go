package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"kvlab/internal/browsertest"
	"kvlab/internal/resp"
)

// TestKVServerCommand starts `labserver kvserver` on a free port, talks
// to it, and stops it as Ctrl-C would.
func TestKVServerCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut browsertest.Buffer
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, []string{"kvserver", "-addr", "127.0.0.1:0", "-sync", "group", "-dir", t.TempDir()}, &out, &errOut)
	}()
	addrRE := regexp.MustCompile(`on (127\.0\.0\.1:\d+)`)
	var addr string
	for addr == "" {
		select {
		case c := <-code:
			t.Fatalf("kvserver exited with %d before serving: %s", c, errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
		if m := addrRE.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
	}
	if want := "under -sync group a process kill can lose nothing acknowledged, a power cut nothing acknowledged"; !strings.Contains(out.String(), want) {
		t.Errorf("startup line %q, want it to say %q", out.String(), want)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	w, r := bufio.NewWriter(c), bufio.NewReader(c)
	resp.WriteCommand(w, []byte("SET"), []byte("k"), []byte("v"))
	resp.WriteCommand(w, []byte("INFO"), []byte("persistence"))
	w.Flush()
	if rep, err := resp.ReadReply(r); err != nil || string(rep.Str) != "OK" {
		t.Errorf("SET: %+v, %v; want OK", rep, err)
	}
	if rep, err := resp.ReadReply(r); err != nil || !strings.Contains(string(rep.Str), "kv_sync:group") {
		t.Errorf("INFO persistence: %q, %v; want kv_sync:group", rep.Str, err)
	}
	cancel()
	if got := <-code; got != 0 {
		t.Errorf("exit code after interrupt = %d, want 0 (stderr %q)", got, errOut.String())
	}
	if _, err := resp.ReadReply(r); err == nil {
		t.Errorf("the connection is still open after the server stopped")
	}
}

func TestKVServerBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"kvserver", "-sync", "sometimes"}, "-sync sometimes:"},
		{[]string{"kvserver", "-port", "1"}, "flag provided but not defined: -port"},
		{[]string{"kvserver", "extra"}, `unexpected argument "extra"`},
		{[]string{"kvserver", "-addr", "256.0.0.1:1", "-dir", ""}, "-addr 256.0.0.1:1"},
		{[]string{"kvserver", "-max-conns", "0"}, "-max-conns 0: must be between 1 and 100000"},
		{[]string{"kvserver", "-idle-timeout", "-1s"}, "-idle-timeout -1s: must be 0 (never) or more"},
	}
	for _, tt := range tests {
		var errOut bytes.Buffer
		code := Main(context.Background(), tt.args, io.Discard, &errOut)
		if code == 0 || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("labserver %s: exit %d, stderr %q; want non-zero and %q", strings.Join(tt.args, " "), code, errOut.String(), tt.want)
		}
	}
}
