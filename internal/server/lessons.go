package server

import (
	"fmt"
	"io/fs"
	"strings"

	"kvlab/internal/lesson"
	"kvlab/internal/server/runq"
)

// lessonsNow returns the current lessons, re-reading them in author mode
// when a file changed.
func (s *Server) lessonsNow() ([]*lesson.Lesson, error) {
	if s.cfg.Reload {
		if st := s.stampNow(); st != s.currentStamp() {
			if err := s.reload(st); err != nil {
				return nil, err
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lessons, s.loadErr
}

func (s *Server) currentStamp() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stamp
}

// stampNow summarizes the lesson files' names, sizes and times.
func (s *Server) stampNow() string {
	var b strings.Builder
	ents, err := fs.ReadDir(s.cfg.Lessons, ".")
	if err != nil {
		return "error: " + err.Error()
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s %d %d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String()
}

// reload parses the lessons and drops the page cache; stamp is the
// stampNow taken before the files are read. In author mode a broken lesson
// is shown as an error page instead of stopping the server.
func (s *Server) reload(stamp string) error {
	ls, err := lesson.Load(s.cfg.Lessons)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stamp = stamp
	s.pages = map[string][]byte{}
	if err != nil {
		s.loadErr = err
		if s.cfg.Reload {
			s.log.Printf("lessons: %v", err)
			return nil
		}
		return fmt.Errorf("lessons: %w", err)
	}
	s.lessons, s.loadErr = ls, nil
	s.warnLines(ls)
	return nil
}

// warnLines logs every cell or quiz line that would be refused under the
// server's caps, so an author sees it before a student does.
func (s *Server) warnLines(ls []*lesson.Lesson) {
	for _, l := range ls {
		for _, c := range l.Cells {
			if _, _, _, err := runq.CheckCell(c.Text, 0, s.cfg.Limits, s.cfg.Budget, s.cfg.MaxLinesPerCell); err != nil {
				s.log.Printf("%s: cell %s: %v", l.File, c.ID, err)
			}
		}
		for _, q := range l.Quizzes {
			if _, err := s.checkRunLines(q.Run); err != nil {
				s.log.Printf("%s: quiz %s: %v", l.File, q.ID, err)
			}
		}
	}
}

func (s *Server) findLesson(slug string) (*lesson.Lesson, int, []*lesson.Lesson, error) {
	ls, err := s.lessonsNow()
	if err != nil {
		return nil, 0, nil, err
	}
	for i, l := range ls {
		if l.Slug == slug {
			return l, i, ls, nil
		}
	}
	return nil, -1, ls, nil
}

// lesson is the lesson slug names, or nil when there is none (the room's
// view of the lessons, room.Config.Lesson).
func (s *Server) lesson(slug string) (*lesson.Lesson, error) {
	l, _, _, err := s.findLesson(slug)
	return l, err
}
