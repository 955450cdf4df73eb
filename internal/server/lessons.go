package server

import (
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"kvlab/internal/lesson"
)

// course is the lessons and their rendered pages (pages.go): loaded at
// start, or in author mode re-read when a file changes, and each page
// rendered once until then. It is safe for concurrent use.
type course struct {
	fsys       fs.FS
	authorMode bool // re-read fsys when a file changes (-lessons DIR)
	needToken  bool // the pages ask for the instructor token
	logf       func(format string, args ...any)
	// checkCell and checkRun say why a cell's text or a quiz's run: lines
	// would be refused under the server's caps (warnLines).
	checkCell func(text string) error
	checkRun  func(lines []string) error

	mu      sync.Mutex // guards the fields below
	lessons []*lesson.Lesson
	loadErr error
	stamp   string
	pages   map[string][]byte // rendered lesson pages by slug, and "" for the index
}

// now returns the current lessons, re-reading them in author mode
// when a file changed.
func (c *course) now() ([]*lesson.Lesson, error) {
	if c.authorMode {
		if st := c.stampNow(); st != c.currentStamp() {
			if err := c.reload(st); err != nil {
				return nil, err
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lessons, c.loadErr
}

func (c *course) currentStamp() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stamp
}

// stampNow summarizes the lesson files' names, sizes and times.
func (c *course) stampNow() string {
	var b strings.Builder
	ents, err := fs.ReadDir(c.fsys, ".")
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
func (c *course) reload(stamp string) error {
	ls, err := lesson.Load(c.fsys)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stamp = stamp
	c.pages = map[string][]byte{}
	if err != nil {
		c.loadErr = err
		if c.authorMode {
			c.logf("lessons: %v", err)
			return nil
		}
		return fmt.Errorf("lessons: %w", err)
	}
	c.lessons, c.loadErr = ls, nil
	c.warnLines(ls)
	return nil
}

// warnLines logs every cell or quiz line that would be refused under the
// server's caps, so an author sees it before a student does.
func (c *course) warnLines(ls []*lesson.Lesson) {
	for _, l := range ls {
		for _, cell := range l.Cells {
			if err := c.checkCell(cell.Text); err != nil {
				c.logf("%s: cell %s: %v", l.File, cell.ID, err)
			}
		}
		for _, q := range l.Quizzes {
			if err := c.checkRun(q.Run); err != nil {
				c.logf("%s: quiz %s: %v", l.File, q.ID, err)
			}
		}
	}
}

// find is the lesson slug names, its index and all the lessons; a nil
// lesson when there is none.
func (c *course) find(slug string) (*lesson.Lesson, int, []*lesson.Lesson, error) {
	ls, err := c.now()
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
// view of the lessons, liveclass.Config.Lesson).
func (c *course) lesson(slug string) (*lesson.Lesson, error) {
	l, _, _, err := c.find(slug)
	return l, err
}
