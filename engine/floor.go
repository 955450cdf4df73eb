package engine

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"
)

// The floor of a cold Open.
//
// Open of a store whose segments all have valid hints reads every hint
// file and builds the index from their entries; nothing it does can take
// less than those two things done with nothing else. MeasureOpenFloor
// does just them, so that a benchmark can put the time Open took beside
// the least it could have taken on the same machine at the same moment:
// a ratio near 1 says Open adds little of its own (checks, bookkeeping,
// opening the segments), a large one that it does.

// OpenFloor is what MeasureOpenFloor measured.
type OpenFloor struct {
	// Keys is how many keys the index built from the hints holds;
	// HintBytes the size of the hint files read.
	Keys      int
	HintBytes int64
	// Read is the time it took to read every hint file whole, one after
	// another, in id order (and their trailers first, whose entry counts
	// size the index, as Open does); Build the time it took to check the
	// bytes read (their checksums, as Open does) and build the hash
	// index (keyindex.go) from them, in memory, sized in advance as Open
	// sizes it and on as many goroutines as Open builds it on
	// (buildHint, one per core). Each file is read and then built from
	// before the next is read, into one buffer that every file reuses,
	// so the floor touches no more memory than Open does. Floor =
	// Read + Build: nothing overlaps, where Open reads the next file
	// while it builds from this one.
	Read, Build time.Duration
}

// Floor returns Read + Build.
func (f OpenFloor) Floor() time.Duration { return f.Read + f.Build }

// MeasureOpenFloor measures the floor of a cold Open of the closed store
// in dir, on the OS filesystem: it reads its hint files (through the page
// cache: a caller measuring a cold open drops their pages first, as it
// did before the Open) and then builds the index from them. A hint file
// that is damaged is an error wrapping ErrCorrupt: the floor of a store
// whose Open scans segments is not this one. It never changes the store.
func MeasureOpenFloor(dir string) (OpenFloor, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return OpenFloor{}, fmt.Errorf("engine: open floor: %w", err)
	}
	var ids []uint32
	for _, n := range names {
		if id, ok := parseID(n.Name(), hintExt); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)

	var f OpenFloor
	start := time.Now()
	total := 0
	for _, id := range ids {
		n, err := hintFileCount(filepath.Join(dir, hintName(id)))
		if err != nil {
			return OpenFloor{}, fmt.Errorf("engine: open floor: %w", err)
		}
		total += n
	}
	f.Read = time.Since(start)

	x := newKeyIndex(total)
	var buf []byte
	for _, id := range ids {
		start := time.Now()
		b, err := readFileInto(filepath.Join(dir, hintName(id)), buf)
		if err != nil {
			return OpenFloor{}, fmt.Errorf("engine: open floor: %w", err)
		}
		buf = b
		f.HintBytes += int64(len(b))
		f.Read += time.Since(start)

		start = time.Now()
		h, err := parseHint(b)
		if err != nil {
			return OpenFloor{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, hintName(id), err)
		}
		buildHint(x, h, id, runtime.GOMAXPROCS(0))
		f.Build += time.Since(start)
	}
	f.Keys = x.len()
	return f, nil
}

// hintFileCount returns the entry count in the trailer of the hint file
// at path, as Open reads it to size the index.
func hintFileCount(path string) (int, error) {
	fl, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer fl.Close()
	st, err := fl.Stat()
	if err != nil {
		return 0, err
	}
	var t [hintTrailer]byte
	if st.Size() < int64(len(hintMagic)+hintTrailer) {
		return 0, nil // parseHint refuses it below
	}
	if _, err := fl.ReadAt(t[:], st.Size()-hintTrailer); err != nil {
		return 0, err
	}
	return int(binary.LittleEndian.Uint32(t[8:12])), nil
}

// readFileInto returns the contents of the file at path, read into buf
// if it is large enough, as Open's hint reader reuses its buffers.
func readFileInto(path string, buf []byte) ([]byte, error) {
	fl, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fl.Close()
	st, err := fl.Stat()
	if err != nil {
		return nil, err
	}
	if int64(cap(buf)) < st.Size() {
		buf = newBuffer(int(st.Size()))
	}
	buf = buf[:st.Size()]
	if _, err := io.ReadFull(fl, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
