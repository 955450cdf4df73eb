package grader

import (
	"strings"
	"testing"
)

// The catalogue: stores a student could write for the crash exercises,
// wrong ones each failed with a hint that names its mistake, and right
// ones, written differently from the model solutions, passed. Each runs
// on a workload of its own seed, so that together they cover several.

func init() {
	// Gradings in tests draw workload 7 unless the code names another.
	newSeed = func() uint64 { return 7 }
}

// Pieces of the model solutions the variants change.
const (
	ackSync = `	if err := s.log.Sync(); err != nil {
		// After a failed fdatasync Linux marks the pages clean: a retry
		// succeeds without writing them. The error must stick.
		s.err = err
		return err
	}
`
	ackWrite = `	if _, err := s.log.Write(encode(key, value)); err != nil {
		s.err = err
		return err
	}
`
	ackSticky = `	if s.err != nil {
		return s.err
	}
`
	ackIndex    = "\ts.index[key] = value\n\treturn nil\n}"
	openSyncDir = `		// The new name is durable only once the directory is synced.
		if err := fs.SyncDir(); err != nil {
			return nil, err
		}
`
	openTruncate = `		if err := s.log.Truncate(int64(good)); err != nil {
			return nil, err
		}
`
	openAppendLog = `	if s.log, err = fs.OpenAppend("log"); err != nil {
		return nil, err
	}
`
	// putSync is the end of Put the older tests change.
	putSync = ackSync + "\ts.index[key] = value"
)

// variant returns src with each pair old, new of edits replaced, failing
// t if an old is not in it exactly once.
func variant(t *testing.T, src string, edits ...string) string {
	t.Helper()
	for i := 0; i+1 < len(edits); i += 2 {
		src = broken(t, src, edits[i], edits[i+1])
	}
	for _, pkg := range []string{"fmt", "sort"} {
		if strings.Contains(src, pkg+".") && !strings.Contains(src, "\t\""+pkg+"\"\n") {
			src = broken(t, src, "import (\n", "import (\n\t\""+pkg+"\"\n")
		}
	}
	return src
}

// seeded is src graded on workload seed.
func seeded(src string, seed int) string {
	return src + "\n// kvlab:seed " + itoa(seed) + "\n"
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// wrongStore is a store that must fail: the row it fails first and words
// of that row's hint.
type wrongStore struct {
	name     string
	exercise string
	src      func(t *testing.T) string
	row      string // the first failing row's input prefix
	hint     string
}

func wrongStores() []wrongStore {
	ack := durableAckExercise.Solution
	torn := tornTailExercise.Solution
	rep := atomicReplaceExercise.Solution
	return []wrongStore{
		{"no fdatasync", "durable-ack", func(t *testing.T) string { return variant(t, ack, ackSync, "") },
			"power cut after each operation, prefix", "you acknowledged before its fdatasync"},
		{"fdatasync before the write", "durable-ack", func(t *testing.T) string { return variant(t, ack, ackWrite+ackSync, ackSync+ackWrite) },
			"power cut after each operation, prefix", "you acknowledged before its fdatasync"},
		{"no directory fsync after Create", "durable-ack", func(t *testing.T) string { return variant(t, ack, openSyncDir, "") },
			"power cut after each operation, prefix", "log was created at operation 1 but the directory was never fsynced"},
		{"lazy create without a directory fsync", "durable-ack", func(t *testing.T) string {
			return variant(t, ack, "\t\tif s.log, err = fs.Create(\"log\"); err != nil {\n\t\t\treturn nil, err\n\t\t}\n"+openSyncDir, "",
				ackSticky, ackSticky+"\tif s.log == nil {\n\t\tvar err error\n\t\tif s.log, err = s.fs.Create(\"log\"); err != nil {\n\t\t\treturn err\n\t\t}\n\t}\n",
				"\terr   error", "\terr   error\n\tfs    kvfs.FS",
				"s := &Store{index: map[string]string{}}", "s := &Store{index: map[string]string{}, fs: fs}")
		}, "power cut after each operation, prefix", "the directory was never fsynced"},
		{"tailored: fdatasync only while the log is under 4 KiB", "durable-ack", func(t *testing.T) string {
			return variant(t, ack, ackSync, "\tif size, _ := s.log.Size(); size < 4096 {\n\t"+strings.ReplaceAll(ackSync, "\n\t", "\n\t\t")+"\t}\n")
		}, "power cut after each operation, prefix", "you acknowledged before its fdatasync"},
		{"tailored: fdatasync only keys shaped like k0..k9", "durable-ack", func(t *testing.T) string {
			return variant(t, ack, ackSync, "\tif len(key) == 2 && key[0] == 'k' {\n\t"+strings.ReplaceAll(ackSync, "\n\t", "\n\t\t")+"\t}\n")
		}, "power cut after each operation, prefix", "you acknowledged before its fdatasync"},
		{"Get treats an empty value as missing", "durable-ack", func(t *testing.T) string {
			return variant(t, ack, "\tv, ok := s.index[key]\n\treturn v, ok", "\tv := s.index[key]\n\treturn v, v != \"\"")
		}, "reopen after the Puts", "an empty value"},
		{"Open empties the log", "durable-ack", func(t *testing.T) string {
			return variant(t, ack, "\tif kvfs.IsNotExist(err) {", "\tif true {")
		}, "reopen after the Puts", "Open must read back every record"},
		{"Open refuses a torn tail", "durable-ack", func(t *testing.T) string {
			return variant(t, ack, openTruncate, "\t\treturn nil, fmt.Errorf(\"log: torn record at %d\", good)\n")
		}, "power cut after each operation, prefix", "Open must accept whatever a power cut leaves"},
		{"Open re-creates the log and writes the records back", "durable-ack", func(t *testing.T) string {
			return variant(t, ack, openAppendLog, "\tif s.log, err = fs.Create(\"log\"); err != nil {\n\t\treturn nil, err\n\t}\n\tif _, err := s.log.Write(data[:good]); err != nil {\n\t\treturn nil, err\n\t}\n\tif err := s.log.Sync(); err != nil {\n\t\treturn nil, err\n\t}\n",
				"\tif good < len(data) {\n\t\t// A torn tail: cut it off, so new records follow the last good one.\n"+openTruncate+"\t}\n", "")
		}, "reopen after the Puts", "your Open re-creates log"},
		{"Open truncates the log to 0 and appends the records back", "durable-ack", func(t *testing.T) string {
			return variant(t, ack, "\tif good < len(data) {\n\t\t// A torn tail: cut it off, so new records follow the last good one.\n"+openTruncate+"\t}\n",
				"\tif err := s.log.Truncate(0); err != nil {\n\t\treturn nil, err\n\t}\n\tif _, err := s.log.Write(data[:good]); err != nil {\n\t\treturn nil, err\n\t}\n\tif err := s.log.Sync(); err != nil {\n\t\treturn nil, err\n\t}\n")
		}, "reopen after the Puts", "truncates log to 0 bytes"},
		{"Put writes the whole map over the file in place", "durable-ack", func(t *testing.T) string {
			return variant(t, ack, ackWrite+ackSync+ackIndex, `	old, had := s.index[key]
	s.index[key] = value
	var buf []byte
	for k, v := range s.index {
		buf = append(buf, encode(k, v)...)
	}
	if _, err := s.log.WriteAt(buf, 0); err != nil {
		return err
	}
	if err := s.log.Truncate(int64(len(buf))); err != nil {
		return err
	}
	if err := s.log.Sync(); err != nil {
		if had {
			s.index[key] = old
		} else {
			delete(s.index, key)
		}
		s.err = err
		return err
	}
	return nil
}`)
		}, "power cut after each operation, prefix", "writes over bytes of log that an fdatasync had made durable"},
		{"the Sync error is ignored", "durable-ack", func(t *testing.T) string { return variant(t, ack, ackSync, "\ts.log.Sync()\n") },
			"an fdatasync fails with EIO", "check the error Sync returns"},
		{"the Sync error does not stick", "durable-ack", func(t *testing.T) string { return variant(t, ack, ackSticky, "") },
			"an fdatasync fails with EIO", "Keep the first Sync error in the Store and fail every later Put"},
		{"the index is updated before the Sync", "durable-ack", func(t *testing.T) string {
			return variant(t, ack, ackIndex, "\treturn nil\n}", ackSticky, ackSticky+"\ts.index[key] = value\n")
		}, "an fdatasync fails with EIO", "update the index only after Sync returned without an error"},

		{"no CRC check", "torn-tail", func(t *testing.T) string {
			return variant(t, torn, "\tif crc32.Checksum(data[4:end], table) != c {\n\t\treturn 0\n\t}\n", "\t_ = c\n")
		}, "power cut after each operation, reorder", "check each record's"},
		{"any bad record is an error", "torn-tail", func(t *testing.T) string {
			return variant(t, torn, "\t\t\treturn off, nil // a torn tail\n", "\t\t\treturn off, errDamaged\n")
		}, "power cut after each operation, prefix", "leaves a torn tail, which is no error"},
		{"any bad record ends the log", "torn-tail", func(t *testing.T) string {
			return variant(t, torn, "\t\t\t\t\treturn off, fmt.Errorf(\"%w: offset %d, intact record at %d\", errDamaged, off, later)\n", "\t\t\t\t\tbreak\n")
		}, "one byte of record", "dropping them silently loses acknowledged writes"},
		{"a bad record with bytes after it is damage (false under reorder)", "torn-tail", func(t *testing.T) string {
			return variant(t, torn, `			for later := off + 1; later+8 <= len(data); later++ {
				// Cheap tests first: most offsets hold no record. An
				// all-zero header (a sector the disk never wrote) is
				// never one, as the CRC of an empty record is not 0.
				n := (int(data[later+4]) | int(data[later+5])<<8) + (int(data[later+6]) | int(data[later+7])<<8)
				if later+8+n > len(data) || n == 0 && data[later]|data[later+1]|data[later+2]|data[later+3] == 0 {
					continue
				}
				if intact(data[later:]) > 0 {
					return off, fmt.Errorf("%w: offset %d, intact record at %d", errDamaged, off, later)
				}
			}
`, `			if off+8 <= len(data) {
				end := off + 8 + (int(data[off+4]) | int(data[off+5])<<8) + (int(data[off+6]) | int(data[off+7])<<8)
				if end < len(data) {
					return off, errDamaged
				}
			}
`)
		}, "power cut after each operation, reorder", "those bytes prove nothing"},
		{"a bad middle record is skipped", "torn-tail", func(t *testing.T) string {
			return variant(t, torn, `				if intact(data[later:]) > 0 {
					return off, fmt.Errorf("%w: offset %d, intact record at %d", errDamaged, off, later)
				}`, `				if intact(data[later:]) > 0 {
					off = later
					break
				}`, "\t\t\treturn off, nil // a torn tail\n", "\t\t\tif intact(data[off:]) == 0 {\n\t\t\t\treturn off, nil // a torn tail\n\t\t\t}\n\t\t\tcontinue\n")
		}, "one byte of record", "your scan skips the damaged record"},
		{"no truncation of the tail", "torn-tail", func(t *testing.T) string {
			return variant(t, torn, "\tif good < len(data) {\n\t\t// A torn tail: cut it off, so new records follow the last good one.\n"+openTruncate+"\t}\n", "")
		}, "power cut after each operation, prefix", "Open must truncate the file at the end of the last good record"},
		{"a short header is read anyway", "torn-tail", func(t *testing.T) string {
			return variant(t, torn, "\tif len(data) < 8 {\n\t\treturn 0\n\t}\n", "")
		}, "power cut after each operation, prefix", "leaves a torn tail, which is no error"},

		{"Save moves the old file aside before the rename", "atomic-replace", func(t *testing.T) string {
			return variant(t, rep, replaceRename, "\tif err := fs.Rename(name, name+\".old\"); err != nil {\n\t\treturn err\n\t}\n"+replaceRename)
		}, "power cut after each operation, dirent", "you moved config aside"},
		{"Save writes in place", "atomic-replace", func(t *testing.T) string { return inPlace },
			"power cut after each operation", "you wrote config in place"},
		{"Save renames before the fdatasync", "atomic-replace", func(t *testing.T) string {
			return variant(t, rep, replaceSync+replaceClose+replaceRename, replaceRename+replaceSync+replaceClose)
		}, "power cut after each operation, dirent", "you renamed before the temporary file's fdatasync"},
		{"Save without a directory fsync", "atomic-replace", func(t *testing.T) string { return variant(t, rep, replaceSyncDir, "\treturn nil\n") },
			"power cut after each operation, dirent", "call SyncDir after Rename"},
	}
}

// TestCatalogueWrongStores: every wrong store fails, first at the row its
// mistake breaks, with a hint naming the mistake.
func TestCatalogueWrongStores(t *testing.T) {
	stores := wrongStores()
	if len(stores) < 20 {
		t.Fatalf("%d wrong stores, want at least 20", len(stores))
	}
	for i, w := range stores {
		t.Run(w.name, func(t *testing.T) {
			r := mustRun(t, w.exercise, seeded(w.src(t), 3+i%5))
			if r.Passed {
				t.Fatal("passed; want a failure")
			}
			var first *Case
			for j := range r.Cases {
				if !r.Cases[j].Pass {
					first = &r.Cases[j]
					break
				}
			}
			if first == nil || !strings.HasPrefix(first.Input, w.row) || !strings.Contains(first.Hint, w.hint) {
				t.Errorf("first failing row %+v\nwant row %q with a hint containing %q", first, w.row, w.hint)
			}
		})
	}
}

// The sync-mark store (a right store): after each fdatasync of the log
// it appends a mark, the log's length and a CRC, to the file "mark" and
// syncs it; Open reads the log only as far as the last intact mark, so
// what a cut left after it (synced or not, never acknowledged) is cut off.
const (
	syncMarkOpen = `	marks, err := fs.ReadFile("mark")
	switch {
	case kvfs.IsNotExist(err):
		if s.mark, err = fs.Create("mark"); err != nil {
			return nil, err
		}
		if err := fs.SyncDir(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if s.mark, err = fs.OpenAppend("mark"); err != nil {
			return nil, err
		}
	}
`
	syncMarkPut = `	end, err := s.log.Size()
	if err != nil {
		s.err = err
		return err
	}
	if _, err := s.mark.Write(markRecord(end)); err != nil {
		s.err = err
		return err
	}
	if err := s.mark.Sync(); err != nil {
		s.err = err
		return err
	}
`
	syncMarkCodec = `
// markRecord is a mark: n in 8 bytes, little-endian, and their CRC.
func markRecord(n int64) []byte {
	b := make([]byte, 12)
	for i := 0; i < 8; i++ {
		b[i] = byte(n >> (8 * i))
	}
	c := crc32.Checksum(b[:8], table)
	for i := 0; i < 4; i++ {
		b[8+i] = byte(c >> (8 * i))
	}
	return b
}

// lastMark returns the length the last intact mark records, 0 for none.
// Only the last mark can be torn: each was synced before the next.
func lastMark(marks []byte) int {
	n := 0
	for len(marks) >= 12 {
		var v int64
		var c uint32
		for i := 0; i < 8; i++ {
			v |= int64(marks[i]) << (8 * i)
		}
		for i := 0; i < 4; i++ {
			c |= uint32(marks[8+i]) << (8 * i)
		}
		if crc32.Checksum(marks[:8], table) != c {
			break
		}
		n = int(v)
		marks = marks[12:]
	}
	return n
}
`
)

// rightStores are stores written differently from the model solutions
// that keep every promise: each must pass.
func rightStores(t *testing.T) map[string][2]string {
	ack := durableAckExercise.Solution
	torn := tornTailExercise.Solution
	return map[string][2]string{
		"durable-ack solution": {"durable-ack", ack},
		"torn-tail solution (an intact record after a bad one vouches for it)": {"torn-tail", torn},
		"atomic-replace solution": {"atomic-replace", atomicReplaceExercise.Solution},
		"lazy create: the log is created, its name synced, in the first Put": {"durable-ack", variant(t, ack,
			"\t\tif s.log, err = fs.Create(\"log\"); err != nil {\n\t\t\treturn nil, err\n\t\t}\n"+openSyncDir, "",
			ackSticky, ackSticky+"\tif s.log == nil {\n\t\tvar err error\n\t\tif s.log, err = s.fs.Create(\"log\"); err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif err := s.fs.SyncDir(); err != nil {\n\t\t\treturn err\n\t\t}\n\t}\n",
			"\terr   error", "\terr   error\n\tfs    kvfs.FS",
			"s := &Store{index: map[string]string{}}", "s := &Store{index: map[string]string{}, fs: fs}")},
		"extra syncs: two fdatasyncs and a directory fsync per Put": {"durable-ack", variant(t, ack,
			ackSync, ackSync+ackSync+"\tif err := s.fs.SyncDir(); err != nil {\n\t\treturn err\n\t}\n",
			"\terr   error", "\terr   error\n\tfs    kvfs.FS",
			"s := &Store{index: map[string]string{}}", "s := &Store{index: map[string]string{}, fs: fs}")},
		"a second handle: each Put opens the log, writes, syncs and closes": {"durable-ack", variant(t, ack,
			ackWrite+ackSync, "\tf, err := s.fs.OpenAppend(\"log\")\n\tif err != nil {\n\t\ts.err = err\n\t\treturn err\n\t}\n\tdefer f.Close()\n\tif _, err := f.Write(encode(key, value)); err != nil {\n\t\ts.err = err\n\t\treturn err\n\t}\n\tif err := f.Sync(); err != nil {\n\t\ts.err = err\n\t\treturn err\n\t}\n",
			"\terr   error", "\terr   error\n\tfs    kvfs.FS",
			"s := &Store{index: map[string]string{}}", "s := &Store{index: map[string]string{}, fs: fs}")},
		"WriteAt at an offset the store keeps": {"durable-ack", variant(t, ack,
			ackWrite, "\trec := encode(key, value)\n\tif _, err := s.log.WriteAt(rec, s.end); err != nil {\n\t\ts.err = err\n\t\treturn err\n\t}\n",
			ackIndex, "\ts.end += int64(len(rec))\n"+ackIndex,
			"\terr   error", "\terr   error\n\tend   int64",
			"\treturn s, nil\n}\n\n// Put", "\ts.end = int64(good)\n\treturn s, nil\n}\n\n// Put")},
		"after a failed Sync, cut the failed record off and go on": {"durable-ack", variant(t, ack,
			ackSync, "\tif err := s.log.Sync(); err != nil {\n\t\tif terr := s.log.Truncate(s.good); terr != nil {\n\t\t\ts.err = terr\n\t\t}\n\t\treturn err\n\t}\n\ts.good, _ = s.log.Size()\n",
			"\terr   error", "\terr   error\n\tgood  int64",
			"\treturn s, nil\n}\n\n// Put", "\ts.good = int64(good)\n\treturn s, nil\n}\n\n// Put")},
		"Open compacts into a new file, synced, renamed over the log, directory synced": {"durable-ack", variant(t, ack,
			openAppendLog+"\tif good < len(data) {\n\t\t// A torn tail: cut it off, so new records follow the last good one.\n"+openTruncate+"\t}\n",
			"\ttmp, err := fs.Create(\"log.tmp\")\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\tif _, err := tmp.Write(data[:good]); err != nil {\n\t\treturn nil, err\n\t}\n\tif err := tmp.Sync(); err != nil {\n\t\treturn nil, err\n\t}\n\ttmp.Close()\n\tif err := fs.Rename(\"log.tmp\", \"log\"); err != nil {\n\t\treturn nil, err\n\t}\n\tif err := fs.SyncDir(); err != nil {\n\t\treturn nil, err\n\t}\n"+openAppendLog)},
		"sync marks: a second file records the log's length after each fdatasync, and Open reads the log only that far": {"durable-ack", variant(t, ack,
			"\terr   error", "\terr   error\n\tmark  kvfs.File // one mark per Put: the log's length once its fdatasync returned",
			openSyncDir, "\t\tif s.mark, err = fs.Create(\"mark\"); err != nil {\n\t\t\treturn nil, err\n\t\t}\n"+openSyncDir,
			"\tgood := decode(data,", syncMarkOpen+"\tgood := decode(data[:min(lastMark(marks), len(data))],",
			ackSync, ackSync+syncMarkPut,
			"\treturn off\n}\n", "\treturn off\n}\n"+syncMarkCodec)},
		"torn-tail: Open syncs the truncation at once": {"torn-tail", variant(t, torn,
			openTruncate, openTruncate+"\t\tif err := s.log.Sync(); err != nil {\n\t\t\treturn nil, err\n\t\t}\n")},
	}
}

// TestCatalogueRightStores: no correct store is failed, on several
// workloads each.
func TestCatalogueRightStores(t *testing.T) {
	stores := rightStores(t)
	if len(stores) < 8 {
		t.Fatalf("%d right stores, want at least 8", len(stores))
	}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			for _, seed := range []int{1, 2} {
				r := mustRun(t, s[0], seeded(s[1], seed))
				if !r.Passed {
					t.Errorf("seed %d: failed: %+v", seed, r.Cases)
				}
			}
		})
	}
}
