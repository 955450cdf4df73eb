package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
)

// Version is this labserver's version, from the build info: the module
// version when built from a tagged module, else the release name `make
// dist` stamped, else "devel", followed by
// "+" and the short commit when the build recorded one, and "-dirty"
// when the tree had uncommitted changes. A build that recorded no commit
// (go build -buildvcs=false, or outside a repository) gets "+bin." and
// 12 hex digits of a hash of its executable instead, so two different
// builds still differ. Two runs with different Versions may have
// measured different engine code.
func Version() string {
	versionOnce.Do(func() {
		bi, ok := debug.ReadBuildInfo()
		version = versionFrom(bi, ok, release)
		if !strings.Contains(version, "+") {
			if h := exeHash(); h != "" {
				version += "+bin." + h
			}
		}
	})
	return version
}

// exeHash is a short hash of the running executable, "" when it cannot
// be read.
func exeHash() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

var (
	versionOnce sync.Once
	version     string
)

// release names a release build in place of "devel": `make dist` sets it
// with -ldflags "-X kvlab/internal/archive.release=NAME".
var release string

// Commit is the full commit the binary was built from, "" when the build
// recorded none; with "-dirty" when the tree had uncommitted changes.
func Commit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := vcsOf(bi)
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}

// vcsOf reads the commit and whether the tree was modified from the
// build info's vcs settings ("" and false when it recorded none).
func vcsOf(bi *debug.BuildInfo) (rev string, dirty bool) {
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return rev, dirty
}

// versionFrom builds Version from the build info and the stamped release
// name. Since Go 1.24 a build in a checkout gets a pseudo-version such as
// "v0.0.0-20261202025710-353c43753df2+dirty" as its main module's
// version; it already names the commit and the dirty tree, so neither is
// added twice.
func versionFrom(bi *debug.BuildInfo, ok bool, release string) string {
	if !ok || bi == nil {
		return "unknown"
	}
	v := bi.Main.Version
	switch {
	case release != "":
		v = release
	case v == "" || v == "(devel)":
		v = "devel"
	}
	rev, dirty := vcsOf(bi)
	if rev != "" && !strings.Contains(v, rev[:min(len(rev), 12)]) {
		v += "+" + rev[:min(len(rev), 12)]
	}
	if dirty && !strings.Contains(v, "dirty") {
		v += "-dirty"
	}
	return v
}

// HostID names this machine, stably across restarts: its host name and
// the first 12 hex digits of a SHA-256 of its machine id (Linux
// /etc/machine-id; the host name where there is none), e.g.
// "lab-07/3f9a0c2b1d4e". The hash tells two machines with the same name
// apart without publishing the machine id itself.
func HostID() string {
	hostOnce.Do(func() { hostID = hostIDFrom(os.Hostname, os.ReadFile) })
	return hostID
}

var (
	hostOnce sync.Once
	hostID   string
)

func hostIDFrom(hostname func() (string, error), readFile func(string) ([]byte, error)) string {
	name, err := hostname()
	if err != nil || name == "" {
		name = "unknown"
	}
	seed := ""
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if b, err := readFile(p); err == nil && strings.TrimSpace(string(b)) != "" {
			seed = strings.TrimSpace(string(b))
			break
		}
	}
	if seed == "" {
		seed = name
	}
	sum := sha256.Sum256([]byte("kvlab host " + seed))
	return name + "/" + hex.EncodeToString(sum[:])[:12]
}
