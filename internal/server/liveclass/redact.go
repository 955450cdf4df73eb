package liveclass

import (
	"bytes"
	"encoding/json"
)

// A probe result names the machine: its hostname, and the absolute path
// of the run directory (which holds the user's name and the server's
// PID). On the instructor's own loopback server that is the user's own
// business; in room mode (a token, or a non-loopback address: the
// server serves others) every student would see it. There the result keeps only
// what the page's conditions line shows: filesystem, device, CPU, cores,
// RAM, kernel, Go version, free space and the timings.

//
// A result the server's runner makes is recorded and sent in its public
// form already (runq.Config.Public, harness.Output.Public), with no
// decode; Redact is for a result a page shares to the board, which
// comes from the page as JSON.

// roomHidden are the fields of a probe result that a room does not see:
// the ones harness.Output.Public hides.
var roomHidden = []string{"host", "dir"}

// Redact removes roomHidden from every probe object in a shared result
// (a probe line's object, or one inside an array). Anything that is not
// a probe, or does not decode, is returned as it is.
func Redact(res []byte) []byte {
	if !bytes.Contains(res, []byte(`"probe"`)) {
		return res
	}
	var v any
	if json.Unmarshal(res, &v) != nil {
		return res
	}
	if !redactValue(v) {
		return res
	}
	out, err := json.Marshal(v)
	if err != nil {
		return res
	}
	return out
}

// redactValue removes the hidden fields in place; it reports whether it
// removed any.
func redactValue(v any) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		if v["kind"] == "probe" {
			for _, k := range roomHidden {
				if _, ok := v[k]; ok {
					delete(v, k)
					changed = true
				}
			}
		}
		for _, x := range v {
			changed = redactValue(x) || changed
		}
	case []any:
		for _, x := range v {
			changed = redactValue(x) || changed
		}
	}
	return changed
}
