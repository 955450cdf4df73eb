package guard

import (
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWriteRate pins WriteRate's verdicts: writes under both rates pass,
// the one over an address's rate and the one over every address's
// together are refused with a *WriteRefusedError naming the flag and the
// delay its 429 waits.
func TestWriteRate(t *testing.T) {
	g := New(Config{Log: log.New(io.Discard, "", 0)})
	req := func(addr string) *http.Request {
		r := httptest.NewRequest("POST", "/api/predict", nil)
		r.RemoteAddr = addr + ":1234"
		return r
	}
	refused := func(err error, flag string) {
		t.Helper()
		var re *WriteRefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, flag+")") || re.Wait != RefusalDelay {
			t.Fatalf("got %v, want a *WriteRefusedError naming %s and waiting %v", err, flag, RefusalDelay)
		}
	}

	w := g.NewWriteRate(2, 6000)
	for i := range 2 {
		if err := w.Allow(req("10.0.0.1"), "prediction"); err != nil {
			t.Fatalf("write %d: %v, want allowed", i+1, err)
		}
	}
	refused(w.Allow(req("10.0.0.1"), "prediction"), "-write-rate")
	if err := w.Allow(req("10.0.0.2"), "share"); err != nil {
		t.Fatalf("another address: %v, want allowed", err)
	}

	// One a minute in all (a burst of one): the next write, from another
	// address, is refused unless a minute has passed.
	w = g.NewWriteRate(100, 1)
	if err := w.Allow(req("10.0.1.1"), "share"); err != nil {
		t.Fatalf("the first write: %v, want allowed", err)
	}
	refused(w.Allow(req("10.0.1.2"), "share"), "-write-rate-total")
}
