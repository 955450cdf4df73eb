package archive

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func globAside(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, FileName+".corrupt-*"))
}

func TestSQLiteSettings(t *testing.T) {
	dir := t.TempDir()
	a := open(t, "", dir)
	s := a.(*sqlStore)
	for pragma, want := range map[string]string{"journal_mode": "wal", "synchronous": "2", "busy_timeout": fmt.Sprint(sqliteBusyTimeout.Milliseconds())} {
		var got string
		if err := s.db.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s: got %s, want %s", pragma, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err != nil {
		t.Errorf("the archive is not %s in the data directory: %v", FileName, err)
	}
}

// TestSQLiteCorrupt: a damaged kvlab.db is moved aside, byte for byte,
// named in the log, and a fresh archive takes its place.
func TestSQLiteCorrupt(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"not a database", func(t *testing.T, path string) {
			os.WriteFile(path, []byte("these are my notes, not a database\n"), 0o644)
		}},
		{"a header only", func(t *testing.T, path string) {
			os.WriteFile(path, append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xff}, 84)...), 0o644)
		}},
		{"pages overwritten", func(t *testing.T, path string) {
			a, err := Open(ctx, "", filepath.Dir(path), t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			if err := Fill(ctx, a, 300, 5); err != nil {
				t.Fatal(err)
			}
			a.(*sqlStore).db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
			a.Close()
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			// Garbage over the middle third: b-tree pages, not the header.
			f.WriteAt(bytes.Repeat([]byte{0x5a}, int(st.Size()/3)), st.Size()/3)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			tc.damage(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var logs []string
			a, err := Open(ctx, "", dir, func(f string, args ...any) { logs = append(logs, fmt.Sprintf(f, args...)) })
			if err != nil {
				t.Fatalf("Open of a corrupt file: %v; want it moved aside and a fresh archive", err)
			}
			defer a.Close()
			aside, _ := globAside(dir)
			if len(aside) != 1 {
				t.Fatalf("files moved aside: %v, want one", aside)
			}
			if kept, _ := os.ReadFile(aside[0]); !bytes.Equal(kept, before) {
				t.Errorf("%s is not the corrupt file byte for byte", aside[0])
			}
			if len(logs) != 1 || !strings.Contains(logs[0], aside[0]) || !strings.Contains(logs[0], "corrupt") {
				t.Errorf("logs %q: want one naming %s", logs, aside[0])
			}
			if _, err := a.Add(ctx, fullRun()); err != nil {
				t.Errorf("the fresh archive: %v", err)
			}
			if runs, _ := a.List(ctx, Query{}); len(runs) != 1 {
				t.Errorf("the fresh archive holds %d runs, want 1", len(runs))
			}
		})
	}
}

// TestSQLiteEmptyFileIsFresh: an empty kvlab.db (touched, or created by
// a process killed at once) is a new database, not corruption.
func TestSQLiteEmptyFileIsFresh(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileName), nil, 0o644)
	var logs []string
	a, err := Open(context.Background(), "", dir, func(f string, args ...any) { logs = append(logs, fmt.Sprintf(f, args...)) })
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if aside, _ := globAside(dir); len(aside) > 0 || len(logs) > 0 {
		t.Errorf("an empty file was treated as corrupt: aside %v, logs %q", aside, logs)
	}
}

// TestSQLiteUnreadableIsNotCorrupt: a file that cannot be opened (a
// directory in its place) is an error, never moved aside.
func TestSQLiteUnreadableIsNotCorrupt(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, FileName), 0o755)
	if _, err := Open(context.Background(), "", dir, t.Logf); err == nil {
		t.Fatal("Open with a directory named kvlab.db succeeded")
	}
	if aside, _ := globAside(dir); len(aside) > 0 {
		t.Errorf("moved aside: %v", aside)
	}
}

func TestVersionAndHost(t *testing.T) {
	if v := Version(); v == "" {
		t.Error("Version is empty")
	}
	h1 := hostIDFrom(func() (string, error) { return "lab-07", nil }, func(string) ([]byte, error) { return []byte("abc\n"), nil })
	h2 := hostIDFrom(func() (string, error) { return "lab-07", nil }, func(string) ([]byte, error) { return []byte("abd\n"), nil })
	if !strings.HasPrefix(h1, "lab-07/") || h1 == h2 || strings.Contains(h1, "abc") {
		t.Errorf("HostID: %q and %q: want the name, a hash that tells the machines apart, not the machine id", h1, h2)
	}
	if HostID() != HostID() {
		t.Error("HostID is not stable")
	}
}

func TestVersionFrom(t *testing.T) {
	bi := func(v string, settings ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{Main: debug.Module{Version: v}}
		for i := 0; i+1 < len(settings); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return b
	}
	for _, tc := range []struct {
		bi      *debug.BuildInfo
		release string
		want    string
	}{
		{bi("(devel)", "vcs.revision", "026d61d8a5b3c1e2f0", "vcs.modified", "false"), "", "devel+026d61d8a5b3"},
		{bi("", "vcs.revision", "026d61d8a5b3c1e2f0", "vcs.modified", "true"), "", "devel+026d61d8a5b3-dirty"},
		{bi("v1.2.0"), "", "v1.2.0"},
		{bi("(devel)"), "", "devel"},
		// Go 1.24+ in a checkout: the pseudo-version already names both.
		{bi("v0.0.0-20261202025710-353c43753df2+dirty", "vcs.revision", "353c43753df2235b", "vcs.modified", "true"), "", "v0.0.0-20261202025710-353c43753df2+dirty"},
		// make dist's release name replaces whatever the build info says.
		{bi("v0.0.0-20261202025710-353c43753df2+dirty", "vcs.revision", "353c43753df2235b", "vcs.modified", "true"), "2026.12.02", "2026.12.02+353c43753df2-dirty"},
		{bi("(devel)"), "2026.12.02", "2026.12.02"},
	} {
		if got := versionFrom(tc.bi, true, tc.release); got != tc.want {
			t.Errorf("versionFrom(%+v): got %q, want %q", tc.bi, got, tc.want)
		}
	}
	if got := versionFrom(nil, false, ""); got != "unknown" {
		t.Errorf("no build info: got %q, want unknown", got)
	}
}
