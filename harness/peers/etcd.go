package peers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"kvlab/harness"
	"kvlab/internal/localserver"
)

// -engine etcd: a throwaway etcd cluster on this machine.
//
// OpenEtcd starts -replicas+1 members (3 by default, or 5) from the etcd
// binary of Debian's etcd-server package, one process per member, each
// with its own data directory (m0/, m1/, ... in the run's directory, so
// device_io counts their disk), its own client and peer port on loopback,
// and no TLS. With -net-delay, -net-jitter or -net every member is reached
// by the others through a delaying proxy (netproxy.go): a member
// advertises the proxy's address as its peer URL, so every Raft message
// to it waits the delay, and its reply waits again on the way back
// through the sender's proxy. etcd's heartbeat interval is 100 ms and its
// election timeout 1 s (its defaults) unless the emulated round trip needs
// more: the heartbeat is then twice the round trip and the election
// timeout ten heartbeats, as etcd's tuning guide advises. Everything else
// is etcd's default, and the result's "replication" settings say what the
// members reported of the two that bound a long run: the backend quota
// (etcd_server_quota_backend_bytes: 2 GiB unless --quota-backend-bytes is
// given; past it the cluster refuses writes with "mvcc: database space
// exceeded") and the snapshot count (the Raft entries after which a
// member snapshots its state and may drop WAL, from its log). No
// compaction runs: every Put keeps a revision, so a long -duration run
// grows the database toward the quota.
//
// The store talks to the leader (found when the cluster is up) through
// etcd's gRPC gateway, HTTP/1.1 with JSON: POST /v3/kv/put, /v3/kv/range
// and /v3/kv/deleterange, with keys and values in base64. That costs a
// JSON encoding per request and is slower than gRPC, but it needs nothing
// beyond net/http: the official client, go.etcd.io/etcd/client/v3, brings
// gRPC and its dependencies into labserver for this one engine. Each
// concurrent client keeps its own keep-alive connection, and every
// request is bound by a deadline.
//
// A Put returns when the leader has appended it to its WAL and fsynced
// it, a majority of members (the leader counting) have done the same,
// and the leader has applied it: that is the only -sync etcd has
// (always). Concurrent Puts share fsyncs: the leader appends every
// proposal that arrived since its last write in one batch, and a
// follower fsyncs once per batch of entries it receives, so under load
// one fsync covers many commits (a group commit). The result counts each
// member's WAL fsyncs from its /metrics
// (etcd_disk_wal_fsync_duration_seconds_count); the bbolt backend also
// commits, and fsyncs, every 100 ms (--backend-batch-interval), which
// those counts leave out and device_io sees.

// ErrEtcdMissing is returned by OpenEtcd when etcd is not installed.
var ErrEtcdMissing error = harness.MissingTool("etcd: the etcd server binary is not installed (apt-get install etcd-server, or brew install etcd)")

// etcdStartTimeout bounds waiting for every member to report healthy and
// a leader to be elected.
const etcdStartTimeout = 60 * time.Second

// etcdRequestTimeout bounds each request of the store.
const etcdRequestTimeout = 30 * time.Second

// etcdBin returns the etcd binary's path, or "".
func etcdBin() string {
	p, err := exec.LookPath("etcd")
	if err != nil {
		return ""
	}
	return p
}

// etcdPorts are one member's ports; kept in the run's directory so that
// a reopen (a preload, then the measurement) restarts the members where
// the cluster's membership says they are.
type etcdPorts struct {
	Client int `json:"client"`
	Peer   int `json:"peer"`
	// Advert is the port the others reach the member's peer port by: a
	// delaying proxy's, or Peer itself.
	Advert int `json:"advert"`
}

// etcdTiming returns the heartbeat interval and election timeout for a
// one-way delay: etcd's defaults, or larger when the round trip needs it.
func etcdTiming(delay, jitter time.Duration) (heartbeat, election time.Duration) {
	heartbeat = 100 * time.Millisecond
	if rtt := 2 * (delay + jitter); 2*rtt > heartbeat {
		heartbeat = (2 * rtt).Round(time.Millisecond)
	}
	return heartbeat, 10 * heartbeat
}

// OpenEtcd starts (or restarts, when dir holds one) an etcd cluster of
// o.Replicas+1 members in dir and returns a store on its leader whose
// Close stops every member.
func OpenEtcd(ctx context.Context, dir, syncText string, o harness.EngineOptions) (harness.Store, error) {
	if syncText != "always" {
		return nil, fmt.Errorf("%w: -engine etcd cannot run -sync %s; etcd takes always only: a Put returns once a majority of members fsynced it (concurrent Puts share fsyncs)", ErrUnsupportedSync, syncText)
	}
	if o.Replicas != 2 && o.Replicas != 4 {
		return nil, fmt.Errorf("etcd: -replicas %d: must be 2 or 4 (3 or 5 members)", o.Replicas)
	}
	bin := etcdBin()
	if bin == "" {
		return nil, ErrEtcdMissing
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	c := &etcdCluster{ctx: ctx, bin: bin, dir: abs, opts: o}
	if err := c.start(); err != nil {
		c.stop()
		return nil, err
	}
	s := &etcdStore{ctx: ctx, c: c, kill: &harness.KillAt{After: o.KillFollower}}
	if o.KillLeader > 0 {
		s.kill.After, s.killLeader, s.acks = o.KillLeader, true, harness.NewAckLog()
	}
	s.http = &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 1024, // each client keeps its connection for the run
		IdleConnTimeout:     time.Minute,
	}}
	s.base = c.clientURL
	if o.Net.Active() {
		pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		s.net, err = probeRTT(pctx, o.Net)
		cancel()
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// etcdMember is one started etcd process.
type etcdMember struct {
	name   string
	ports  etcdPorts
	cmd    *exec.Cmd
	exited chan error // receives Wait's result once
	logf   string
	id     string // its member ID, from its status
}

func (m *etcdMember) clientURL() string { return "http://127.0.0.1:" + strconv.Itoa(m.ports.Client) }

// etcdCluster is the members and proxies of one etcd store.
type etcdCluster struct {
	// ctx is the run's: starting stops when it is done.
	ctx  context.Context
	bin  string
	dir  string
	opts harness.EngineOptions

	members   []*etcdMember
	proxies   []*netProxy
	leader    *etcdMember
	clientURL string // where the store sends its requests: the leader, or its proxy
	heartbeat time.Duration
	election  time.Duration
}

// start chooses (or reads back) the ports, starts the proxies and every
// member, and waits for a leader.
func (c *etcdCluster) start() error {
	n := c.opts.Replicas + 1
	ports, err := c.ports(n)
	if err != nil {
		return err
	}
	var initial []string
	for i, p := range ports {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, p.Advert))
	}
	if c.opts.Net.Active() {
		for _, p := range ports {
			px, err := startProxy("127.0.0.1:"+strconv.Itoa(p.Advert), "127.0.0.1:"+strconv.Itoa(p.Peer), newDelayer(c.opts.Net.Delay, c.opts.Net.Jitter))
			if err != nil {
				return fmt.Errorf("etcd: %w", err)
			}
			c.proxies = append(c.proxies, px)
		}
	}
	c.heartbeat, c.election = etcdTiming(c.opts.Net.Delay, c.opts.Net.Jitter)
	for i, p := range ports {
		if err := c.startMember(fmt.Sprintf("m%d", i), p, strings.Join(initial, ",")); err != nil {
			return err
		}
	}
	if err := c.waitLeader(); err != nil {
		return err
	}
	c.clientURL = c.leader.clientURL()
	if c.opts.Net.Client {
		px, err := startProxy("", "127.0.0.1:"+strconv.Itoa(c.leader.ports.Client), newDelayer(c.opts.Net.Delay, c.opts.Net.Jitter))
		if err != nil {
			return fmt.Errorf("etcd: %w", err)
		}
		c.proxies = append(c.proxies, px)
		c.clientURL = "http://" + px.Addr()
	}
	return nil
}

// ports returns the members' ports: those kept in the directory by an
// earlier open, or fresh ones, kept for the next.
func (c *etcdCluster) ports(n int) ([]etcdPorts, error) {
	file := filepath.Join(c.dir, "etcd-ports.json")
	var ports []etcdPorts
	if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &ports) == nil && len(ports) == n {
		return ports, nil
	}
	ports = make([]etcdPorts, n)
	seen := map[int]bool{}
	free := func() (int, error) {
		for {
			p, err := localserver.FreePort()
			if err != nil || !seen[p] {
				seen[p] = true
				return p, err
			}
		}
	}
	for i := range ports {
		var err error
		if ports[i].Client, err = free(); err != nil {
			return nil, fmt.Errorf("etcd: %w", err)
		}
		if ports[i].Peer, err = free(); err != nil {
			return nil, fmt.Errorf("etcd: %w", err)
		}
		ports[i].Advert = ports[i].Peer
		if c.opts.Net.Active() {
			if ports[i].Advert, err = free(); err != nil {
				return nil, fmt.Errorf("etcd: %w", err)
			}
		}
	}
	b, _ := json.Marshal(ports)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	return ports, nil
}

// startMember starts one member.
func (c *etcdCluster) startMember(name string, p etcdPorts, initial string) error {
	client := "http://127.0.0.1:" + strconv.Itoa(p.Client)
	args := []string{
		"--name", name, "--data-dir", filepath.Join(c.dir, name),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", "http://127.0.0.1:" + strconv.Itoa(p.Peer),
		"--initial-advertise-peer-urls", "http://127.0.0.1:" + strconv.Itoa(p.Advert),
		"--initial-cluster", initial, "--initial-cluster-state", "new", "--initial-cluster-token", "kvlab",
		"--heartbeat-interval", strconv.FormatInt(c.heartbeat.Milliseconds(), 10),
		"--election-timeout", strconv.FormatInt(c.election.Milliseconds(), 10),
	}
	m := &etcdMember{name: name, ports: p, exited: make(chan error, 1), logf: filepath.Join(c.dir, name+".log")}
	log, err := os.OpenFile(m.logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer log.Close()
	m.cmd = exec.Command(c.bin, args...)
	m.cmd.SysProcAttr = dieWithParent()
	m.cmd.Stdout, m.cmd.Stderr = log, log
	// The gateway and the flags are all an etcd needs; keep ETCD_*
	// variables of the environment from changing them.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "ETCD_") {
			m.cmd.Env = append(m.cmd.Env, e)
		}
	}
	if err := m.cmd.Start(); err != nil {
		return fmt.Errorf("etcd: starting %s: %w", name, err)
	}
	go func() { m.exited <- m.cmd.Wait() }()
	c.members = append(c.members, m)
	return nil
}

// etcdStatus is the part of /v3/maintenance/status the store reads.
type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader    string `json:"leader"`
	RaftIndex string `json:"raftIndex"`
	Version   string `json:"version"`
}

// status asks member m for its status.
func (c *etcdCluster) status(ctx context.Context, hc *http.Client, m *etcdMember) (etcdStatus, error) {
	var st etcdStatus
	err := etcdCall(ctx, hc, m.clientURL(), "/v3/maintenance/status", struct{}{}, &st)
	return st, err
}

// waitLeader waits until every member answers its status and they agree
// on a leader.
func (c *etcdCluster) waitLeader() error {
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(etcdStartTimeout)
	var last error
	for time.Now().Before(deadline) {
		for _, m := range c.members {
			select {
			case err := <-m.exited:
				m.exited <- err
				return fmt.Errorf("etcd: member %s exited at start (%v); its log: %s", m.name, err, m.logf)
			default:
			}
		}
		leaders := map[string]bool{}
		ok := true
		for _, m := range c.members {
			if err := c.ctx.Err(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
			st, err := c.status(ctx, hc, m)
			cancel()
			if err != nil || st.Leader == "" || st.Leader == "0" {
				ok, last = false, err
				break
			}
			m.id = st.Header.MemberID
			leaders[st.Leader] = true
		}
		if ok && len(leaders) == 1 {
			for _, m := range c.members {
				if leaders[m.id] {
					c.leader = m
					return nil
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("etcd: no leader all %d members agree on within %s (%v); their logs: %s", len(c.members), etcdStartTimeout, last, filepath.Join(c.dir, "m*.log"))
}

// stop stops every member (SIGTERM; killed after 10 s) and the proxies.
func (c *etcdCluster) stop() error {
	var first error
	for _, m := range c.members {
		m.cmd.Process.Signal(terminate)
	}
	for _, m := range c.members {
		select {
		case <-m.exited:
		case <-time.After(10 * time.Second):
			m.cmd.Process.Kill()
			<-m.exited
			if first == nil {
				first = fmt.Errorf("etcd: member %s did not stop within 10 s of SIGTERM and was killed; its log: %s", m.name, m.logf)
			}
		}
	}
	c.members = nil
	for _, px := range c.proxies {
		px.Close()
	}
	c.proxies = nil
	return first
}

// etcdCall POSTs req as JSON to base+path and decodes the reply into
// resp, turning a gateway error reply into an error.
func etcdCall(ctx context.Context, hc *http.Client, base, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hresp, err := hc.Do(hreq)
	if err != nil {
		return fmt.Errorf("etcd: %s: %w", path, err)
	}
	defer hresp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(hresp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("etcd: %s: %w", path, err)
	}
	if hresp.StatusCode != http.StatusOK {
		var e struct {
			Message string `json:"message"`
			Error   string `json:"error"`
		}
		json.Unmarshal(b, &e)
		msg := e.Message
		if msg == "" {
			msg = e.Error
		}
		if msg == "" {
			msg = strings.TrimSpace(string(b))
		}
		return fmt.Errorf("etcd: %s: %s: %s", path, hresp.Status, msg)
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(b, resp); err != nil {
		return fmt.Errorf("etcd: %s: decoding the reply: %w", path, err)
	}
	return nil
}

var (
	_ harness.Store               = (*etcdStore)(nil)
	_ harness.Scanner             = (*etcdStore)(nil)
	_ harness.StatsReporter       = (*etcdStore)(nil)
	_ harness.ReplicationReporter = (*etcdStore)(nil)
)

// etcdStore is the client store of an etcd cluster. It is safe for
// concurrent use.
type etcdStore struct {
	// ctx is the run's, the store's lifetime (STYLE: an object whose
	// lifetime is a context): every request ends when it is done.
	ctx  context.Context
	c    *etcdCluster
	http *http.Client
	net  *harness.NetReport // nil without a delaying proxy

	kill *harness.KillAt // -kill follower@D or leader@D
	// killLeader says the fault kills the leader (-kill leader@D), and
	// acks then logs every Put for the check after it (nil otherwise).
	killLeader bool
	acks       *harness.AckLog

	lmu sync.Mutex // guards base, epoch, c.leader and the failover times
	// base is the leader's client URL (or its proxy's); epoch counts the
	// leaders the store has sent to (0: the first).
	base  string
	epoch int
	// killedAt is when -kill leader killed the leader, electedAt when the
	// members left agreed on another, resumedAt when the first Put sent
	// to it was acknowledged (zero before then).
	killedAt, electedAt, resumedAt time.Time
	killedName                     string // the member killed, "" before

	mu sync.Mutex // guards metrics
	// metrics holds each member's counters at the last two StoreStats
	// calls (the runner's either side of the timed region).
	metrics [2]map[string]etcdMetrics
}

// etcdKV is one key-value pair of a range reply; encoding/json reads the
// gateway's base64 into the byte slices.
type etcdKV struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
}

// call sends one request to the leader. After -kill leader has killed
// it, a request that fails is sent again to the leader the members left
// elect (as etcd's own client does), until etcdFailoverTimeout after the
// kill: a Put that waited out the election is one slow Put in the
// timeline.
func (s *etcdStore) call(path string, req, resp any) error {
	for {
		s.lmu.Lock()
		base, epoch := s.base, s.epoch
		s.lmu.Unlock()
		ctx, cancel := context.WithTimeout(s.ctx, etcdRequestTimeout)
		err := etcdCall(ctx, s.http, base, path, req, resp)
		cancel()
		s.lmu.Lock()
		killedAt := s.killedAt // read after the request, which the kill may have ended
		s.lmu.Unlock()
		if err == nil {
			if epoch > 0 && path == "/v3/kv/put" {
				s.lmu.Lock()
				if s.resumedAt.IsZero() {
					s.resumedAt = time.Now()
				}
				s.lmu.Unlock()
			}
			return nil
		}
		if !s.killLeader || killedAt.IsZero() || s.ctx.Err() != nil {
			return err
		}
		if time.Since(killedAt) > etcdFailoverTimeout {
			return fmt.Errorf("etcd: no new leader took writes within %s of the kill: %w", etcdFailoverTimeout, err)
		}
		s.findLeader(base)
	}
}

// etcdFailoverTimeout bounds how long after -kill leader the store keeps
// sending a failed request again.
const etcdFailoverTimeout = 30 * time.Second

// findLeader, when the store still sends to base, asks the members left
// whom they follow and, once they agree on a live member, sends to it
// from then on. It waits at most 10 ms when they do not agree yet.
func (s *etcdStore) findLeader(base string) {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if s.base != base {
		return // another client found it meanwhile
	}
	killed := s.killedName
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	leaders := map[string]bool{}
	for _, m := range s.c.members {
		if m.name == killed {
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, time.Second)
		st, err := s.c.status(ctx, hc, m)
		cancel()
		if err != nil || st.Leader == "" || st.Leader == "0" {
			time.Sleep(10 * time.Millisecond)
			return
		}
		leaders[st.Leader] = true
	}
	if len(leaders) != 1 {
		time.Sleep(10 * time.Millisecond)
		return
	}
	for _, m := range s.c.members {
		if !leaders[m.id] || m.name == killed {
			continue
		}
		url := m.clientURL()
		if s.c.opts.Net.Client {
			px, err := startProxy("", "127.0.0.1:"+strconv.Itoa(m.ports.Client), newDelayer(s.c.opts.Net.Delay, s.c.opts.Net.Jitter))
			if err != nil {
				return
			}
			s.c.proxies = append(s.c.proxies, px)
			url = "http://" + px.Addr()
		}
		s.c.leader, s.base, s.epoch = m, url, s.epoch+1
		s.electedAt = time.Now()
		return
	}
	time.Sleep(10 * time.Millisecond) // they follow the member just killed
}

// Put stores value under key.
func (s *etcdStore) Put(key, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	t := s.acks.Begin(key, value)
	err := s.call("/v3/kv/put", struct {
		Key   []byte `json:"key"`
		Value []byte `json:"value"`
	}{key, value}, nil)
	s.acks.End(t, err)
	return err
}

// Get returns the value stored under key (a linearizable read: the
// leader confirms it still leads before answering).
func (s *etcdStore) Get(key []byte) ([]byte, bool, error) {
	var r struct {
		KVs []etcdKV `json:"kvs"`
	}
	if err := s.call("/v3/kv/range", struct {
		Key []byte `json:"key"`
	}{key}, &r); err != nil {
		return nil, false, err
	}
	if len(r.KVs) == 0 {
		return nil, false, nil
	}
	v := r.KVs[0].Value
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// Delete removes key; deleting a missing key is not an error.
func (s *etcdStore) Delete(key []byte) error {
	return s.call("/v3/kv/deleterange", struct {
		Key []byte `json:"key"`
	}{key}, nil)
}

// Scan calls fn for up to limit keys >= start in byte order (etcd keeps
// its keys in a B-tree and returns a range in key order).
func (s *etcdStore) Scan(start []byte, limit int, fn func(key, value []byte) bool) error {
	if len(start) == 0 {
		start = []byte{0}
	}
	var r struct {
		KVs []etcdKV `json:"kvs"`
	}
	req := struct {
		Key      []byte `json:"key"`
		RangeEnd []byte `json:"range_end"` // "\x00": every key >= Key
		Limit    int64  `json:"limit,omitempty"`
	}{start, []byte{0}, int64(max(limit, 0))}
	if err := s.call("/v3/kv/range", req, &r); err != nil {
		return err
	}
	for _, kv := range r.KVs {
		if !fn(kv.Key, kv.Value) {
			break
		}
	}
	return nil
}

// etcdMetrics are the counters of one member's /metrics the store reads.
type etcdMetrics struct {
	walFsyncs   int64
	walFsyncSec float64
	quotaBytes  float64
}

// metricsOf reads member m's /metrics.
func (s *etcdStore) metricsOf(m *etcdMember) (etcdMetrics, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.clientURL()+"/metrics", nil)
	if err != nil {
		return etcdMetrics{}, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return etcdMetrics{}, err
	}
	defer resp.Body.Close()
	return parseEtcdMetrics(io.LimitReader(resp.Body, 16<<20))
}

// parseEtcdMetrics reads the counters etcdMetrics holds from a
// Prometheus text exposition.
func parseEtcdMetrics(r io.Reader) (etcdMetrics, error) {
	var mt etcdMetrics
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "etcd_disk_wal_fsync_duration_seconds_count":
			mt.walFsyncs, found = int64(f), true
		case "etcd_disk_wal_fsync_duration_seconds_sum":
			mt.walFsyncSec = f
		case "etcd_server_quota_backend_bytes":
			mt.quotaBytes = f
		}
	}
	if err := sc.Err(); err != nil {
		return mt, err
	}
	if !found {
		return mt, errors.New("etcd: /metrics has no etcd_disk_wal_fsync_duration_seconds_count")
	}
	return mt, nil
}

// StoreStats reports the leader's WAL fsyncs and their time from its
// /metrics, and reads every member's for ReplicationReport.
func (s *etcdStore) StoreStats() harness.StoreStats {
	if s.killLeader {
		s.kill.Arm(s.killTheLeader)
	} else {
		s.kill.Arm(s.killFollower)
	}
	all := map[string]etcdMetrics{}
	for _, m := range s.c.members {
		if mt, err := s.metricsOf(m); err == nil {
			all[m.name] = mt
		}
	}
	s.mu.Lock()
	s.metrics[0], s.metrics[1] = s.metrics[1], all
	s.mu.Unlock()
	s.lmu.Lock()
	leader := s.c.leader
	s.lmu.Unlock()
	lm, ok := all[leader.name]
	if !ok {
		return harness.StoreStats{}
	}
	return harness.StoreStats{Fsyncs: lm.walFsyncs, FsyncTime: time.Duration(lm.walFsyncSec * float64(time.Second))}
}

// killFollower kills (SIGKILL) the first member that is not the leader
// and returns its name.
func (s *etcdStore) killFollower() string {
	s.lmu.Lock()
	leader := s.c.leader
	s.lmu.Unlock()
	for _, m := range s.c.members {
		if m != leader {
			m.cmd.Process.Kill()
			return m.name
		}
	}
	return ""
}

// killTheLeader kills (SIGKILL) the member the store sends its writes
// to, the leader, and returns its name.
func (s *etcdStore) killTheLeader() string {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	s.c.leader.cmd.Process.Kill()
	s.killedAt, s.killedName = time.Now(), s.c.leader.name
	return s.c.leader.name
}

// failover reports the election after the leader's loss and reads every
// acknowledged write back from the new leader.
func (s *etcdStore) failover(killed string, killedAfter time.Duration) *harness.FailoverReport {
	s.lmu.Lock()
	leader, killedAt, electedAt, resumedAt := s.c.leader, s.killedAt, s.electedAt, s.resumedAt
	s.lmu.Unlock()
	f := &harness.FailoverReport{Killed: killed, KilledAfterNs: killedAfter.Nanoseconds()}
	if electedAt.IsZero() {
		// No request failed after the kill (it came as the run ended):
		// ask the members left now.
		s.findLeader(leader.clientURL())
		s.lmu.Lock()
		leader, electedAt = s.c.leader, s.electedAt
		s.lmu.Unlock()
	}
	if leader.name == killed || electedAt.IsZero() {
		f.WritesStopped = true
		f.What = "the leader was killed (SIGKILL), and the members left had not agreed on a new one when the run ended"
		return f
	}
	f.NewLeader, f.ElectedAfterNs = leader.name, electedAt.Sub(killedAt).Nanoseconds()
	if !resumedAt.IsZero() {
		f.ResumedAfterNs = resumedAt.Sub(killedAt).Nanoseconds()
	}
	f.What = fmt.Sprintf("the leader was killed (SIGKILL); the %d members left elected %s (a majority of %d still stands), and the client sent its writes there from then on, the ones that failed in the meantime again", len(s.c.members)-1, leader.name, len(s.c.members))
	f.AckCheck = s.acks.Check("the new leader "+leader.name+" (a linearizable read)", 2*time.Minute, func(key []byte) ([][]byte, error) {
		v, ok, err := s.Get(key)
		if err != nil || !ok {
			return nil, err
		}
		return [][]byte{v}, nil
	})
	return f
}

// snapshotCountRE finds the snapshot count a member logs at start, in
// etcd 3.4's capnslog form ("snapshot count = 100000") or its zap form
// ("snapshot-count":100000).
var snapshotCountRE = regexp.MustCompile(`snapshot[- ]count"?\s*[=:]\s*(\d+)`)

// snapshotCount is the snapshot count member m logged, or "".
func snapshotCount(m *etcdMember) string {
	b, err := os.ReadFile(m.logf)
	if err != nil {
		return ""
	}
	if sm := snapshotCountRE.FindSubmatch(b); sm != nil {
		return string(sm[1])
	}
	return ""
}

// ReplicationReport reports the members, the leader, and each member's
// WAL fsyncs per commit between the last two StoreStats calls.
func (s *etcdStore) ReplicationReport(commits int64) *harness.ReplicationReport {
	s.mu.Lock()
	before, after := s.metrics[0], s.metrics[1]
	s.mu.Unlock()
	killed, killedAfter := s.kill.Killed()
	var failover *harness.FailoverReport
	if s.killLeader && killed != "" {
		failover = s.failover(killed, killedAfter)
	}
	s.lmu.Lock()
	leader := s.c.leader
	s.lmu.Unlock()
	rep := &harness.ReplicationReport{
		Failover: failover,
		Leader:   leader.name,
		Commit:   fmt.Sprintf("a Put returns once a majority (%d of %d members) has fsynced it to its WAL and the leader has applied it", len(s.c.members)/2+1, len(s.c.members)),
		Net:      s.net,
		WaitsFor: "follower_flush",
		Settings: map[string]string{
			"heartbeat-interval": s.c.heartbeat.String(),
			"election-timeout":   s.c.election.String(),
		},
	}
	if lm, ok := after[leader.name]; ok && lm.quotaBytes > 0 {
		rep.Settings["quota-backend-bytes"] = strconv.FormatFloat(lm.quotaBytes, 'f', 0, 64) + " (not set: etcd's default, reported by etcd_server_quota_backend_bytes)"
	}
	if n := snapshotCount(leader); n != "" {
		rep.Settings["snapshot-count"] = n + " (not set: etcd's default, from the member's log)"
	}
	for _, m := range s.c.members {
		rm := harness.ReplicaMember{Name: m.name, Role: "follower", Addr: m.clientURL()}
		if m == leader {
			rm.Role = "leader"
		}
		if m.name == killed {
			rm.State, rm.KilledAfterNs = "killed (SIGKILL) by -kill", killedAfter.Nanoseconds()
			if failover != nil {
				rm.Role = "former leader"
			}
		}
		b, okb := before[m.name]
		a, oka := after[m.name]
		if okb && oka {
			rm.Flushes, rm.FlushesCounted = a.walFsyncs-b.walFsyncs, true
			rm.FlushSource = "/metrics etcd_disk_wal_fsync_duration_seconds_count"
			if commits > 0 {
				rm.FlushesPerCommit = float64(rm.Flushes) / float64(commits)
			}
		} else {
			rm.FlushSource = "unavailable: the member's /metrics could not be read"
		}
		rep.Members = append(rep.Members, rm)
	}
	return rep
}

// Close closes the client's connections and stops the cluster.
func (s *etcdStore) Close() error {
	s.kill.Disarm()
	s.http.CloseIdleConnections()
	return s.c.stop()
}
