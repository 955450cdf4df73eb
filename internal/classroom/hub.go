package classroom

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// HubLimits bound a hub's followers. The zero value of each field has a
// default.
type HubLimits struct {
	// MaxMessages and MaxBytes bound one follower's outgoing queue: a
	// follower that falls this far behind is closed with 1008 "too slow".
	// 0 = 256 messages, 1 MiB.
	MaxMessages int
	MaxBytes    int
	// WriteWait bounds one write to one follower. 0 = 10 s.
	WriteWait time.Duration
	// PingEvery is how often an idle follower is pinged, so its reader
	// notices a peer that vanished. 0 = 30 s.
	PingEvery time.Duration
}

func (l HubLimits) withDefaults() HubLimits {
	if l.MaxMessages <= 0 {
		l.MaxMessages = 256
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 1 << 20
	}
	if l.WriteWait <= 0 {
		l.WriteWait = 10 * time.Second
	}
	if l.PingEvery <= 0 {
		l.PingEvery = 30 * time.Second
	}
	return l
}

// Close codes the hub sends.
const (
	CloseNormal    = websocket.CloseNormalClosure   // the room was closed
	CloseGoingAway = websocket.CloseGoingAway       // the server is stopping
	CloseTooSlow   = websocket.ClosePolicyViolation // 1008: the queue overflowed, or the follower broke the rules
)

// Hub fans a room's messages out to its followers' websockets. Each
// follower has a bounded queue and its own writer goroutine; Broadcast
// only appends to the queues, so neither the runner nor the other
// followers ever wait for a slow one. It is safe for concurrent use.
type Hub struct {
	lim     HubLimits
	onCount func(n int) // told the number of followers after each join and leave; may be nil

	mu        sync.RWMutex // guards followers and closed
	followers map[*Follower]struct{}
	closed    bool

	queued  atomic.Int64   // bytes waiting in all followers' queues
	dropped atomic.Int64   // followers closed for being too slow, in all
	wg      sync.WaitGroup // one per writer
}

// NewHub returns an empty hub. onCount, which may be nil, is called
// (outside the hub's locks) with the number of followers whenever it
// changes.
func NewHub(lim HubLimits, onCount func(n int)) *Hub {
	return &Hub{lim: lim.withDefaults(), onCount: onCount, followers: map[*Follower]struct{}{}}
}

// Follower is one follower's socket as the hub sees it. It is safe for
// concurrent use.
type Follower struct {
	hub  *Hub
	conn *websocket.Conn

	mu    sync.Mutex // guards queue, bytes and end
	queue [][]byte
	bytes int
	// end, once set, is how the writer finishes: it sends what is still
	// queued, then the close frame, then closes the socket.
	end *closeFrame

	wake chan struct{} // has room for one pending wake-up
	done chan struct{} // closed when the writer has exited
}

type closeFrame struct {
	code int
	text string
}

// Join adds a follower on conn and starts its writer. The caller keeps
// reading conn (pongs, messages) and calls Close when its reads fail.
func (h *Hub) Join(conn *websocket.Conn) (*Follower, error) {
	f := &Follower{hub: h, conn: conn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	h.followers[f] = struct{}{}
	n := len(h.followers)
	h.wg.Add(1)
	h.mu.Unlock()
	go f.writeLoop()
	if h.onCount != nil {
		h.onCount(n)
	}
	return f, nil
}

// Broadcast queues b for every follower. b is shared, not copied: the
// caller must not change it. It never blocks on a follower.
func (h *Hub) Broadcast(b []byte) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for f := range h.followers {
		f.Send(b)
	}
}

// Count is the number of followers.
func (h *Hub) Count() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.followers)
}

// QueuedBytes is the number of bytes waiting in all the followers'
// queues. Invariant: at most Count() * MaxBytes.
func (h *Hub) QueuedBytes() int64 { return h.queued.Load() }

// Backlog is the longest follower queue, in messages: how far the
// slowest follower is behind.
func (h *Hub) Backlog() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for f := range h.followers {
		f.mu.Lock()
		n = max(n, len(f.queue))
		f.mu.Unlock()
	}
	return n
}

// Dropped is the number of followers closed for being too slow.
func (h *Hub) Dropped() int64 { return h.dropped.Load() }

// Close sends final (when not nil) to every follower after what is
// queued, then a close frame with code and text, refuses new followers,
// and waits for every writer to finish (each is bounded by WriteWait).
func (h *Hub) Close(code int, text string, final []byte) {
	h.mu.Lock()
	h.closed = true
	fs := make([]*Follower, 0, len(h.followers))
	for f := range h.followers {
		fs = append(fs, f)
	}
	h.mu.Unlock()
	for _, f := range fs {
		if final != nil {
			f.Send(final)
		}
		f.Close(code, text)
	}
	h.wg.Wait()
}

// Send queues b for this follower, or, when the queue is full, drops the
// follower (1008 "too slow") and reports false. It never blocks.
func (f *Follower) Send(b []byte) bool {
	lim := f.hub.lim
	f.mu.Lock()
	if f.end != nil {
		f.mu.Unlock()
		return false
	}
	if len(f.queue) >= lim.MaxMessages || f.bytes+len(b) > lim.MaxBytes {
		f.end = &closeFrame{code: CloseTooSlow, text: "too slow"}
		f.hub.queued.Add(-int64(f.bytes))
		f.queue, f.bytes = nil, 0
		f.mu.Unlock()
		f.hub.dropped.Add(1)
		// A write in progress gets a second more instead of WriteWait: a
		// follower that is reading, only slowly, then still hears 1008;
		// one that stopped reading is cut off (its peer sees 1006).
		f.conn.NetConn().SetWriteDeadline(time.Now().Add(time.Second))
		f.poke()
		return false
	}
	f.queue = append(f.queue, b)
	f.bytes += len(b)
	f.hub.queued.Add(int64(len(b)))
	f.mu.Unlock()
	f.poke()
	return true
}

// Close makes the writer send what is queued, then a close frame with
// code and text (none when code is 0), and close the socket. Later calls
// and Sends do nothing.
func (f *Follower) Close(code int, text string) {
	f.mu.Lock()
	if f.end == nil {
		f.end = &closeFrame{code: code, text: text}
	}
	f.mu.Unlock()
	f.poke()
}

// Done is closed when the follower's writer has exited and the socket is
// closed.
func (f *Follower) Done() <-chan struct{} { return f.done }

func (f *Follower) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// next pops one queued message; when the queue is empty it returns the
// end frame (nil while the follower is open).
func (f *Follower) next() (b []byte, end *closeFrame) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue) == 0 {
		return nil, f.end
	}
	b = f.queue[0]
	f.queue[0] = nil
	f.queue = f.queue[1:]
	f.bytes -= len(b)
	f.hub.queued.Add(-int64(len(b)))
	return b, nil
}

// writeLoop is the follower's only writer.
func (f *Follower) writeLoop() {
	defer f.leave()
	lim := f.hub.lim
	ping := time.NewTicker(lim.PingEvery)
	defer ping.Stop()
	for {
		select {
		case <-f.wake:
		case <-ping.C:
			if f.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(lim.WriteWait)) != nil {
				return
			}
			continue
		}
		for {
			b, end := f.next()
			if end != nil {
				if end.code != 0 {
					f.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(end.code, end.text), time.Now().Add(time.Second))
				}
				return
			}
			if b == nil {
				break
			}
			f.conn.SetWriteDeadline(time.Now().Add(lim.WriteWait))
			if f.conn.WriteMessage(websocket.TextMessage, b) != nil {
				return
			}
		}
	}
}

// leave closes the socket, forgets the follower and frees its queue.
func (f *Follower) leave() {
	f.conn.Close()
	f.mu.Lock()
	if f.end == nil {
		f.end = &closeFrame{}
	}
	f.hub.queued.Add(-int64(f.bytes))
	f.queue, f.bytes = nil, 0
	f.mu.Unlock()
	h := f.hub
	h.mu.Lock()
	delete(h.followers, f)
	n := len(h.followers)
	h.mu.Unlock()
	close(f.done)
	h.wg.Done()
	if h.onCount != nil {
		h.onCount(n)
	}
}
