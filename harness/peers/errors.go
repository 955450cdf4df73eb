package peers

import (
	"errors"
	"fmt"
)

// ErrUnsupportedSync is returned by an adapter's open function when its
// engine cannot express the requested -sync policy. The wrapping error
// names the engine, the policy, why, and the policies the engine supports.
var ErrUnsupportedSync = errors.New("peers: sync policy not supported by this engine")

// unsupportedSync builds the error for policy on engine, saying why and
// what the engine supports instead.
func unsupportedSync(engineName, policy, why, supported string) error {
	return fmt.Errorf("%w: -engine %s cannot run -sync %s: %s; %s supports %s",
		ErrUnsupportedSync, engineName, policy, why, engineName, supported)
}
