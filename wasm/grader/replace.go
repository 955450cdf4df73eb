package grader

import (
	"fmt"
	"reflect"
	"strings"

	"kvlab/engine/vfs"
	"kvlab/gohost"
	"kvlab/gohost/kvfs"
)

// The exercise "atomic-replace": Save replaces a file so that a power cut
// at any point leaves the old contents or the new, and once Save returned,
// the new.

const saveSig = "func Save(fs kvfs.FS, name string, data []byte) error"

// replaceName is the file the grader has Save replace.
const replaceName = "config"

// replaceVersions are what config holds: version 0, there before the
// workload, then the three versions Save writes in turn. Each spans
// several 512-byte sectors, so that a power cut in reorder mode can mix
// old sectors with new ones.
var replaceVersions = func() []string {
	var vs []string
	for v := range 4 {
		var b strings.Builder
		for line := 0; b.Len() < 1200+100*v; line++ {
			fmt.Fprintf(&b, "version %d, line %02d: hint for the segment files\n", v, line)
		}
		vs = append(vs, b.String())
	}
	return vs
}()

const replaceSolution = `package main

import "kvfs"

// Save replaces the file name with data, atomically and durably.
func Save(fs kvfs.FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	// The data must be durable before the rename can be.
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	// The rename is durable once the directory is.
	return fs.SyncDir()
}
`

const replaceStub = `package main

import "kvfs"

// Save replaces the file name with data, atomically and durably.
func Save(fs kvfs.FS, name string, data []byte) error {
	// TODO: a power cut at any point must leave the old contents or the
	// new, never a mix, an empty file or no file; once Save returns, the
	// new.
	f, err := fs.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(data)
	return err
}
`

var atomicReplaceExercise = &Exercise{
	Name:  "atomic-replace",
	Title: "Replace a file atomically",
	Instructions: `Implement ` + "`" + saveSig + "`" + `: replace the file ` + "`name`" + ` with ` + "`data`" + ` so that a power cut at any point leaves either the old contents or the new (never a mix, an empty file or no file), and once ` + "`Save`" + ` returned, the new.

The ` + "`kvfs.FS`" + ` is the one of the previous exercises: ` + "`Create`, `Rename`, `Remove`, `SyncDir`, `ReadFile`" + `, and a file's ` + "`Write`, `Sync`" + ` (fdatasync), ` + "`Close`" + `. A rename replaces a file atomically, but neither it nor a new file's name is durable until ` + "`SyncDir`" + `, and a renamed file holds only what was synced before.

The grader starts from a durable ` + "`config`" + ` of about 1.2 KB, calls ` + "`Save`" + ` three times with new versions, and cuts the power after each filesystem operation in two modes: ` + "`dirent`" + ` (each name changed since the last ` + "`SyncDir`" + ` may or may not survive, with only synced data) and ` + "`reorder`" + ` (unsynced names are lost, any 512-byte sectors of unsynced data survive). After each cut ` + "`config`" + ` must hold a whole version: the last one whose ` + "`Save`" + ` had returned, or one being saved. A leftover temporary file does not matter.`,
	Stub:     replaceStub,
	Solution: replaceSolution,
	LimitMs:  crashLimitMs,
	grade:    gradeAtomicReplace,
	prelude:  gohost.Prelude{Lines: true},
}

// replaceModes are the power-cut modes atomic-replace is graded under.
var replaceModes = []vfs.PowerMode{vfs.PowerDirent, vfs.PowerReorder}

func gradeAtomicReplace(p *program) Result {
	fn, ce := p.Function("Save", (func(kvfs.FS, string, []byte) error)(nil), saveSig)
	if ce != nil {
		return Result{Error: ce}
	}
	rec, err := recordSaves(fn)
	work := Case{
		Input: fmt.Sprintf("Save %s three times, no power cut", replaceName),
		Want:  "no errors, then the last version",
		Got:   fmt.Sprintf("no errors, %d operations, the last version", len(rec.ops)),
		Pass:  err == nil,
	}
	if err == nil {
		if f := checkConfig(rec, cut{c: len(rec.ops)}, rec.final.Kill()); f != nil {
			work.Got, work.Pass = f.what, false
			work.Hint = "without a power cut, the file must hold what the last Save wrote"
		}
	} else {
		work.Got = err.Error()
	}
	r := Result{Cases: []Case{work}}
	if !work.Pass {
		return r
	}
	for _, mode := range replaceModes {
		c := Case{
			Input: fmt.Sprintf("power cut after each operation, %s mode", mode),
			Want:  "a whole version: the last saved, or the one being saved",
		}
		f, points := cutAll(rec, mode, replaceSeeds, func(k cut, m *vfs.MemFS) *cutFailure { return checkConfig(rec, k, m) })
		if f == nil {
			c.Got = fmt.Sprintf("a whole version, at %d cut points × %d choices", points, len(replaceSeeds))
			c.Pass = true
		} else {
			c.Got = f.message(rec)
			var blame int
			c.Hint, blame = replaceRule(rec, f)
			c.Timeline = rec.timeline(f, blame)
			if len(r.Notes) == 0 {
				r.Notes = append(r.Notes, rec.traceNote(f.c))
			}
		}
		r.Cases = append(r.Cases, c)
	}
	r.Passed = allPass(r.Cases)
	return r
}

// recordSaves writes version 0 of config durably, then calls the
// student's Save with each later version, recording every operation. The
// recording's puts are the Saves, version 0 included as acknowledged
// before any operation.
func recordSaves(fn reflect.Value) (*recording, error) {
	m := newMemFS()
	setup := newFS(m, nil)
	f, err := setup.Create(replaceName)
	if err == nil {
		_, err = f.Write([]byte(replaceVersions[0]))
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = setup.SyncDir()
	}
	if err != nil {
		panic("grader: writing version 0 on a fresh MemFS: " + err.Error())
	}
	rec, fsys := recordOn(m)
	rec.puts = []putCall{{kv: kv{replaceName, replaceVersions[0]}}}
	rec.saves = true
	for _, v := range replaceVersions[1:] {
		c := putCall{kv: kv{replaceName, v}, before: fsys.Ops()}
		gohost.ResetStudentLine()
		out, err := gohost.Call(fn, reflect.ValueOf(fsys), reflect.ValueOf(replaceName), reflect.ValueOf([]byte(v)))
		if err == nil {
			err, _ = out[0].Interface().(error)
		}
		c.err, c.acked = err, fsys.Ops()
		rec.puts = append(rec.puts, c)
		if err != nil {
			return rec, fmt.Errorf("Save of version %d failed with no power cut: %w", len(rec.puts)-1, err)
		}
	}
	rec.finish(m)
	return rec, nil
}

// replaceSeeds are the choices of what survives each cut: none of the
// unsynced data or names, and four random ones. dirent mode flips a coin
// for each name changed since the last SyncDir, so a rename that must not
// reach the disk yet shows at one cut point in only half the choices; with
// four, a wrong Save goes unseen at that point once in 16 (the grading of
// this exercise is cheap: few operations, no student code per cut).
var replaceSeeds = []uint64{0, 1, 2, 3, 4}

// versionOf names what config holds: "version 2", or a description of
// bytes that are no version.
func versionOf(data string) string {
	for i, v := range replaceVersions {
		if data == v {
			return fmt.Sprintf("version %d", i)
		}
	}
	if data == "" {
		return "nothing (an empty file)"
	}
	return fmt.Sprintf("%d bytes that are no version (a mix of old and new, or a torn write)", len(data))
}

// checkConfig reads config on m, as the cut k left it, against the
// versions allowed there.
func checkConfig(rec *recording, k cut, m *vfs.MemFS) *cutFailure {
	_, allowed, last := rec.expected(k.c)
	a := last[replaceName]
	data, err := newFS(m, nil).ReadFile(replaceName)
	var what string
	switch {
	case kvfs.IsNotExist(err):
		what = replaceName + " is gone"
	case err != nil:
		what = "reading " + replaceName + ": " + err.Error()
	case contains(allowed[replaceName], string(data)):
		return nil
	default:
		what = replaceName + " holds " + versionOf(string(data))
	}
	if v := versionIndex(a.value); v > 0 {
		what += fmt.Sprintf(", but the Save of version %d had returned at operation %d", v, a.acked)
	}
	return &cutFailure{cut: k, what: what, put: &a}
}

// versionIndex is the number of version v.
func versionIndex(v string) int {
	for i, x := range replaceVersions {
		if x == v {
			return i
		}
	}
	return -1
}

// replaceRule names the rule the Save in flight at the cut (or the last
// one that returned) broke, read from its operations, and the operation
// whose promise broke (0: none to point at).
func replaceRule(rec *recording, f *cutFailure) (string, int) {
	// The Save to blame: the one the cut interrupted, else the last that
	// returned.
	save := f.put
	for i := range rec.puts[1:] {
		if p := &rec.puts[i+1]; p.before < f.c && f.c < p.acked {
			save = p
		}
	}
	own := rec.ops[save.before:save.acked]
	renamed := -1
	for i, op := range own {
		switch {
		case op.Kind == "write" && op.File == replaceName:
			return "you wrote " + replaceName + " in place: a power cut in the middle leaves part old, part new, or nothing; write a temporary file and rename it over " + replaceName, op.N
		case op.Kind == "remove" && op.File == replaceName:
			return "you removed " + replaceName + " before the rename: Rename replaces it atomically, removing it first leaves a moment with no " + replaceName, op.N
		case op.Kind == "rename" && op.From == replaceName:
			return fmt.Sprintf("you moved %s aside (%s) before renaming the new file over it: until that second rename is durable there may be no %s at all; Rename replaces the old file atomically, so rename the temporary file straight over %s", replaceName, op, replaceName, replaceName), op.N
		case op.Kind == "rename" && op.File == replaceName:
			renamed = i
		}
	}
	if renamed < 0 {
		return "Save never renamed a new file over " + replaceName, 0
	}
	tmp := own[renamed].From
	synced := false
	for _, op := range own[:renamed] {
		switch {
		case op.Kind == "write" && op.File == tmp:
			synced = false
		case op.Kind == "fdatasync" && op.File == tmp:
			synced = true
		}
	}
	if !synced {
		return "you renamed before the temporary file's fdatasync: the new name can reach the disk before the data does, leaving " + replaceName + " empty or torn; Sync the temporary file, then Rename", own[renamed].N
	}
	for _, op := range own[renamed+1:] {
		if op.Kind == "fsync-dir" {
			return "this Save wrote, fdatasynced, renamed and fsynced the directory in the right order, yet " + replaceName + " did not hold a whole version: look for another file operation between them that changes " + replaceName, 0
		}
	}
	return "the rename is not durable until the directory is fsynced: call SyncDir after Rename, before Save returns", own[renamed].N
}
