package engine

import "kvlab/engine/vfs"

// The filesystem model is package vfs's (kvlab/engine/vfs): FS, File,
// OSFS, MemFS and its power modes. The engine names them as its own.
type (
	// FS is vfs.FS: the small filesystem every file access goes through.
	FS = vfs.FS
	// File is vfs.File: an open file.
	File = vfs.File
	// OSFS is vfs.OSFS: the operating system's filesystem.
	OSFS = vfs.OSFS
	// MemFS is vfs.MemFS: an in-memory filesystem that can lose power.
	MemFS = vfs.MemFS
	// PowerMode is vfs.PowerMode: how a MemFS loses unsynced writes.
	PowerMode = vfs.PowerMode
)

// The power modes, their sizes and text forms (vfs).
const (
	PowerPrefix  = vfs.PowerPrefix
	PowerReorder = vfs.PowerReorder
	PowerPages   = vfs.PowerPages
	PowerDirent  = vfs.PowerDirent
	SectorSize   = vfs.SectorSize
	PageSize     = vfs.PageSize
	PowerModes   = vfs.PowerModes
	// SyncCall is the call Datasync makes on this OS (vfs.SyncCall).
	SyncCall = vfs.SyncCall
)

// NewMemFS, ParsePowerMode and Datasync are vfs's.
var (
	NewMemFS       = vfs.NewMemFS
	ParsePowerMode = vfs.ParsePowerMode
	Datasync       = vfs.Datasync
)
