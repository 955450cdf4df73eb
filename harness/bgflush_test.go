package harness

import (
	"os"
	"path/filepath"
)

// bgFlushStore is testmap with background work: from Open until Close a
// goroutine appends to a file in the store's directory and fdatasyncs
// it, as a store's flushes and compactions go on after its warm-up.
type bgFlushStore struct {
	Store
	stop, done chan struct{}
}

func (s *bgFlushStore) Close() error {
	close(s.stop)
	<-s.done
	return s.Store.Close()
}

func init() {
	RegisterEngine("testbgflush", func(dir, sync string) (Store, error) {
		inner, err := OpenEngine("testmap", dir, sync)
		if err != nil {
			return nil, err
		}
		f, err := os.Create(filepath.Join(dir, "background"))
		if err != nil {
			return nil, err
		}
		s := &bgFlushStore{Store: inner, stop: make(chan struct{}), done: make(chan struct{})}
		go func() {
			defer close(s.done)
			defer f.Close()
			for {
				select {
				case <-s.stop:
					return
				default:
				}
				f.Write(make([]byte, 512))
				f.Sync()
			}
		}()
		return s, nil
	})
}
