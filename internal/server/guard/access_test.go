package guard

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// HostOK and IsLoopback share one loopback test (LoopbackHost); each
// keeps its own reading of a name: a browser resolves every *.localhost
// name to this machine, a listen address goes through the resolver. A
// server with a token also answers IP addresses and its -host names, and
// still refuses every other name (DNS rebinding).
func TestHostOK(t *testing.T) {
	tests := []struct {
		host            string
		want, wantToken bool
	}{
		{"localhost:8080", true, true}, {"localhost", true, true}, {"LOCALHOST:80", true, true}, {"localhost.", true, true},
		{"app.localhost:8080", true, true}, {"127.0.0.1:80", true, true}, {"127.1.2.3", true, true}, {"[::1]:8080", true, true}, {"[::1]", true, true},
		{"rebind.evil.example:8080", false, false}, {"localhost.evil.example", false, false}, {"evil-localhost", false, false},
		{"10.0.0.1:80", false, true}, {"[fe80::1]:8080", false, true}, {"0.0.0.0", false, true},
		{"lab.example.edu:8080", false, true}, {"Lab.Example.EDU.", false, true}, {"lab.example.edu.evil.example", false, false}, {"", false, false},
	}
	open := &Guard{}
	withToken := &Guard{cfg: Config{Token: "tok"}, hostNames: []string{"lab.example.edu"}}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/ws", nil)
		r.Host = tt.host
		if got := open.HostOK(r); got != tt.want {
			t.Errorf("without a token, Host %q: got %v, want %v", tt.host, got, tt.want)
		}
		if got := withToken.HostOK(r); got != tt.wantToken {
			t.Errorf("with a token and -host lab.example.edu, Host %q: got %v, want %v", tt.host, got, tt.wantToken)
		}
	}
}

func TestIsLoopbackNames(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"localhost", true}, {"127.0.0.1", true}, {"[::1]", true}, {"::1", true}, {"", true},
		// The resolver, not a browser, turns a listen address into an IP.
		{"app.localhost:8080", false}, {"localhost.evil.example:80", false},
	}
	for _, tt := range tests {
		if got := IsLoopback(tt.addr); got != tt.want {
			t.Errorf("IsLoopback(%q): got %v, want %v", tt.addr, got, tt.want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true}, {"localhost:80", true}, {"[::1]:8080", true}, {"127.0.0.2:1", true},
		{":8080", false}, {"0.0.0.0:8080", false}, {"10.0.0.1:8080", false}, {"[::]:8080", false}, {"example.org:80", false},
	}
	for _, tt := range tests {
		if got := IsLoopback(tt.addr); got != tt.want {
			t.Errorf("IsLoopback(%q): got %v, want %v", tt.addr, got, tt.want)
		}
	}
}

// A JSON API request that stores or grades answers is refused, with
// why, from another origin or naming a Host that is not this machine,
// and allowed from this server's own page or with no Origin at all.
func TestAPIAccess(t *testing.T) {
	g := &Guard{}
	for _, tt := range []struct {
		host, origin string
		want         string // "" allowed, else a word of the refusal
	}{
		{"127.0.0.1:8080", "", ""},
		{"127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"127.0.0.1:8080", "http://evil.example", "evil.example"},
		{"rebind.evil.example:8080", "", "rebind.evil.example"},
	} {
		r := httptest.NewRequest("POST", "/api/quiz", nil)
		r.Host = tt.host
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		err := g.APIAccess(r)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Host %q Origin %q: refused (%v), want allowed", tt.host, tt.origin, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Host %q Origin %q: got %v, want a refusal naming %q", tt.host, tt.origin, err, tt.want)
		}
	}
}
