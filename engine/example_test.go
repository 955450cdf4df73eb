package engine_test

import (
	"errors"
	"fmt"
	"os"

	"kvlab/engine"
)

func Example() {
	dir, _ := os.MkdirTemp("", "kvlab-example-")
	defer os.RemoveAll(dir)

	sync, err := engine.ParseSync("group")
	if err != nil {
		fmt.Println(err)
		return
	}
	db, err := engine.Open(dir, engine.Options{Sync: sync})
	if err != nil {
		fmt.Println(err)
		return
	}
	db.Put([]byte("course"), []byte("measuring storage honestly"))
	db.Put([]byte("draft"), []byte("to be deleted"))
	db.Delete([]byte("draft"))

	v, _ := db.Get([]byte("course"))
	fmt.Printf("course = %s\n", v)
	if _, err := db.Get([]byte("draft")); errors.Is(err, engine.ErrNotFound) {
		fmt.Println("draft: not found")
	}
	s := db.Stats()
	fmt.Printf("puts %d, deletes %d, durable through seq %d of %d\n", s.Puts, s.Deletes, s.DurableSeq, s.LastSeq)
	db.Close()
	// Output:
	// course = measuring storage honestly
	// draft: not found
	// puts 2, deletes 1, durable through seq 3 of 3
}

func ExampleParseSync() {
	for _, s := range []string{"batch:64", "periodic:10ms", "batch:0", "sometimes"} {
		p, err := engine.ParseSync(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(p)
	}
	// Output:
	// batch:64
	// periodic:10ms
	// engine: bad sync policy "batch:0": batch:N needs N between 1 and 1048576
	// engine: bad sync policy "sometimes": unknown policy; allowed: always, group, batch:N, periodic:D, none
}
