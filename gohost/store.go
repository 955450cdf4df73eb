package gohost

import (
	"fmt"
	"reflect"

	"kvlab/gohost/kvfs"
)

// This file is the shape of a store of the crash exercises, the one kind
// of program the host runs outside a grading too (native.go): func
// Open(fs kvfs.FS) (*Store, error) and, on *Store, Put and Get.

// StoreShape is what a store's code must declare, as a sentence for an
// error.
const StoreShape = "your code must define func Open(fs kvfs.FS) (*Store, error) and, on *Store, Put(key, value string) error and Get(key string) (string, bool)"

// StorePrelude hands the host the student's Put and Get as plain funcs,
// which it can call; the methods of an interpreted type it cannot. It
// marks the lines of the store's kvfs calls (Prelude.Lines).
var StorePrelude = Prelude{
	Code: `

func KvlabStore(fs kvfs.FS) (func(string, string) error, func(string) (string, bool), error) {
	s, err := Open(fs)
	if err != nil || s == nil {
		return nil, nil, err
	}
	return s.Put, s.Get, nil
}
`,
	Shape: StoreShape,
	Lines: true,
}

// Store is one open of a student's store. It is not safe for concurrent
// use: the student's code has no locks (Native serializes its calls).
type Store struct {
	put func(key, value string) error
	get func(key string) (string, bool)
}

// OpenStore calls the student's Open, in p loaded with StorePrelude, on
// fsys. A panic comes back as a *PanicError.
func OpenStore(p *Program, fsys kvfs.FS) (*Store, error) {
	ResetStudentLine()
	fn, ok := p.Lookup("KvlabStore")
	if !ok {
		return nil, &CodeError{Msg: StoreShape}
	}
	out, err := Call(fn, reflect.ValueOf(fsys))
	if err != nil {
		return nil, err
	}
	if e, _ := out[2].Interface().(error); e != nil {
		return nil, e
	}
	if out[0].IsNil() {
		return nil, fmt.Errorf("Open returned a nil *Store and no error")
	}
	s := &Store{}
	s.put = out[0].Convert(reflect.TypeOf(s.put)).Interface().(func(string, string) error)
	s.get = out[1].Convert(reflect.TypeOf(s.get)).Interface().(func(string) (string, bool))
	return s, nil
}

// Put calls the student's Put, turning a panic into a *PanicError.
func (s *Store) Put(key, value string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Msg: panicText(r)}
		}
	}()
	ResetStudentLine()
	return s.put(key, value)
}

// Get calls the student's Get, turning a panic into a *PanicError.
func (s *Store) Get(key string) (v string, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Msg: panicText(r)}
		}
	}()
	v, ok = s.get(key)
	return v, ok, nil
}
