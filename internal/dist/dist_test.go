package dist

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"kvlab/internal/labproc"
)

// TestArchiveServesALesson builds the release archive for this machine,
// checks its checksum line, unpacks it, and runs the binary inside: it
// prints the stamped version, serves a lesson and the embedded
// interpreter, with nothing but the archive's contents.
func TestArchiveServesALesson(t *testing.T) {
	if testing.Short() {
		t.Skip("builds labserver: skipped with -short")
	}
	host := Target{runtime.GOOS, runtime.GOARCH}
	if !slices.Contains(Targets, host) || host.OS == "windows" {
		t.Skipf("no archive to unpack and run for %s here", host)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "static", "wasm", "yaegi.wasm.gz")); err != nil {
		if os.Getenv("KVLAB_REQUIRE_TOOLS") != "" {
			t.Fatalf("the interpreter is not built: run `make wasm` (%v)", err)
		}
		t.Skipf("the interpreter is not built (make wasm): %v", err)
	}
	out := t.TempDir()
	as, err := Build(context.Background(), Options{Root: root, Out: out, Version: "test.1", Targets: []Target{host}})
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 {
		t.Fatalf("got %d archives, want 1", len(as))
	}
	a := as[0]
	name := "labserver-test.1-" + host.OS + "-" + host.Arch
	if got, want := filepath.Base(a.Path), name+".tar.gz"; got != want {
		t.Errorf("got archive %s, want %s", got, want)
	}

	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != a.Size {
		t.Errorf("archive is %d bytes, Build reported %d", len(data), a.Size)
	}
	sum := sha256.Sum256(data)
	if want := hex.EncodeToString(sum[:]) + "  " + name + ".tar.gz\n"; string(sums) != want {
		t.Errorf("SHA256SUMS: got %q, want %q", sums, want)
	}

	dir := t.TempDir()
	names := untar(t, a.Path, dir)
	if want := []string{name + "/README.md", name + "/labserver"}; !slices.Equal(names, want) {
		t.Fatalf("archive holds %v, want %v", names, want)
	}
	bin := filepath.Join(dir, name, "labserver")
	if info, err := os.Stat(bin); err != nil || info.Mode()&0o100 == 0 {
		t.Fatalf("labserver in the archive is not executable: %v %v", info, err)
	}
	if info, _ := os.Stat(bin); info.Size() != a.BinarySize {
		t.Errorf("binary is %d bytes, Build reported %d", info.Size(), a.BinarySize)
	}

	v, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(v), "labserver test.1") {
		t.Errorf("labserver version: got %q (%v), want it to start with \"labserver test.1\"", v, err)
	}
	m, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil || !strings.Contains(string(m), "CGO_ENABLED=0") {
		t.Errorf("go version -m: want a binary built with CGO_ENABLED=0, got %v\n%s", err, m)
	}

	p := labproc.Start(t, bin, t.TempDir(), time.Minute)
	body, ctype := get(t, p.URL+"lessons/01-mean-hides-the-tail")
	if !strings.Contains(body, `class="cell`) || !strings.HasPrefix(ctype, "text/html") {
		t.Errorf("lesson page from the unpacked binary: type %q, no lab cell in %d bytes", ctype, len(body))
	}
	if wasm, ctype := get(t, p.URL+"static/wasm/yaegi.wasm"); ctype != "application/wasm" || !strings.HasPrefix(wasm, "\x00asm") {
		t.Errorf("interpreter from the unpacked binary: type %q, starts %q, want application/wasm starting \\x00asm", ctype, wasm[:min(4, len(wasm))])
	}
}

// get fetches url without asking for gzip and returns the body and type.
func get(t *testing.T, url string) (string, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b), resp.Header.Get("Content-Type")
}

// untar unpacks a .tar.gz into dir and returns the names it held, sorted.
func untar(t *testing.T, path, dir string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		dst := filepath.Join(dir, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tr); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	slices.Sort(names)
	return names
}

func TestParseTargets(t *testing.T) {
	if ts, err := ParseTargets(""); err != nil || len(ts) != 6 {
		t.Errorf(`ParseTargets(""): got %v %v, want all six`, ts, err)
	}
	if ts, err := ParseTargets("linux/arm64, windows/amd64"); err != nil || !slices.Equal(ts, []Target{{"linux", "arm64"}, {"windows", "amd64"}}) {
		t.Errorf("got %v %v", ts, err)
	}
	for _, bad := range []string{"linux", "plan9/amd64", "linux/amd64,"} {
		if _, err := ParseTargets(bad); err == nil || !strings.Contains(err.Error(), "want OS/ARCH") {
			t.Errorf("ParseTargets(%q): got %v, want an error naming the form", bad, err)
		}
	}
}
