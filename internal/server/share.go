package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"kvlab/internal/server/web"
)

// The share targets. A student's own labserver (on a laptop) shares a
// result with the instructor's room server: the student's page POSTs it
// to the room server's /api/rooms/{code}/share (the class board, package
// room). The student's server must first be told the room server's
// origin (POST /api/share-target), which it adds to its pages'
// Content-Security-Policy connect-src.

const (
	shareTargetBodyLimit = 4 << 10
	maxShareTargets      = 4
	shareTargetsFile     = "share-targets.json"
	shareTargetsFormat   = `{"url":"http://10.0.0.5:8080"}`
)

// shareTargets are the room servers this server's pages may POST shares
// to, persisted in DataDir. It is safe for concurrent use.
type shareTargets struct {
	path string
	mu   sync.Mutex // guards urls and csp
	urls []string
	csp  string // contentSecurityPolicy with urls in connect-src
}

// loadShareTargets reads the share targets kept in dataDir. A file that
// is not a JSON list of strings (empty, garbage, wrong types: a crash
// mid-write before writes were synced, or a hand edit) is moved aside to
// share-targets.json.damaged-TIMESTAMP, named in the log, and the server
// starts with none: a student re-adds the room server by sharing again.
func loadShareTargets(dataDir string, logf func(string, ...any)) (*shareTargets, error) {
	t := &shareTargets{path: filepath.Join(dataDir, shareTargetsFile)}
	b, err := os.ReadFile(t.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("share targets: %w", err)
	default:
		var urls []string
		if err := json.Unmarshal(b, &urls); err != nil {
			aside := t.path + ".damaged-" + time.Now().UTC().Format("20060102T150405.000000000Z")
			if rerr := os.Rename(t.path, aside); rerr != nil {
				return nil, fmt.Errorf("share targets: %s is damaged (%v) and could not be moved aside: %w", t.path, err, rerr)
			}
			logf("share targets: %s is damaged (%v); moved it aside to %s and started with none", t.path, err, aside)
			break
		}
		for _, u := range urls {
			if o, err := originOf(u); err == nil && len(t.urls) < maxShareTargets && !slices.Contains(t.urls, o) {
				t.urls = append(t.urls, o)
			}
		}
	}
	t.csp = cspWith(t.urls)
	return t, nil
}

// cspWith is the policy with the share targets added to connect-src.
func cspWith(urls []string) string {
	if len(urls) == 0 {
		return contentSecurityPolicy
	}
	return strings.Replace(contentSecurityPolicy, "connect-src 'self'", "connect-src 'self' "+strings.Join(urls, " "), 1)
}

// csp is the Content-Security-Policy every response carries.
func (s *Server) csp() string {
	t := s.targets
	if t == nil {
		return contentSecurityPolicy
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.csp
}

var hostRE = regexp.MustCompile(`^[a-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9a-f:.]+\](:[0-9]{1,5})?$`)

// originOf reduces a room server's URL to its origin: http or https,
// host and port, nothing else.
func originOf(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	bad := fmt.Errorf("url %q: want a room server's origin, http(s)://HOST[:PORT], e.g. http://10.0.0.5:8080", raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return "", bad
	}
	host := strings.ToLower(u.Host)
	if !hostRE.MatchString(host) {
		return "", bad
	}
	return u.Scheme + "://" + host, nil
}

func (t *shareTargets) list() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.urls)
}

// change applies fn to the list and persists it.
func (t *shareTargets) change(fn func(urls []string) ([]string, error)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	urls, err := fn(slices.Clone(t.urls))
	if err != nil {
		return err
	}
	b, _ := json.Marshal(urls)
	if err := writeFileSynced(t.path, b); err != nil {
		return fmt.Errorf("share targets: %w", err)
	}
	t.urls, t.csp = urls, cspWith(urls)
	return nil
}

// writeFileSynced replaces path with b so that a crash leaves the old
// file or the new one, whole: b goes to a temporary file that is synced,
// renamed over path, and the directory is synced so the rename lasts.
func writeFileSynced(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if runtime.GOOS == "windows" { // a directory cannot be opened for syncing there; NTFS journals the rename
		return nil
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (s *Server) routeShareTargets() {
	s.mux.HandleFunc("GET /api/share-target", s.handleShareTargets)
	s.mux.HandleFunc("POST /api/share-target", s.handleShareTargetAdd)
	s.mux.HandleFunc("DELETE /api/share-target", s.handleShareTargetDelete)
}

type shareTargetRequest struct {
	Token     string `json:"token,omitempty"`     // accepted, and not an authority
	Presenter string `json:"presenter,omitempty"` // the presenter token, from another machine
	URL       string `json:"url"`
}

func (s *Server) handleShareTargets(w http.ResponseWriter, r *http.Request) {
	if code, why := s.guard.InstructorError(r, r.URL.Query().Get("presenter")); why != "" {
		web.JSONError(w, code, why)
		return
	}
	web.WriteJSON(w, http.StatusOK, map[string][]string{"urls": s.targets.list()})
}

func (s *Server) handleShareTargetAdd(w http.ResponseWriter, r *http.Request) {
	s.changeShareTarget(w, r, func(urls []string, o string) ([]string, error) {
		if slices.Contains(urls, o) {
			return urls, nil
		}
		if len(urls) >= maxShareTargets {
			return nil, fmt.Errorf("%d room servers are remembered already, the most: DELETE one first (%s)", maxShareTargets, strings.Join(urls, ", "))
		}
		return append(urls, o), nil
	})
}

func (s *Server) handleShareTargetDelete(w http.ResponseWriter, r *http.Request) {
	s.changeShareTarget(w, r, func(urls []string, o string) ([]string, error) {
		return slices.DeleteFunc(urls, func(u string) bool { return u == o }), nil
	})
}

func (s *Server) changeShareTarget(w http.ResponseWriter, r *http.Request, fn func(urls []string, o string) ([]string, error)) {
	var req shareTargetRequest
	if !web.DecodeBody(w, r, shareTargetBodyLimit, &req, shareTargetsFormat) {
		return
	}
	if code, why := s.guard.InstructorError(r, req.Presenter); why != "" {
		web.JSONError(w, code, why)
		return
	}
	o, err := originOf(req.URL)
	if err != nil {
		web.JSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	err = s.targets.change(func(urls []string) ([]string, error) { return fn(urls, o) })
	if err != nil {
		web.JSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	web.WriteJSON(w, http.StatusOK, map[string][]string{"urls": s.targets.list()})
}
