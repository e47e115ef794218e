package main

// pebble v2.1.7: defaults except the block cache (--cache-mb); every commit uses
// pebble.NoSync (the WAL is written, not fsynced).

import (
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
)

var pebbleInfo = storeInfo{
	name:       "pebble",
	durability: "NoSync commits: WAL written, not fsynced",
	open:       openPebble,
	config: func(cacheMB int) string {
		return fmt.Sprintf("pebble v2.1.7 defaults, block cache %d MiB", cacheMB)
	},
}

type pebbleStore struct{ db *pebble.DB }

func openPebble(dir string, cacheMB int) (store, error) {
	cache := pebble.NewCache(int64(cacheMB) << 20)
	defer cache.Unref() // the DB holds its own reference
	db, err := pebble.Open(dir, &pebble.Options{Cache: cache, Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("pebble open: %w", err)
	}
	return &pebbleStore{db: db}, nil
}

// quietLogger drops pebble's informational messages ("Found 0 WALs") and keeps errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Errorf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(1)
}

func (s *pebbleStore) newBatch() batch { return &pebbleBatch{db: s.db, b: s.db.NewBatch()} }

func (s *pebbleStore) get(key, dst []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst[:0], false, nil
	}
	if err != nil {
		return nil, false, err
	}
	dst = append(dst[:0], v...)
	return dst, true, closer.Close()
}

func (s *pebbleStore) put(key, value []byte) error { return s.db.Set(key, value, pebble.NoSync) }

func (s *pebbleStore) scan(reverse bool, visit visitFn) error {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return err
	}
	var valid bool
	if reverse {
		valid = it.Last()
	} else {
		valid = it.First()
	}
	for ; valid; valid = step(it, reverse) {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return err
		}
		if err := visit(it.Key(), v); err != nil {
			_ = it.Close()
			return err
		}
	}
	return errors.Join(it.Error(), it.Close())
}

func step(it *pebble.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

func (s *pebbleStore) seek(key []byte, limit int, visit visitFn) error {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return err
	}
	n := 0
	for valid := it.SeekGE(key); valid && n < limit; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return err
		}
		if err := visit(it.Key(), v); err != nil {
			_ = it.Close()
			return err
		}
		n++
	}
	return errors.Join(it.Error(), it.Close())
}

func (s *pebbleStore) close() error { return s.db.Close() }

// pebbleBatch wraps a pebble.Batch, which copies keys and values when they are added.
type pebbleBatch struct {
	db *pebble.DB
	b  *pebble.Batch
}

func (b *pebbleBatch) put(key, value []byte) { _ = b.b.Set(key, value, nil) }
func (b *pebbleBatch) del(key []byte)        { _ = b.b.Delete(key, nil) }

// commit commits with NoSync; a committed pebble batch cannot be reused, so the next
// one comes from db.NewBatch (pebble pools batches internally).
func (b *pebbleBatch) commit() error {
	err := b.b.Commit(pebble.NoSync)
	cerr := b.b.Close()
	b.b = b.db.NewBatch()
	return errors.Join(err, cerr)
}

func (b *pebbleBatch) close() { _ = b.b.Close() }
