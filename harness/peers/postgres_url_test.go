package peers

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
)

// fakePG is a PostgreSQL server on loopback that speaks just enough of
// the protocol to see what a client sends: it refuses TLS, reads the
// startup packet, asks for a cleartext password, keeps whatever comes
// next, and refuses the login. Each connection's capture arrives on got.
type fakePG struct {
	addr string
	got  chan pgCapture
}

// pgCapture is what one client sent.
type pgCapture struct {
	params map[string]string // the startup packet's parameters
	after  []byte            // every byte after the startup packet (a password message)
}

func newFakePG(t *testing.T) *fakePG {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f := &fakePG{addr: ln.Addr().String(), got: make(chan pgCapture, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakePG) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var cap pgCapture
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		code := binary.BigEndian.Uint32(hdr[4:])
		if n < 8 || n > 1<<16 {
			return
		}
		body := make([]byte, n-8)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		if code == 80877103 || code == 80877104 { // SSLRequest, GSSENCRequest
			c.Write([]byte{'N'})
			continue
		}
		cap.params = map[string]string{}
		parts := bytes.Split(bytes.TrimRight(body, "\x00"), []byte{0})
		for i := 0; i+1 < len(parts); i += 2 {
			cap.params[string(parts[i])] = string(parts[i+1])
		}
		break
	}
	// AuthenticationCleartextPassword: a client that has a password sends it.
	c.Write([]byte{'R', 0, 0, 0, 8, 0, 0, 0, 3})
	c.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		cap.after = append(cap.after, buf[:n]...)
		if err != nil || (len(cap.after) >= 5 && len(cap.after) >= 1+int(binary.BigEndian.Uint32(cap.after[1:5]))) {
			break
		}
	}
	msg := []byte("SFATAL\x00VFATAL\x00C28P01\x00Mpassword authentication failed\x00\x00")
	e := append([]byte{'E'}, binary.BigEndian.AppendUint32(nil, uint32(4+len(msg)))...)
	c.Write(append(e, msg...))
	f.got <- cap
}

// An -engine postgres:// line takes nothing from the environment of the
// machine that runs it: with PGPASSWORD, PGPASSFILE, a ~/.pgpass and the
// other PG* variables set, the server named by the line receives the
// line's user and database, no password, no options, and the error shown
// names neither the home directory nor the files. Before the connection
// settings were built from the URL alone, pgx sent PGPASSWORD in clear to
// whatever server the line named.
func TestPostgresURLTakesNothingFromTheEnvironment(t *testing.T) {
	home := t.TempDir()
	const fileSecret, envSecret, passfileSecret = "pgpass-secret-1", "env-secret-2", "passfile-secret-3"
	if err := os.WriteFile(filepath.Join(home, ".pgpass"), []byte("*:*:*:*:"+fileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	passfile := filepath.Join(home, "other.pgpass")
	if err := os.WriteFile(passfile, []byte("*:*:*:*:"+passfileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("PGPASSWORD", envSecret)
	t.Setenv("PGPASSFILE", passfile)
	t.Setenv("PGHOST", "192.0.2.1")
	t.Setenv("PGPORT", "1")
	t.Setenv("PGUSER", "envuser")
	t.Setenv("PGDATABASE", "envdb")
	t.Setenv("PGOPTIONS", "-c search_path=evil")
	t.Setenv("PGAPPNAME", "envapp")
	t.Setenv("PGSSLMODE", "verify-full")
	t.Setenv("PGSSLROOTCERT", filepath.Join(home, "no-such-root.crt"))
	t.Setenv("PGTARGETSESSIONATTRS", "read-write")

	for _, sch := range []string{"postgres", "postgresql"} {
		t.Run(sch, func(t *testing.T) {
			f := newFakePG(t)
			_, err := harnesstest.Exec(context.Background(), "bench -engine "+sch+"://alice@"+f.addr+"/shop -ops 10", harness.Env{Dir: t.TempDir()})
			if err == nil {
				t.Fatal("the line ran against a server that refuses every login")
			}
			var got pgCapture
			select {
			case got = <-f.got:
			case <-time.After(10 * time.Second):
				t.Fatalf("the fake server saw no login (error %v)", err)
			}
			if got.params["user"] != "alice" || got.params["database"] != "shop" {
				t.Errorf("startup user=%q database=%q, want alice and shop from the URL", got.params["user"], got.params["database"])
			}
			if got.params["application_name"] != "kvlab" {
				t.Errorf("startup application_name = %q, want kvlab (not PGAPPNAME)", got.params["application_name"])
			}
			if o, ok := got.params["options"]; ok {
				t.Errorf("startup options = %q, want none (PGOPTIONS is the machine's)", o)
			}
			for _, secret := range []string{fileSecret, envSecret, passfileSecret} {
				if bytes.Contains(got.after, []byte(secret)) {
					t.Errorf("the server received the machine's password %q: %q", secret, got.after)
				}
			}
			if msg := err.Error(); strings.Contains(msg, home) || !strings.Contains(msg, f.addr) {
				t.Errorf("error = %q, want it to name %s and no path of the machine (%s)", msg, f.addr, home)
			}
		})
	}
}

// The URL is read with an allow-list: one user, one TCP host, a port, a
// database. What libpq would also take (another host or port in the
// query, a unix socket, a file to read, a host list, a password, control
// bytes for the startup packet) is refused before anything connects.
// Before, ?host= and ?port= moved the connection wherever the line said.
func TestPostgresURLAllowList(t *testing.T) {
	f := newFakePG(t)
	_, port, _ := net.SplitHostPort(f.addr)
	bad := []struct{ url, why string }{
		{"postgres://u@127.0.0.1:1/db?host=127.0.0.1&port=" + port, "?parameters"},
		{"postgres://u@127.0.0.1:1/db?port=" + port, "?parameters"},
		{"postgres://u@127.0.0.1:" + port + "/db?host=/var/run/postgresql", "?parameters"},
		{"postgres://u@127.0.0.1:" + port + "/db?sslrootcert=/etc/passwd&sslmode=verify-ca", "?parameters"},
		{"postgres://u@127.0.0.1:" + port + "/db?passfile=/root/.pgpass", "?parameters"},
		{"postgres://u@127.0.0.1:" + port + "/db?service=prod", "?parameters"},
		{"postgres://u@127.0.0.1:" + port + "/db?options=-csearch_path%3Dx", "?parameters"},
		{"postgres://u@%2Fvar%2Frun%2Fpostgresql/db", "one host"},
		{"postgres://127.0.0.1:" + port + "/db", "user name"},
		{"postgres://u%0d%0aX@127.0.0.1:" + port + "/db", "user name"},
		{"postgres://u@127.0.0.1:" + port + "/db%0d%0auser", "database name"},
		{"postgres://u@127.0.0.1:70000/db", "between 1 and 65535"},
	}
	for _, tt := range bad {
		_, err := harnesstest.Exec(context.Background(), "bench -engine "+tt.url+" -ops 10", harness.Env{Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), "allowed:") {
			t.Errorf("%s: error = %v, want it refused (%s) saying what is allowed", tt.url, err, tt.why)
		}
	}
	// A host list cannot reach the URL through a line (-engine splits at
	// commas), nor through the parser.
	if _, err := parsePostgresURL("postgres://u@127.0.0.1:" + port + ",127.0.0.1:5432/db"); err == nil || !strings.Contains(err.Error(), "one host") {
		t.Errorf("a host list: error = %v, want it refused", err)
	}
	select {
	case got := <-f.got:
		t.Errorf("a refused line reached the server: %v", got.params)
	default:
	}
	good := []struct {
		url  string
		want pgAddr
	}{
		{"postgres://u@127.0.0.1/db", pgAddr{"u", "127.0.0.1", 5432, "db"}},
		{"postgresql://u@[::1]:6543", pgAddr{"u", "::1", 6543, "u"}},
		{"postgres://kv_lab@db.example.org:5433/k.v-1", pgAddr{"kv_lab", "db.example.org", 5433, "k.v-1"}},
	}
	for _, tt := range good {
		if a, err := parsePostgresURL(tt.url); err != nil || a != tt.want {
			t.Errorf("parsePostgresURL(%s) = %+v, %v; want %+v", tt.url, a, err, tt.want)
		}
	}
}
