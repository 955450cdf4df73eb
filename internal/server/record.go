package server

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"time"

	"kvlab/harness"
	"kvlab/internal/archive"
)

// Recording: every line the server runs (a cell's line, a run: quiz's
// line) is stored in the run archive once it has finished, with where it
// came from. The runner records after harness.Exec has returned, so the
// archive write is outside every timed region; it is inside the runner's
// turn, so a result message carrying run_id is sent only once the record
// is committed: a page that was told a run_id can find it after any crash.

// origin says where a job came from, for the archive.
type origin struct {
	source  string // "cell" or "quiz"
	lesson  string // lesson slug, "" when the page did not say
	cell    string // the cell's id in the lesson, "" when unknown
	quiz    string // the quiz's id, for run: quizzes
	browser string // the id the page keeps in localStorage, "" when none
	// own[i] says line i of a cell's job is the lesson's own line i of
	// cell (see ownLines); a run: quiz's lines are always its own.
	own []bool
}

// ownLines says, for each of a cell run's lines, whether it is the
// lesson's own line at that index: the same text after lesson.CellLines'
// normalisation, which the page's splitter shares. An unknown lesson or
// cell owns no line.
func (s *Server) ownLines(lessonSlug, cellID string, lines []string) []bool {
	own := make([]bool, len(lines))
	if lessonSlug == "" || cellID == "" {
		return own
	}
	l, _, _, err := s.findLesson(lessonSlug)
	if err != nil || l == nil {
		return own
	}
	c := l.Cell(cellID)
	if c == nil {
		return own
	}
	for i, line := range lines {
		own[i] = i < len(c.Lines) && c.Lines[i] == line
	}
	return own
}

// browserRE is what a browser id may look like: the page sends a UUID; any
// short token of letters, digits and '-' is accepted.
var browserRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// nameRE is a lesson slug, a cell id or a quiz id as the page sends them.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,128}$`)

// checkOrigin checks the optional where-from fields of a run message or a
// quiz request; each may be empty.
func checkOrigin(lessonSlug, cell, browser string) error {
	if lessonSlug != "" && !nameRE.MatchString(lessonSlug) {
		return fmt.Errorf("lesson %q: a lesson slug is 1 to 128 letters, digits and '-'", lessonSlug)
	}
	if cell != "" && !nameRE.MatchString(cell) {
		return fmt.Errorf("cell_id %q: a cell id is 1 to 128 letters, digits and '-'", cell)
	}
	if browser != "" && !browserRE.MatchString(browser) {
		return fmt.Errorf("browser %q: a browser id is 1 to 64 letters, digits and '-'", browser)
	}
	return nil
}

// timeline collects a line's progress events while it runs. The runner's
// Progress callback appends to it; it is safe for concurrent use.
type timeline struct {
	mu  sync.Mutex // guards evs
	evs []harness.Progress
}

func (t *timeline) add(p harness.Progress) {
	t.mu.Lock()
	t.evs = append(t.evs, p)
	t.mu.Unlock()
}

func (t *timeline) json() json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.evs) == 0 {
		return json.RawMessage("[]")
	}
	b, err := json.Marshal(t.evs)
	if err != nil {
		panic("server: progress events do not marshal: " + err.Error())
	}
	return b
}

// record stores the job's finished line i in the archive, with its index
// and whether it is the lesson's own, and returns its id, or 0 and the
// error when it could not be stored (the run is still reported; it just
// has no permalink).
func (s *Server) record(j *job, i int, res json.RawMessage, tl *timeline, started, ended time.Time) (int64, error) {
	line := j.lines[i]
	r := &archive.Run{
		Spec: line, Result: res, Timeline: tl.json(),
		Source: j.from.source, Lesson: j.from.lesson, Cell: j.from.cell, Quiz: j.from.quiz, Browser: j.from.browser,
		Version: s.version, Host: s.hostID, Started: started.UTC(), Ended: ended.UTC(),
		Line: i, Own: j.from.source == "quiz" || i < len(j.from.own) && j.from.own[i],
	}
	describe(r, s.cfg.Limits)
	// The record must not be lost to a cancelled client: it has its own
	// short deadline, and Close waits for the runner before closing the archive.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := s.arch.Add(ctx, r)
	if err != nil {
		s.log.Printf("archive: recording %q: %v", line, err)
		return 0, err
	}
	return id, nil
}

// describe fills a run's kind and full spec from its spec line, its
// filter fields from its result (archive.Run.FillFromResult, as the
// command line does) and its conditions: a bench result's probe (the
// first one of an array), or a probe run's whole result.
func describe(r *archive.Run, lim harness.Limits) {
	if sp, err := harness.ParseSpec(r.Spec, lim); err == nil {
		r.Kind, r.SpecFull = sp.Cmd, sp.String()
	}
	r.FillFromResult()
	r.Probe = probeOf(r.Result)
}

func probeOf(res json.RawMessage) json.RawMessage {
	var many []json.RawMessage
	if json.Unmarshal(res, &many) == nil && len(many) > 0 {
		res = many[0]
	}
	var one struct {
		Kind  string          `json:"kind"`
		Probe json.RawMessage `json:"probe"`
	}
	if json.Unmarshal(res, &one) != nil {
		return nil
	}
	if one.Kind == "probe" {
		return res
	}
	return one.Probe
}

// openArchive opens the archive New was asked for and learns the version
// and host id recorded with each run.
func (s *Server) openArchive() error {
	s.version, s.hostID = archive.Version(), archive.HostID()
	if s.cfg.Archive != nil {
		s.arch = s.cfg.Archive
		return nil
	}
	a, err := archive.Open(context.Background(), s.cfg.ArchiveTarget, s.cfg.DataDir, s.log.Printf)
	if err != nil {
		target := s.cfg.ArchiveTarget
		if target == "" {
			target = "kvlab.db in " + s.cfg.DataDir
		}
		return fmt.Errorf("-archive %s: %w", target, err)
	}
	s.arch, s.ownArch = a, true
	return nil
}

// repeatLines is lines once per round (rounds 0 or 1: once), for the
// budget check of a repeated cell.
func repeatLines(lines []string, rounds int) []string {
	if rounds <= 1 {
		return lines
	}
	out := make([]string, 0, len(lines)*rounds)
	for range rounds {
		out = append(out, lines...)
	}
	return out
}
