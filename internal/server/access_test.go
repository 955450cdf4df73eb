package server

import (
	"net/http/httptest"
	"testing"
)

// hostOK and IsLoopback share one loopback test (loopbackHost); each
// keeps its own reading of a name: a browser resolves every *.localhost
// name to this machine, a listen address goes through the resolver.
func TestHostOK(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"localhost:8080", true}, {"localhost", true}, {"LOCALHOST:80", true}, {"localhost.", true},
		{"app.localhost:8080", true}, {"127.0.0.1:80", true}, {"127.1.2.3", true}, {"[::1]:8080", true}, {"[::1]", true},
		{"rebind.evil.example:8080", false}, {"localhost.evil.example", false}, {"evil-localhost", false},
		{"10.0.0.1:80", false}, {"[::]:8080", false}, {"0.0.0.0", false}, {"", false},
	}
	open := &Server{}
	withToken := &Server{needToken: true}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/ws", nil)
		r.Host = tt.host
		if got := open.hostOK(r); got != tt.want {
			t.Errorf("without a token, Host %q: got %v, want %v", tt.host, got, tt.want)
		}
		if !withToken.hostOK(r) {
			t.Errorf("with a token, Host %q: got refused, want the token to be the check", tt.host)
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
