package peers

import (
	"context"
	"errors"
	"fmt"
	"net"

	"kvlab/engine"
	"kvlab/harness"
	"kvlab/internal/kvserver"
)

// -engine kvserver: the kv engine behind kvserver, on a loopback port of
// this process, driven over RESP as any remote server is (resp.go). The
// engine, its directory and its -sync policy are -engine kv's; what the
// line adds is the wire: the client's encoding, the loopback TCP hop
// both ways, the server's parsing and its scheduling. So beside
// -engine kv on one line, the difference between the two is what the
// network costs, and the result's server_latency (the server's own time
// per command, taken inside kvserver) splits a client's latency into the
// store's part and the hop's. A real network adds its round trip on top.
//
// Each client thread has its own connection, as separate clients of a
// server do; group commit then gathers concurrent connections' SETs into
// one fdatasync, as it gathers concurrent Puts.

func init() {
	harness.RegisterEngineContext("kvserver", openKVServer)
	harness.MarkUnordered("kvserver", respUnordered)
	harness.MarkPipelining("kvserver")
}

// openKVServer opens the kv engine in dir with the sync policy, serves it
// with kvserver on 127.0.0.1 (a port the kernel picks) and connects to
// it; the client leaves the server when ctx is done. Close stops the
// server and closes the engine.
func openKVServer(ctx context.Context, dir, sync string) (harness.Store, error) {
	p, err := engine.ParseSync(sync)
	if err != nil {
		return nil, err
	}
	db, err := engine.Open(dir, engine.Options{Sync: p})
	if err != nil {
		return nil, err
	}
	srv, err := kvserver.New(db, sync)
	if err != nil {
		db.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("kvserver: a loopback port: %w", err)
	}
	go srv.Serve(ln)
	s := &ownKVServer{srv: srv, db: db}
	st, err := dialRESP(ctx, "kvserver", ln.Addr().String(), 0, sync)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.kvserverStore = st.(*kvserverStore)
	return s, nil
}

// ownKVServer is the client of a kvserver this process started, with the
// server and its engine, which Close stops after the client.
type ownKVServer struct {
	*kvserverStore
	srv *kvserver.Server
	db  *engine.DB
}

func (s *ownKVServer) Close() error {
	var errs []error
	if s.kvserverStore != nil {
		errs = append(errs, s.kvserverStore.Close())
	}
	errs = append(errs, s.srv.Close(), s.db.Close())
	return errors.Join(errs...)
}
