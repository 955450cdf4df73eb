// Package wasmtest holds the end-to-end tests of the in-browser exercises:
// the worker compiled to WebAssembly and run under Node.js with the Go
// toolchain's wasm_exec.js, and the exercise page in headless Chromium.
// It has no code of its own; build the wasm with `make wasm`.
package wasmtest
