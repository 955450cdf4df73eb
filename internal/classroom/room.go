package classroom

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"
)

// Room is one live class. Its fields below mu are guarded by mu; the
// rest never change after NewRoom. It is safe for concurrent use through
// its lock: callers take Lock around reads and changes.
type Room struct {
	Code     string // canonical (no dash)
	ID       int64  // the archive row
	Lesson   string // the lesson's slug
	Sections int    // sections of the lesson: 0..Sections-1
	Created  time.Time
	Hub      *Hub
	// PresenterHash is the SHA-256 of the room's presenter secret, hex
	// ("" for a room started before rooms had one: then only the
	// server's presenter token presents it). Set before the room is
	// registered; it never changes after.
	PresenterHash string

	mu        sync.Mutex
	Section   int
	AllowRuns bool
	Closed    bool
	Expires   time.Time
	Polls     []*Poll // in the order opened; Key is "p" + 1-based index
	// Board counts: entries in all, and by the sharer's address hash.
	BoardEntries int
	BoardByAddr  map[string]int
	// Counts spaces out the follower-count updates.
	Counts Throttle
}

// NewRoom returns an open room with an empty hub. onCount is the hub's.
func NewRoom(code string, id int64, lesson string, sections int, created, expires time.Time, lim HubLimits, onCount func(n int)) *Room {
	return &Room{Code: code, ID: id, Lesson: lesson, Sections: sections, Created: created, Expires: expires,
		Hub: NewHub(lim, onCount), BoardByAddr: map[string]int{}}
}

// PresenterOK reports whether secret is the room's presenter secret. The
// comparison takes the same time whatever secret is.
func (r *Room) PresenterOK(secret string) bool {
	return r.PresenterHash != "" && secret != "" && subtle.ConstantTimeCompare([]byte(HashSecret(secret)), []byte(r.PresenterHash)) == 1
}

// NewSecret draws a presenter secret: 128 bits from crypto/rand, as 26
// letters and digits.
func NewSecret() string { return rand.Text() }

// HashSecret is what the archive keeps of a presenter secret.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// Lock and Unlock guard the room's mutable fields.
func (r *Room) Lock()   { r.mu.Lock() }
func (r *Room) Unlock() { r.mu.Unlock() }

// Poll returns the poll with key, or nil. REQUIRES: r locked.
func (r *Room) Poll(key string) *Poll {
	for _, p := range r.Polls {
		if p.Key == key {
			return p
		}
	}
	return nil
}

// OpenPollFor returns the quiz's open poll, or nil. REQUIRES: r locked.
func (r *Room) OpenPollFor(quiz string) *Poll {
	for _, p := range r.Polls {
		if p.Quiz == quiz && p.State == PollOpen {
			return p
		}
	}
	return nil
}

// gone reports whether r is closed or expired at now.
func (r *Room) gone(now time.Time) bool {
	r.Lock()
	defer r.Unlock()
	return r.Closed || !now.Before(r.Expires)
}

// Registry holds the open rooms by code. It is safe for concurrent use.
type Registry struct {
	mu    sync.Mutex // guards rooms
	rooms map[string]*Room
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{rooms: map[string]*Room{}} }

// Add registers r under its code. It reports false when the code is
// taken (the caller draws another).
func (g *Registry) Add(r *Room) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, taken := g.rooms[r.Code]; taken {
		return false
	}
	g.rooms[r.Code] = r
	return true
}

// Get returns the open room with code (canonical), or nil when there is
// none or it expired before now.
func (g *Registry) Get(code string, now time.Time) *Room {
	g.mu.Lock()
	r := g.rooms[code]
	g.mu.Unlock()
	if r == nil {
		return nil
	}
	if r.gone(now) {
		return nil
	}
	return r
}

// Remove forgets r.
func (g *Registry) Remove(r *Room) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rooms[r.Code] == r {
		delete(g.rooms, r.Code)
	}
}

// Expired removes and returns the rooms that are closed or expired at now.
func (g *Registry) Expired(now time.Time) []*Room {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*Room
	for code, r := range g.rooms {
		if r.gone(now) {
			delete(g.rooms, code)
			out = append(out, r)
		}
	}
	return out
}

// All returns every registered room.
func (g *Registry) All() []*Room {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*Room, 0, len(g.rooms))
	for _, r := range g.rooms {
		out = append(out, r)
	}
	return out
}
