// Package vfs is the filesystem model the engine stores through: FS and
// File, the small interface every file access goes through; OSFS, the
// operating system's (fdatasync where it exists: Datasync); and MemFS, an
// in-memory filesystem that forgets what was not synced when its power is
// cut (its power modes) and fails operations on demand (fault injection),
// as Pebble's vfs and vfs/errorfs do. Package engine names these types as
// its own (engine/vfs.go), so the engine's code reads as it did; the
// browser's exercises (wasm/) use this package and never the engine.
package vfs
