package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// The crash-point tests trust MemFS to crash as it says; these tests pin
// what each power mode, StopAfter and Kill do.

// unsyncedFile returns a MemFS holding /d/f: size zero bytes, synced, then
// overwritten with 0xff and not synced again.
func unsyncedFile(t *testing.T, size int) *MemFS {
	t.Helper()
	m := NewMemFS()
	m.MkdirAll("/d", 0o755)
	f, err := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, size), 0)
	f.Sync()
	m.SyncDir("/d")
	f.WriteAt(bytes.Repeat([]byte{0xff}, size), 0)
	return m
}

// contents returns what /d/f holds on m, or nil if it does not exist.
func contents(t *testing.T, m *MemFS) []byte {
	t.Helper()
	f, err := m.OpenFile("/d/f", os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	n, _ := f.Size()
	b := make([]byte, n)
	f.ReadAt(b, 0)
	return b
}

// TestPowerModesGranularity: PowerReorder keeps each unsynced 512-byte
// sector whole, old or new, and over many cuts both keeps and loses some;
// PowerPages does the same with whole 4 KiB pages; PowerDirent keeps no
// unsynced byte.
func TestPowerModesGranularity(t *testing.T) {
	const size = 4 * PageSize
	for _, c := range []struct {
		mode  PowerMode
		block int // 0: nothing unsynced survives
	}{{PowerReorder, SectorSize}, {PowerPages, PageSize}, {PowerDirent, 0}} {
		t.Run(c.mode.String(), func(t *testing.T) {
			kept, lost := 0, 0
			for seed := range uint64(20) {
				b := contents(t, unsyncedFile(t, size).PowerCut(c.mode, rand.New(rand.NewPCG(seed, 1))))
				if len(b) != size {
					t.Fatalf("seed %d: %d bytes after the cut, want %d", seed, len(b), size)
				}
				if c.block == 0 {
					if !bytes.Equal(b, make([]byte, size)) {
						t.Fatalf("seed %d: unsynced bytes survived a %s cut", seed, c.mode)
					}
					continue
				}
				for at := 0; at < size; at += c.block {
					switch blk := b[at : at+c.block]; {
					case bytes.Equal(blk, bytes.Repeat([]byte{0xff}, c.block)):
						kept++
					case bytes.Equal(blk, make([]byte, c.block)):
						lost++
					default:
						t.Fatalf("seed %d: the %d-byte block at %d is part old, part new", seed, c.block, at)
					}
				}
			}
			if c.block != 0 && (kept == 0 || lost == 0) {
				t.Errorf("%d blocks kept and %d lost over 20 cuts; want some of each", kept, lost)
			}
		})
	}
}

// TestPowerDirentNames: under PowerDirent a name created, or removed, and
// not synced since persists in some cuts and not in others.
func TestPowerDirentNames(t *testing.T) {
	for _, removed := range []bool{false, true} {
		present, absent := 0, 0
		for seed := range uint64(20) {
			m := NewMemFS()
			m.MkdirAll("/d", 0o755)
			if removed {
				m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
				m.SyncDir("/d")
				m.Remove("/d/f")
			} else {
				m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
			}
			after := m.PowerCut(PowerDirent, rand.New(rand.NewPCG(seed, 2)))
			if names, _ := after.List("/d"); len(names) == 1 {
				present++
			} else {
				absent++
			}
		}
		if present == 0 || absent == 0 {
			t.Errorf("removed=%v: the unsynced name persisted in %d cuts and was lost in %d; want some of each", removed, present, absent)
		}
	}
}

// TestStopAfterRunsExactlyK: after StopAfter(k), exactly k operations
// change the filesystem, and the next one fails with ErrPowerLost.
func TestStopAfterRunsExactlyK(t *testing.T) {
	m := NewMemFS()
	m.MkdirAll("/d", 0o755)
	f, _ := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
	m.StopAfter(2)
	for i := range 2 {
		if _, err := f.WriteAt([]byte{byte('a' + i)}, int64(i)); err != nil {
			t.Fatalf("operation %d of 2: %v", i+1, err)
		}
	}
	if _, err := f.WriteAt([]byte("c"), 2); !errors.Is(err, ErrPowerLost) {
		t.Fatalf("operation 3 after StopAfter(2): got %v, want ErrPowerLost", err)
	}
	if got := contents(t, m.Kill()); string(got) != "ab" {
		t.Errorf("after the stop: %q, want %q", got, "ab")
	}
}

// TestKillKeepsUnsyncedUndurable: Kill keeps every byte the process
// wrote, but what was not synced is still not durable: a power cut after
// the kill loses it.
func TestKillKeepsUnsyncedUndurable(t *testing.T) {
	killed := unsyncedFile(t, 100).Kill()
	if got := contents(t, killed); !bytes.Equal(got, bytes.Repeat([]byte{0xff}, 100)) {
		t.Fatalf("after a kill: %x, want the unsynced bytes", got)
	}
	if got := contents(t, killed.PowerCut(PowerPrefix, nil)); !bytes.Equal(got, make([]byte, 100)) {
		t.Errorf("after a kill and a power cut: %x, want the synced zeros", got)
	}
}

// TestCopyLeavesTheOriginalRunning: a Copy is the filesystem at that
// point; the original goes on working and later changes do not reach the
// copy, nor does a power cut of the copy reach the original.
func TestCopyLeavesTheOriginalRunning(t *testing.T) {
	m := unsyncedFile(t, 8)
	c := m.Copy()
	f, err := m.OpenFile("/d/f", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("original after Copy: %v", err)
	}
	if _, err := f.WriteAt([]byte{1}, 0); err != nil {
		t.Fatalf("write to the original after Copy: %v", err)
	}
	if got := contents(t, c); !bytes.Equal(got, bytes.Repeat([]byte{0xff}, 8)) {
		t.Errorf("copy holds %v, want the 8 unsynced 0xff bytes of the moment it was taken", got)
	}
	if got := contents(t, c.PowerCut(PowerPrefix, nil)); !bytes.Equal(got, make([]byte, 8)) {
		t.Errorf("copy after a power cut holds %v, want the synced zeros", got)
	}
	if got := contents(t, m); got[0] != 1 {
		t.Errorf("original holds %v after the copy's power cut, want its own write", got)
	}
}

// TestTruncateThenWriteReadsZeros: after a Truncate shrinks a file, a
// write that extends it again leaves zeros (a hole) between the new end
// and the write, as a file does, never the bytes the Truncate cut off.
// (A store truncates its segment back to the last fdatasync after one
// fails, writeback.go; a buffer handed to the file after that must not
// bring the cut-off records back.)
func TestTruncateThenWriteReadsZeros(t *testing.T) {
	m := unsyncedFile(t, 4096) // 4096 bytes of 0xff, written
	f, err := m.OpenFile("/d/f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("tail"), 2000); err != nil {
		t.Fatal(err)
	}
	got := contents(t, m)
	want := append(append(bytes.Repeat([]byte{0xff}, 100), make([]byte, 1900)...), "tail"...)
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Errorf("after Truncate(100) and a write at 2000: %d bytes, first difference at offset %d (got %#x); want 100 bytes of 0xff, zeros to 2000, then the write", len(got), i, got[min(i, len(got)-1)])
	}
}

// TestPowerCutUnsyncedTruncate: a truncation not yet synced, by Truncate
// or by O_TRUNC, may or may not survive a power cut (ext4 can commit the
// inode's new size before any fdatasync); with no rng, or once synced,
// the outcome is fixed.
func TestPowerCutUnsyncedTruncate(t *testing.T) {
	const size = 1000
	for _, tc := range []struct {
		name   string
		shrink func(m *MemFS) File
		to     int
	}{
		{"Truncate", func(m *MemFS) File {
			f, _ := m.OpenFile("/d/f", os.O_RDWR, 0)
			f.Truncate(10)
			return f
		}, 10},
		{"O_TRUNC", func(m *MemFS) File {
			f, _ := m.OpenFile("/d/f", os.O_RDWR|os.O_TRUNC, 0)
			return f
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := unsyncedFile(t, size)
			f := tc.shrink(m)
			if got := len(contents(t, m.Copy().PowerCut(PowerPrefix, nil))); got != size {
				t.Errorf("no rng: %d bytes after the cut, want the synced %d", got, size)
			}
			sizes := map[int]int{}
			for seed := range uint64(40) {
				for _, mode := range []PowerMode{PowerPrefix, PowerReorder, PowerDirent} {
					sizes[len(contents(t, m.Copy().PowerCut(mode, rand.New(rand.NewPCG(seed, 1)))))]++
				}
			}
			if sizes[size] == 0 || sizes[tc.to] == 0 || len(sizes) != 2 {
				t.Errorf("sizes after 120 cuts %v, want both %d (kept) and %d (truncated), nothing else", sizes, size, tc.to)
			}
			f.Sync()
			if got := len(contents(t, m.Copy().PowerCut(PowerPrefix, rand.New(rand.NewPCG(1, 1))))); got != tc.to {
				t.Errorf("synced: %d bytes after the cut, want %d", got, tc.to)
			}
		})
	}
}

// TestPowerCutRepeats cuts the power twice with generators of one seed on
// copies of a filesystem of several files with unsynced data: the disks
// must be the same, whatever order a map would visit the files in.
func TestPowerCutRepeats(t *testing.T) {
	m := NewMemFS()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		f, err := m.OpenFile(fmt.Sprintf("/d/f%02d", i), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt(bytes.Repeat([]byte{byte('a' + i)}, 512), 0)
		f.Sync()
		f.WriteAt(bytes.Repeat([]byte{byte('A' + i)}, 3000), 512)
	}
	m.SyncDir("/d")
	for _, mode := range []PowerMode{PowerPrefix, PowerReorder} {
		want := memContents(t, m.Copy().PowerCut(mode, rand.New(rand.NewPCG(5, 6))))
		for range 5 {
			if got := memContents(t, m.Copy().PowerCut(mode, rand.New(rand.NewPCG(5, 6)))); got != want {
				t.Fatalf("%v: two cuts of one seed left\n%s\nand\n%s", mode, got, want)
			}
		}
	}
}

// memContents lists the files of m's /d with their sizes and contents.
func memContents(t *testing.T, m *MemFS) string {
	t.Helper()
	names, err := m.List("/d")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, name := range names {
		f, err := m.OpenFile("/d/"+name, os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := f.Size()
		data := make([]byte, size)
		f.ReadAt(data, 0)
		f.Close()
		fmt.Fprintf(&b, "%s %d %q\n", name, size, data)
	}
	return b.String()
}

// TestPowerImage checks that PowerImage leaves what a power cut of a copy
// leaves, and the filesystem running.
func TestPowerImage(t *testing.T) {
	m := NewMemFS()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte{'a'}, 700), 0)
	f.Sync()
	m.SyncDir("/d")
	f.WriteAt(bytes.Repeat([]byte{'b'}, 3000), 700)
	for _, mode := range []PowerMode{PowerPrefix, PowerReorder, PowerDirent} {
		want := memContents(t, m.Copy().PowerCut(mode, rand.New(rand.NewPCG(1, 2))))
		if got := memContents(t, m.PowerImage(mode, rand.New(rand.NewPCG(1, 2)))); got != want {
			t.Errorf("%v: PowerImage left\n%s\nwant\n%s", mode, got, want)
		}
	}
	if _, err := f.WriteAt([]byte("c"), 0); err != nil {
		t.Errorf("a write after PowerImage: %v, want the filesystem running", err)
	}
}
