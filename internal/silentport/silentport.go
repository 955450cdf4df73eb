// Package silentport is test support: a loopback port that accepts
// connections and never answers, as a stuck server (or a port that is not
// a server) does. The tests of the network engines' deadlines and of the
// served class's address rule use it.
package silentport

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Listen starts a silent listener on loopback and returns its address
// and the count of connections it has accepted. The connections and the
// listener close when the test ends.
func Listen(t testing.TB) (addr string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var mu sync.Mutex // guards conns
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), &n
}
