package server

import (
	"fmt"

	"kvlab/harness"
	"kvlab/internal/server/runq"
)

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
