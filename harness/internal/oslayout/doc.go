// Package oslayout decodes the raw bytes that macOS, FreeBSD and Windows
// hand the probe when it describes a host: the BSD struct loadavg of the
// vm.loadavg sysctl (loadavg.go, for harness/host_bsd.go) and the
// storage properties Windows reports for a volume (storage.go, for
// harness/host_windows.go). Only those files import it, so it is in the
// binaries built for those systems; its decoding is apart from the calls
// so that it is tested on every operating system.
package oslayout
