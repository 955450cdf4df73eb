package server

import (
	"fmt"

	"kvlab/harness"
	"kvlab/internal/server/runq"
)

// checkRunExtras checks the run message's archive fields.
func checkRunExtras(m runq.RunMsg) error {
	if m.Repeat < 0 || m.Repeat > runq.MaxRounds {
		return fmt.Errorf("repeat %d: must be between 1 and %d (0 or absent: once)", m.Repeat, runq.MaxRounds)
	}
	return runq.CheckOrigin(m.Lesson, m.CellID, m.Browser)
}

// checkRunLines checks a quiz's run: lines as measure will run them
// (runq.CheckLines) and returns their specs; the error starts "run: ",
// then names the line at fault.
func (s *Server) checkRunLines(lines []string) ([]*harness.Spec, error) {
	specs, _, err := runq.CheckLines(lines, 0, s.cfg.Limits, s.cfg.Budget)
	if err != nil {
		return nil, fmt.Errorf("run: %v", err)
	}
	return specs, nil
}
