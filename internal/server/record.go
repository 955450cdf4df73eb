package server

import (
	"context"
	"fmt"

	"kvlab/internal/archive"
)

// The run archive: package runq records every line it runs, with where
// it came from (runq.Origin); the server opens the archive and says which
// of a cell run's lines are the lesson's own.

// ownLines says, for each of a cell run's lines, whether it is the
// lesson's own line at that index: the same text after lesson.CellLines'
// normalisation, which the page's splitter shares. An unknown lesson or
// cell owns no line.
func (s *Server) ownLines(lessonSlug, cellID string, lines []string) []bool {
	own := make([]bool, len(lines))
	if lessonSlug == "" || cellID == "" {
		return own
	}
	l, _, _, err := s.course.find(lessonSlug)
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

// lessonScript is the script of the lesson's ```lua mine block before
// cell cellID, or "" when there is none (run.Config.LessonScript).
func (s *Server) lessonScript(lessonSlug, cellID string) string {
	if lessonSlug == "" || cellID == "" {
		return ""
	}
	l, _, _, err := s.course.find(lessonSlug)
	if err != nil || l == nil {
		return ""
	}
	if c := l.Cell(cellID); c != nil {
		return c.Script
	}
	return ""
}
