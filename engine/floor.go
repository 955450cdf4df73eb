package engine

import (
	"fmt"
	"os"
	"path/filepath"
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
	// another, in id order; Build the time it took to check the bytes
	// read (their checksums, as Open does) and build the hash index
	// (keyindex.go) from them, in memory, sized in advance as Open sizes
	// it. Floor = Read + Build.
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
	files := make([][]byte, len(ids))
	start := time.Now()
	for i, id := range ids {
		b, err := os.ReadFile(filepath.Join(dir, hintName(id)))
		if err != nil {
			return OpenFloor{}, fmt.Errorf("engine: open floor: %w", err)
		}
		files[i] = b
		f.HintBytes += int64(len(b))
	}
	f.Read = time.Since(start)

	start = time.Now()
	hints := make([]hintFile, len(files))
	total := 0
	for i, b := range files {
		h, err := parseHint(b)
		if err != nil {
			return OpenFloor{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, hintName(ids[i]), err)
		}
		hints[i] = h
		total += h.count
	}
	x := newKeyIndex(total)
	for i, h := range hints {
		id := ids[i]
		h.eachHinted(x, func(e *hintEntry, hash uint64) {
			if e.kind == kindPut {
				x.putHashed(e.key, hash, entry{seg: id, off: e.off, size: e.size})
			} else {
				x.removeHashed(e.key, hash)
			}
		})
	}
	f.Build = time.Since(start)
	f.Keys = x.len()
	return f, nil
}
