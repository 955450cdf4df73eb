package vfs

import "errors"

// ErrPowerLost is returned by every operation on a MemFS after its
// Crash, and on the files opened from it: the simulated machine lost
// power. A store on that MemFS fails with engine.ErrFailed wrapping it.
var ErrPowerLost = errors.New("engine: memfs: the simulated machine lost power")
