// Package dist builds labserver's release archives: one binary per
// operating system and architecture, each with the in-browser interpreter
// embedded (so a student needs no Go), packed with the README into
// labserver-VERSION-OS-ARCH.tar.gz (a .zip for Windows), and a
// SHA256SUMS file in the format `sha256sum -c` reads.
//
// `make dist` runs it through its command, kvlab/internal/dist/cmd, after
// `make wasm`; the test builds and unpacks the archive for the machine it
// runs on and serves a lesson from the binary inside.
package dist

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Targets are the operating systems and architectures a release covers.
var Targets = []Target{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// Target is one GOOS/GOARCH pair.
type Target struct{ OS, Arch string }

func (t Target) String() string { return t.OS + "/" + t.Arch }

// exe is the binary's file name on t.
func (t Target) exe() string {
	if t.OS == "windows" {
		return "labserver.exe"
	}
	return "labserver"
}

// ParseTargets reads "linux/amd64,darwin/arm64"; "" is every Target.
func ParseTargets(s string) ([]Target, error) {
	if s == "" {
		return Targets, nil
	}
	var ts []Target
	for _, part := range strings.Split(s, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(part), "/")
		t := Target{os, arch}
		if !ok || !slices.Contains(Targets, t) {
			return nil, fmt.Errorf("dist: target %q: want OS/ARCH, one of %v", part, Targets)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// Options says what to build and where.
type Options struct {
	Root    string   // the module's root (holds go.mod and README.md)
	Out     string   // where archives and SHA256SUMS go; emptied first
	Version string   // stamped into the binary: `labserver version` prints it
	Targets []Target // default Targets
	// Trimpath removes the build machine's paths from the binaries, as a
	// release should. A build with it recompiles every package once (its
	// cache entries differ), minutes on a small machine, so the test
	// leaves it off: the packing is the same.
	Trimpath bool
	Go       string    // the go command; default "go"
	Log      io.Writer // one line per archive; may be nil
}

// Archive is one built archive.
type Archive struct {
	Target     Target
	Path       string // the archive file
	BinarySize int64  // bytes of the binary inside
	Size       int64  // bytes of the archive
	SHA256     string
}

// Build builds every target's binary and archive, then writes SHA256SUMS.
// It refuses to start when the interpreter has not been built (`make
// wasm`): a release without it would serve exercises that cannot run.
func Build(ctx context.Context, o Options) ([]Archive, error) {
	if o.Go == "" {
		o.Go = "go"
	}
	if len(o.Targets) == 0 {
		o.Targets = Targets
	}
	if o.Version == "" || strings.ContainsAny(o.Version, " /\\'\"") {
		return nil, fmt.Errorf("dist: version %q: want a non-empty name without spaces, slashes or quotes", o.Version)
	}
	if _, err := os.Stat(filepath.Join(o.Root, "static", "wasm", "yaegi.wasm.gz")); err != nil {
		return nil, fmt.Errorf("dist: the interpreter is not built (%v): run `make wasm` first", err)
	}
	if err := os.RemoveAll(o.Out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	var out []Archive
	for _, t := range o.Targets {
		a, err := buildOne(ctx, o, t)
		if err != nil {
			return nil, err
		}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "%-15s binary %5.1f MB  archive %5.1f MB  %s\n", t, float64(a.BinarySize)/1e6, float64(a.Size)/1e6, filepath.Base(a.Path))
		}
		out = append(out, a)
	}
	return out, writeSums(filepath.Join(o.Out, "SHA256SUMS"), out)
}

// buildOne cross-compiles labserver for t and packs it.
func buildOne(ctx context.Context, o Options, t Target) (Archive, error) {
	name := fmt.Sprintf("labserver-%s-%s-%s", o.Version, t.OS, t.Arch)
	tmp, err := os.MkdirTemp("", "kvlab-dist-")
	if err != nil {
		return Archive{}, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, t.exe())
	// -buildvcs=auto stamps the commit when built from a checkout, whatever
	// GOFLAGS says; `labserver version` prints it.
	args := []string{"build", "-buildvcs=auto", "-ldflags", "-s -w -X kvlab/internal/archive.release=" + o.Version, "-o", bin}
	if o.Trimpath {
		args = append(args, "-trimpath")
	}
	cmd := exec.CommandContext(ctx, o.Go, append(args, "./labserver")...)
	cmd.Dir = o.Root
	// No cgo: the binary must run on machines without a C library of
	// the build machine's version (sqlite is modernc's pure Go).
	cmd.Env = append(os.Environ(), "GOOS="+t.OS, "GOARCH="+t.Arch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return Archive{}, fmt.Errorf("dist: building %s: %v\n%s", t, err, b)
	}
	info, err := os.Stat(bin)
	if err != nil {
		return Archive{}, err
	}
	files := []packed{
		{name + "/" + t.exe(), bin, 0o755},
		{name + "/README.md", filepath.Join(o.Root, "README.md"), 0o644},
	}
	a := Archive{Target: t, BinarySize: info.Size()}
	if t.OS == "windows" {
		a.Path = filepath.Join(o.Out, name+".zip")
		err = writeZip(a.Path, files)
	} else {
		a.Path = filepath.Join(o.Out, name+".tar.gz")
		err = writeTarGz(a.Path, files)
	}
	if err != nil {
		return Archive{}, fmt.Errorf("dist: packing %s: %w", t, err)
	}
	if info, err := os.Stat(a.Path); err == nil {
		a.Size = info.Size()
	}
	a.SHA256, err = fileSHA256(a.Path)
	return a, err
}

// packed is one file in an archive: its name there, where it is now, and
// its mode.
type packed struct {
	name, src string
	mode      int64
}

// modTime is every packed file's time, so the same inputs give the same
// archive bytes.
var modTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func writeTarGz(path string, files []packed) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, p := range files {
		if err = addTar(tw, p); err != nil {
			break
		}
	}
	return closeAll(err, tw, zw, f)
}

func addTar(tw *tar.Writer, p packed) error {
	src, err := os.Open(p.src)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: p.name, Mode: p.mode, Size: info.Size(), ModTime: modTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, src)
	return err
}

func writeZip(path string, files []packed) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	for _, p := range files {
		if err = addZip(zw, p); err != nil {
			break
		}
	}
	return closeAll(err, zw, f)
}

func addZip(zw *zip.Writer, p packed) error {
	src, err := os.Open(p.src)
	if err != nil {
		return err
	}
	defer src.Close()
	hdr := &zip.FileHeader{Name: p.name, Method: zip.Deflate, Modified: modTime}
	hdr.SetMode(os.FileMode(p.mode))
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, src)
	return err
}

// closeAll closes cs in order and returns err, or the first close error.
func closeAll(err error, cs ...io.Closer) error {
	for _, c := range cs {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeSums writes "HASH  NAME" lines, as sha256sum does.
func writeSums(path string, as []Archive) error {
	if len(as) == 0 {
		return errors.New("dist: no archives")
	}
	var b strings.Builder
	for _, a := range as {
		fmt.Fprintf(&b, "%s  %s\n", a.SHA256, filepath.Base(a.Path))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
