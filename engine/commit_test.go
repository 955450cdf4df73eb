package engine

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestParseSyncPolicies: every policy name and parameter form is
// accepted, and a bad one is refused with an error that says what is
// allowed.
func TestParseSyncPolicies(t *testing.T) {
	cases := []struct {
		in      string
		want    SyncPolicy
		wantErr string // substring of the error; "" = no error
	}{
		{"always", SyncPolicy{Mode: SyncAlways}, ""},
		{"group", SyncPolicy{Mode: SyncGroup}, ""},
		{"none", SyncPolicy{Mode: SyncNone}, ""},
		{"batch:1", SyncPolicy{Mode: SyncBatch, N: 1}, ""},
		{"batch:64", SyncPolicy{Mode: SyncBatch, N: 64}, ""},
		{"periodic:10ms", SyncPolicy{Mode: SyncPeriodic, Interval: 10 * time.Millisecond}, ""},
		{"periodic:1s", SyncPolicy{Mode: SyncPeriodic, Interval: time.Second}, ""},
		{"batch:0", SyncPolicy{}, "between 1 and"},
		{"batch:-3", SyncPolicy{}, "between 1 and"},
		{"batch:x", SyncPolicy{}, "batch:N"},
		{"batch:+5", SyncPolicy{}, "batch:N needs N between 1 and 1048576"},
		{"batch:007", SyncPolicy{}, "batch:N needs N"},
		{"batch:1048577", SyncPolicy{}, "between 1 and 1048576"},
		{"batch:", SyncPolicy{}, "batch:N"},
		{"batch", SyncPolicy{}, "batch:N"},
		{"periodic:-1s", SyncPolicy{}, "periodic:D"},
		{"periodic:0s", SyncPolicy{}, "periodic:D"},
		{"periodic:10", SyncPolicy{}, "periodic:D"},
		{"periodic:50us", SyncPolicy{}, "periodic:D needs a duration between 100µs and 1m, e.g. periodic:10ms"},
		{"periodic:2m", SyncPolicy{}, "periodic:D needs a duration"},
		{"periodic", SyncPolicy{}, "periodic:D"},
		{"sometimes", SyncPolicy{}, "unknown policy; allowed: always, group, batch:N, periodic:D, none"},
		{"", SyncPolicy{}, "unknown policy; allowed: always"},
		{"always:1", SyncPolicy{}, "always takes no parameter; allowed: always, group"},
		{"none:", SyncPolicy{}, "none takes no parameter"},
		{"ALWAYS", SyncPolicy{}, "unknown policy"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseSync(c.in)
			if c.wantErr != "" {
				if err == nil || !errors.Is(err, ErrBadSync) || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), c.in) {
					t.Fatalf("ParseSync(%q): got error %v, want ErrBadSync naming %q and containing %q", c.in, err, c.in, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ParseSync(%q): got %+v, %v; want %+v", c.in, got, err, c.want)
			}
			if s := got.String(); s != c.in {
				t.Errorf("String round trip: got %q, want %q", s, c.in)
			}
		})
	}
}

func TestSyncPolicyStringRoundTrip(t *testing.T) {
	for _, p := range []SyncPolicy{
		{Mode: SyncAlways}, {Mode: SyncGroup}, {Mode: SyncNone},
		{Mode: SyncBatch, N: 256}, {Mode: SyncPeriodic, Interval: 1500 * time.Microsecond},
	} {
		got, err := ParseSync(p.String())
		if err != nil || got != p {
			t.Errorf("ParseSync(%q): got %+v, %v; want %+v", p.String(), got, err, p)
		}
	}
}
