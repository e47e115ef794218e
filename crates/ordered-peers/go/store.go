package main

// The interface the workloads drive, implemented once per store (pebble.go,
// badger.go, bbolt.go), and the disk-usage walk.

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// visitFn receives one entry of a scan. key and value are valid only during the call.
type visitFn func(key, value []byte) error

// store is one open database. Every method may be called from several goroutines.
type store interface {
	// newBatch returns an empty write batch for one goroutine.
	newBatch() batch
	// get copies the value of key into dst (growing it if needed) and returns it;
	// found is false when the key is absent.
	get(key []byte, dst []byte) (value []byte, found bool, err error)
	// put writes one key on its own (one commit).
	put(key, value []byte) error
	// scan visits every entry, ascending or (reverse) descending.
	scan(reverse bool, visit visitFn) error
	// seek visits up to limit entries from the first key >= key, ascending.
	seek(key []byte, limit int, visit visitFn) error
	close() error
}

// batch collects puts and deletes and commits them atomically. The key and value
// slices must stay unchanged until commit returns; after commit the batch is empty
// and can be reused.
type batch interface {
	put(key, value []byte)
	del(key []byte)
	commit() error
	// close releases the batch.
	close()
}

// storeInfo describes a store for the rows and opens it.
type storeInfo struct {
	name       string
	config     func(cacheMB int) string
	durability string
	open       func(dir string, cacheMB int) (store, error)
}

func lookupStore(name string) (storeInfo, error) {
	switch name {
	case "pebble":
		return pebbleInfo, nil
	case "badger":
		return badgerInfo, nil
	case "bbolt":
		return bboltInfo, nil
	}
	return storeInfo{}, fmt.Errorf("unknown store %q (pebble, badger or bbolt)", name)
}

// diskBytes totals the files under dir. Each file counts min(apparent size, allocated
// blocks): badger keeps its mmapped value log and memtable files sparse and truncated
// to large sizes while open, and their apparent size would count space never written.
func diskBytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed by a background compaction meanwhile
		}
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		size := info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Blocks*512 < size {
			size = st.Blocks * 512
		}
		total += size
		return nil
	})
	return total, err
}
