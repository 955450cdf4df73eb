package peers

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"

	"kvlab/harness"
)

// Counting SQLite's syncs: a shim VFS.
//
// SQLite reaches the disk through a VFS, a table of C function pointers
// (sqlite3_vfs: open, delete, ...; and per open file sqlite3_io_methods:
// read, write, sync, ...). modernc.org/sqlite is SQLite translated to Go,
// and a C function pointer there is a Go func value, so a Go function can
// stand in for one. countVFS is a copy of the default ("unix") VFS under
// its own name whose xOpen calls the real one and then points the new
// file at a copy of its method table whose xSync is countSync: every sync
// SQLite asks for (a WAL commit, a checkpoint's WAL and database syncs)
// passes through countSync, which times and counts it and calls the real
// xSync (and every write through countWrite, which counts its bytes).
// Nothing else changes: same files, same locking, same shared
// memory for the WAL index.
//
// Each store registers its own VFS (vfs=kvlab-sqlite-N in the DSN), so
// two stores open at once count separately. The structures SQLite keeps
// pointers to live in C memory (libc.Xcalloc) and are freed by close,
// after the last connection using them has closed.

// vfsCounts are one store's sync counters. Safe for concurrent use.
type vfsCounts struct {
	syncs     atomic.Int64 // xSync calls (fdatasync, or fsync where fdatasync is off)
	syncNanos atomic.Int64 // total time in them
	written   atomic.Int64 // bytes SQLite asked xWrite to write, to any file
	times     harness.SyncTimes
}

// countVFS is one registered shim VFS.
type countVFS struct {
	name   string  // registered name, for the DSN's vfs= parameter
	cname  uintptr // name as a C string (C memory)
	vfs    uintptr // *sqlite3_vfs (C memory), the registered copy
	counts *vfsCounts
}

// shim is what the callbacks need to find: the real VFS, and for each
// method table they handed out, the real table's xSync and the counters.
var shim struct {
	mu      sync.Mutex            // guards the maps and seq
	seq     int                   // names kvlab-sqlite-1, -2, ...
	byVFS   map[uintptr]*countVFS // registered VFS -> its store's counters
	methods map[uintptr]shimTable // our method-table copy -> what it wraps
	tables  map[[2]uintptr]uintptr
	// tables: (our VFS, real method table) -> our copy, so each file opened
	// through one VFS with the same real table shares one copy.
}

// shimTable is one copied method table.
type shimTable struct {
	realSync  uintptr // the real xSync
	realWrite uintptr // the real xWrite
	counts    *vfsCounts
}

// baseVFS is the real default VFS, found once.
var baseVFS = sync.OnceValue(func() uintptr {
	tls := libc.NewTLS()
	defer tls.Close()
	return sqlite3.Xsqlite3_vfs_find(tls, 0)
})

// newCountVFS registers a fresh shim VFS counting into counts.
func newCountVFS(counts *vfsCounts) (*countVFS, error) {
	base := baseVFS()
	if base == 0 {
		return nil, fmt.Errorf("sqlite: no default VFS to wrap")
	}
	tls := libc.NewTLS()
	defer tls.Close()

	shim.mu.Lock()
	shim.seq++
	name := fmt.Sprintf("kvlab-sqlite-%d", shim.seq)
	shim.mu.Unlock()

	cname, err := libc.CString(name)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	p := libc.Xcalloc(tls, 1, libc.Tsize_t(unsafe.Sizeof(sqlite3.Tsqlite3_vfs{})))
	if p == 0 {
		libc.Xfree(tls, cname)
		return nil, fmt.Errorf("sqlite: out of memory for the counting VFS")
	}
	v := (*sqlite3.Tsqlite3_vfs)(cptr(p))
	*v = *(*sqlite3.Tsqlite3_vfs)(cptr(base)) // pAppData too: the unix VFS keeps its locking-style finder there
	v.FpNext = 0
	v.FzName = cname
	*(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&v.FxOpen)) = countOpen

	c := &countVFS{name: name, cname: cname, vfs: p, counts: counts}
	shim.mu.Lock()
	if shim.byVFS == nil {
		shim.byVFS = map[uintptr]*countVFS{}
		shim.methods = map[uintptr]shimTable{}
		shim.tables = map[[2]uintptr]uintptr{}
	}
	shim.byVFS[p] = c
	shim.mu.Unlock()

	if rc := sqlite3.Xsqlite3_vfs_register(tls, p, 0); rc != sqlite3.SQLITE_OK {
		c.free(tls)
		return nil, fmt.Errorf("sqlite: registering the counting VFS: code %d", rc)
	}
	return c, nil
}

// close unregisters the VFS and frees what it allocated.
// REQUIRES: every connection opened through it is closed.
func (c *countVFS) close() {
	tls := libc.NewTLS()
	defer tls.Close()
	sqlite3.Xsqlite3_vfs_unregister(tls, c.vfs)
	c.free(tls)
}

func (c *countVFS) free(tls *libc.TLS) {
	shim.mu.Lock()
	delete(shim.byVFS, c.vfs)
	for key, table := range shim.tables {
		if key[0] == c.vfs {
			delete(shim.tables, key)
			delete(shim.methods, table)
			libc.Xfree(tls, table)
		}
	}
	shim.mu.Unlock()
	libc.Xfree(tls, c.vfs)
	libc.Xfree(tls, c.cname)
}

// countOpen is the shim's xOpen: the real VFS opens the file, then the
// file's method table is swapped for the counting copy.
func countOpen(tls *libc.TLS, pVfs, zName, pFile uintptr, flags int32, pOutFlags uintptr) int32 {
	base := baseVFS()
	realOpen := (*sqlite3.Tsqlite3_vfs)(cptr(base)).FxOpen
	rc := (*(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&realOpen)))(tls, base, zName, pFile, flags, pOutFlags)
	file := (*sqlite3.Tsqlite3_file)(cptr(pFile))
	if rc != sqlite3.SQLITE_OK || file.FpMethods == 0 {
		return rc
	}
	shim.mu.Lock()
	defer shim.mu.Unlock()
	c := shim.byVFS[pVfs]
	if c == nil {
		panic("peers: sqlite counting VFS: xOpen on a VFS that is not registered")
	}
	key := [2]uintptr{pVfs, file.FpMethods}
	table, ok := shim.tables[key]
	if !ok {
		table = libc.Xcalloc(tls, 1, libc.Tsize_t(unsafe.Sizeof(sqlite3.Tsqlite3_io_methods{})))
		if table == 0 {
			return rc // out of memory: this file goes uncounted rather than failing
		}
		m := (*sqlite3.Tsqlite3_io_methods)(cptr(table))
		*m = *(*sqlite3.Tsqlite3_io_methods)(cptr(file.FpMethods))
		shim.methods[table] = shimTable{realSync: m.FxSync, realWrite: m.FxWrite, counts: c.counts}
		*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&m.FxSync)) = countSync
		*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&m.FxWrite)) = countWrite
		shim.tables[key] = table
	}
	file.FpMethods = table
	return rc
}

// countSync is the shim's xSync: the real sync, timed and counted.
func countSync(tls *libc.TLS, pFile uintptr, flags int32) int32 {
	t := tableOf(pFile)
	start := time.Now()
	rc := (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&t.realSync)))(tls, pFile, flags)
	d := time.Since(start)
	t.counts.syncs.Add(1)
	t.counts.syncNanos.Add(int64(d))
	t.counts.times.Observe(d)
	return rc
}

// countWrite is the shim's xWrite: the real write, its bytes counted.
func countWrite(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	t := tableOf(pFile)
	rc := (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&t.realWrite)))(tls, pFile, zBuf, iAmt, iOfst)
	if rc == sqlite3.SQLITE_OK {
		t.counts.written.Add(int64(iAmt))
	}
	return rc
}

// tableOf returns what the counting method table of the open file pFile wraps.
func tableOf(pFile uintptr) shimTable {
	shim.mu.Lock()
	defer shim.mu.Unlock()
	return shim.methods[(*sqlite3.Tsqlite3_file)(cptr(pFile)).FpMethods]
}

// cptr turns an address in C memory (allocated by libc, never by Go's
// heap, so the collector neither moves nor frees it) into a pointer.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }
