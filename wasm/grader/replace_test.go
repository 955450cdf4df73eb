package grader

import (
	"strings"
	"testing"
)

const (
	replaceSync = `	// The data must be durable before the rename can be.
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
`
	replaceClose = `	if err := f.Close(); err != nil {
		return err
	}
`
	replaceRename = `	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
`
	replaceSyncDir = `	// The rename is durable once the directory is.
	return fs.SyncDir()
`
)

// inPlace overwrites the file itself and syncs it.
const inPlace = `package main

import "kvfs"

// Save overwrites name in place.
func Save(fs kvfs.FS, name string, data []byte) error {
	f, err := fs.Create(name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}
`

// TestAtomicReplaceBrokenVersions: each plausible wrong Save fails a
// power-cut row with the cut, what config held, and the rule.
func TestAtomicReplaceBrokenVersions(t *testing.T) {
	sol := atomicReplaceExercise.Solution
	checkBroken(t, "atomic-replace", sol, []brokenCase{
		{"in place, synced", sol, inPlace, "power cut after each operation, reorder",
			"config holds nothing (an empty file)", "you wrote config in place"},
		{"no fdatasync of the temporary file", replaceSync, "", "power cut after each operation, dirent",
			"config holds nothing (an empty file)", "you renamed before the temporary file's fdatasync"},
		{"rename before the fdatasync", replaceSync + replaceClose + replaceRename, replaceRename + replaceSync + replaceClose, "power cut after each operation, dirent",
			"config holds nothing (an empty file)", "you renamed before the temporary file's fdatasync"},
		{"no directory fsync", replaceSyncDir, "	return nil\n", "power cut after each operation, dirent",
			"config holds version 0, but the Save of version 1 had returned at operation 4", "call SyncDir after Rename"},
		{"directory fsync before the rename", replaceRename + replaceSyncDir, "	if err := fs.SyncDir(); err != nil {\n\t\treturn err\n\t}\n\treturn fs.Rename(tmp, name)\n",
			"power cut after each operation, dirent", "config holds version 0, but the Save of version 1 had returned at operation 5", "call SyncDir after Rename"},
		{"remove, then rename", replaceRename, "	if err := fs.Remove(name); err != nil {\n\t\treturn err\n\t}\n" + replaceRename, "power cut after each operation, dirent",
			"config is gone", "you removed config before the rename"},
	})
}

// TestAtomicReplaceStub: the starting code writes in place and syncs
// nothing; the page says so at the first cut, after its Create.
func TestAtomicReplaceStub(t *testing.T) {
	r := mustRun(t, "atomic-replace", atomicReplaceExercise.Stub)
	c := rowOf(t, r, "power cut after each operation, dirent")
	// Create empties config, and an unsynced truncation may reach the
	// disk (ext4 commits the new size in its journal): the zero-length
	// file of a replace done in place.
	want := "power cut after operation 1 (create config): config holds nothing (an empty file)"
	if c.Pass || c.Got != want || !strings.Contains(c.Hint, "in place") {
		t.Errorf("stub row got %q, hint %q; want got %q and the in-place rule", c.Got, c.Hint, want)
	}
	if r.Passed {
		t.Error("stub passed")
	}
}

func TestAtomicReplaceSignature(t *testing.T) {
	r := Run("atomic-replace", "package main\n\nimport \"kvfs\"\n\nfunc Save(fs kvfs.FS, data []byte) error { return nil }\n")
	if r.Error == nil || !strings.Contains(r.Error.Msg, "the exercise needs "+saveSig) {
		t.Errorf("error %+v, want one naming %s", r.Error, saveSig)
	}
}
