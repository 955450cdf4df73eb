package server

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"kvlab/harness"
	"kvlab/internal/lesson"
)

// maxRounds caps a run message's repeat: the page's "repeat 5x" asks for 5.
const maxRounds = 10

// CheckCell splits a cell into run lines and checks each one against the
// limits, as a run would. The error names the 0-based line.
func CheckCell(cell string, lim harness.Limits, maxLines int) ([]string, int, error) {
	lines := lesson.CellLines(cell)
	if len(lines) == 0 {
		return nil, -1, fmt.Errorf("the cell has no run-spec lines (lines starting with # are comments); try: bench -engine kv -sync always -ops 2000")
	}
	if len(lines) > maxLines {
		return nil, -1, fmt.Errorf("the cell has %d run-spec lines; the limit is %d", len(lines), maxLines)
	}
	for i, l := range lines {
		if err := checkLine(l, lim); err != nil {
			return nil, i, fmt.Errorf("line %d (%s): %v", i+1, l, err)
		}
	}
	return lines, -1, nil
}

// checkLine checks one run line against the limits, as a run would. The
// error says what is wrong and what is allowed, but not which line: the
// caller names it, as a cell's line or a quiz's run: line.
func checkLine(line string, lim harness.Limits) error {
	spec, err := harness.ParseSpec(line, lim)
	if err != nil {
		return err
	}
	if spec.Dir != "" {
		return errors.New("-dir is not allowed here: the server runs every line in a fresh directory under its -data folder")
	}
	if spec.Keep {
		return errors.New("-keep is not allowed here: the server removes every run's directory")
	}
	for _, e := range spec.Engines {
		if err := checkEngineHost(e); err != nil {
			return err
		}
	}
	return nil
}

// checkEngineHost refuses an engine named by a URL (resp://, postgres://)
// whose host is not this machine: a cell's reader, or anyone in a room
// when the server listens beyond loopback, must not make the server
// connect to other machines and write to them.
func checkEngineHost(engine string) error {
	if !strings.Contains(engine, "://") {
		return nil
	}
	u, err := url.Parse(engine)
	if err != nil {
		return fmt.Errorf("-engine %s: %v", engine, err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("-engine %s: the server connects only to servers on this machine (127.0.0.1, ::1 or localhost); run other hosts from the command line", engine)
}

// checkRunExtras checks the run message's archive fields.
func checkRunExtras(m inMsg) error {
	if m.Repeat < 0 || m.Repeat > maxRounds {
		return fmt.Errorf("repeat %d: must be between 1 and %d (0 or absent: once)", m.Repeat, maxRounds)
	}
	return checkOrigin(m.Lesson, m.CellID, m.Browser)
}

// checkRunLines checks a quiz's run: lines against the limits and the
// cell budget, as measure will.
func (s *Server) checkRunLines(lines []string) error {
	for i, l := range lines {
		if err := checkLine(l, s.cfg.Limits); err != nil {
			return runLineError(i, l, err)
		}
	}
	if bad, err := s.cfg.Budget.check(lines, s.cfg.Limits); err != nil {
		if bad >= 0 {
			return runLineError(bad, lines[bad], err)
		}
		return fmt.Errorf("run: %v", err)
	}
	return nil
}

// runLineError names a quiz's run: line (1-based i+1) and its text once,
// then says what is wrong with it.
func runLineError(i int, line string, err error) error {
	return fmt.Errorf("run: line %d (%s): %v", i+1, line, err)
}
