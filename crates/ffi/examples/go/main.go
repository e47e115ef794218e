// A Go program using libcairn through cgo: it opens a store, writes a batch, reads a key
// back and scans a keyspace forward and in reverse. Only the standard library and cgo.
//
// Build against a built libcairn (see ../../README.md):
//
//	CGO_LDFLAGS="-L$LIBDIR -Wl,-rpath,$LIBDIR" go build -o cairn-example .
//	./cairn-example /tmp/fruit-store
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: -lcairn
#include <stdlib.h>
#include "cairn.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"
)

// status turns a libcairn status and its message into a Go error (nil for OK and
// NOT_FOUND), freeing the message.
func status(st C.cairn_status_t, msg *C.char) error {
	if st == C.CAIRN_OK || st == C.CAIRN_NOT_FOUND {
		return nil
	}
	defer C.cairn_free(msg)
	return fmt.Errorf("%s: %s", C.GoString(C.cairn_status_name(st)), C.GoString(msg))
}

// bytes passes a Go byte slice as `const char *` + length (Go memory holding no Go
// pointers may be passed to C for the duration of the call).
func bytes(b []byte) (*C.char, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.char)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

type Store struct{ db *C.cairn_db_t }
type Keyspace struct{ ks *C.cairn_keyspace_t }

func Open(path string) (*Store, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	opts := C.cairn_options_create()
	defer C.cairn_options_destroy(opts)
	var msg *C.char
	if err := status(C.cairn_options_set_durability(opts, C.CAIRN_DURABILITY_BUFFERED, 0, &msg), msg); err != nil {
		return nil, err
	}
	var db *C.cairn_db_t
	if err := status(C.cairn_db_open(opts, cpath, &db, &msg), msg); err != nil {
		return nil, err
	}
	return &Store{db}, nil
}

func (s *Store) Close() error {
	var msg *C.char
	err := status(C.cairn_db_close(s.db, &msg), msg)
	C.cairn_db_destroy(s.db)
	return err
}

func (s *Store) Keyspace(name string) (*Keyspace, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var ks *C.cairn_keyspace_t
	var msg *C.char
	if err := status(C.cairn_keyspace_open(s.db, cname, &ks, &msg), msg); err != nil {
		return nil, err
	}
	return &Keyspace{ks}, nil
}

func (k *Keyspace) Destroy() { C.cairn_keyspace_destroy(k.ks) }

// PutAll writes every pair in one atomic batch.
func (s *Store) PutAll(k *Keyspace, pairs [][2]string) error {
	var batch *C.cairn_batch_t
	var msg *C.char
	if err := status(C.cairn_batch_create(s.db, &batch, &msg), msg); err != nil {
		return err
	}
	defer C.cairn_batch_destroy(batch)
	for _, p := range pairs {
		kp, kl := bytes([]byte(p[0]))
		vp, vl := bytes([]byte(p[1]))
		if err := status(C.cairn_batch_put(batch, k.ks, kp, kl, vp, vl, &msg), msg); err != nil {
			return err
		}
	}
	return status(C.cairn_batch_commit(batch, nil, &msg), msg)
}

// Get returns the value of key, or nil and false if it is absent.
func (k *Keyspace) Get(key []byte) ([]byte, bool, error) {
	kp, kl := bytes(key)
	var value *C.char
	var n C.size_t
	var msg *C.char
	st := C.cairn_get(k.ks, nil, kp, kl, &value, &n, &msg)
	if err := status(st, msg); err != nil || st == C.CAIRN_NOT_FOUND {
		return nil, false, err
	}
	defer C.cairn_free(value)
	return C.GoBytes(unsafe.Pointer(value), C.int(n)), true, nil
}

// Scan calls f for each pair with the prefix, in key order or in reverse.
func (k *Keyspace) Scan(prefix string, reverse bool, f func(key, value []byte)) error {
	pp, pl := bytes([]byte(prefix))
	rev := C.uint8_t(0)
	if reverse {
		rev = 1
	}
	var it *C.cairn_iter_t
	var msg *C.char
	if err := status(C.cairn_iter_prefix(k.ks, nil, pp, pl, rev, &it, &msg), msg); err != nil {
		return err
	}
	defer C.cairn_iter_destroy(it)
	for {
		st := C.cairn_iter_next(it, &msg)
		if st != C.CAIRN_OK {
			return status(st, msg)
		}
		var kp, vp *C.char
		var kl, vl C.size_t
		if err := status(C.cairn_iter_key(it, &kp, &kl, &msg), msg); err != nil {
			return err
		}
		if err := status(C.cairn_iter_value(it, &vp, &vl, &msg), msg); err != nil {
			return err
		}
		f(C.GoBytes(unsafe.Pointer(kp), C.int(kl)), C.GoBytes(unsafe.Pointer(vp), C.int(vl)))
	}
}

func run(path string) error {
	store, err := Open(path)
	if err != nil {
		return err
	}
	fruit, err := store.Keyspace("fruit")
	if err != nil {
		store.Close()
		return err
	}
	defer func() {
		fruit.Destroy()
		if err := store.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
		}
	}()
	pairs := [][2]string{{"apple", "red"}, {"banana", "yellow"}, {"blueberry", "blue"}, {"cherry", "dark red"}}
	if err := store.PutAll(fruit, pairs); err != nil {
		return err
	}
	if v, ok, err := fruit.Get([]byte("banana")); err != nil {
		return err
	} else {
		fmt.Printf("get banana: %s (found=%v)\n", v, ok)
	}
	if _, ok, err := fruit.Get([]byte("durian")); err != nil {
		return err
	} else {
		fmt.Printf("get durian: found=%v\n", ok)
	}
	show := func(k, v []byte) { fmt.Printf("  %s=%s\n", k, v) }
	fmt.Println("scan all:")
	if err := fruit.Scan("", false, show); err != nil {
		return err
	}
	fmt.Println("scan prefix b, reverse:")
	return fruit.Scan("b", true, show)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cairn-example STORE_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
