package server

import (
	"context"
	"fmt"

	"kvlab/internal/archive"
)

// The run archive: package runq records every line it runs, with where
// it came from (runq.Origin), and package run says which of a cell
// run's lines are the lesson's own; the server opens the archive.

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
