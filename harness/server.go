package harness

import (
	"fmt"
	"kvlab/harness/calc"
	"strings"
)

// Stores behind a socket.
//
// A store that is a client of a server (the RESP engines of package
// peers: kvserver, redis-server) is timed at the client like any other:
// from just before Put is called to just after it returns, so its
// latency includes the network hop, the protocol and the server's queue.
// The server can time each command itself, from when it starts executing
// it to when its reply is ready, and such a store reports that too
// (ServerTimer): a result then carries both, and the difference is the
// cost of being across a socket. The two are not the same population of
// events seen from two sides only: each side reports its own percentiles,
// so compare p50 with p50, and never subtract percentiles to get one for
// the network.

// ServerTimer is implemented by stores whose server times its own
// commands. The runner resets the server's figures just before the wall
// clock starts and reads them just after it stops (a network round trip
// each, outside the timed region).
type ServerTimer interface {
	ResetServerTimes() error
	// ServerTimes returns the server's figures since the reset, keyed by
	// op kind ("put", "get", "delete"), and what the figures are called
	// where they came from (e.g. "INFO latencystats").
	ServerTimes() (map[string]*ServerLatency, string, error)
}

// ServerLatency is what a server reported for one kind of op: the
// "server_latency" objects of a bench result.
type ServerLatency struct {
	Count  int64   `json:"count"`
	MeanNs float64 `json:"mean_ns"`
	P50Ns  int64   `json:"p50_ns"`
	P99Ns  int64   `json:"p99_ns"`
	P999Ns int64   `json:"p999_ns"`
}

// serverLine is the table's line comparing the server's own figures
// with the client's, or "" when the run has none.
func serverLine(r *BenchResult) string {
	if r.ServerLatencyUnavailable != "" {
		return "server-side time: unavailable (" + r.ServerLatencyUnavailable + ")"
	}
	if len(r.ServerLatency) == 0 {
		return ""
	}
	var parts []string
	for _, kind := range []string{"put", "get", "delete"} {
		s := r.ServerLatency[kind]
		if s == nil || s.Count == 0 {
			continue
		}
		part := fmt.Sprintf("%s p50 %s p99 %s p99.9 %s (%d)", kind, calc.FormatNs(float64(s.P50Ns)), calc.FormatNs(float64(s.P99Ns)), calc.FormatNs(float64(s.P999Ns)), s.Count)
		if c := r.Latency[kind]; c != nil {
			part += fmt.Sprintf(" vs client p50 %s p99 %s", calc.FormatNs(float64(c.P50Ns)), calc.FormatNs(float64(c.P99Ns)))
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("server-side time (%s): %s", r.ServerLatencySource, strings.Join(parts, "; "))
}
