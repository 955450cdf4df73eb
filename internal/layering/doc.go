// Package layering holds no code: its test checks the rules of which of
// kvlab's packages may not import which, so that the layers stay apart
// as the tree grows.
//
//   - Nothing under harness/ imports wasm/: the instrument does not reach
//     into the browser's floor. The Go interpreter's host both use is
//     kvlab/gohost.
//   - Nothing under wasm/ imports kvlab/engine: the browser's build holds
//     the filesystem model (kvlab/engine/vfs) and not the engine.
//   - Test-support packages (harness/harnesstest,
//     internal/archive/archivetest, internal/browsertest, internal/pgtest,
//     ...; the test's testSupport) are imported only by tests and by each
//     other, so none of their code is in a binary.
//
// The test reads every Go file's imports, tests and every build tag's
// files included, and asks `go list` for what the harness's packages and
// tests and the browser's build reach through other packages.
package layering
