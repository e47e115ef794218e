package main

// badger v4.9.6: DefaultOptions(dir) (SyncWrites=false, ValueThreshold 1 MiB: values
// of 1 MiB and more go to the value log, smaller ones stay in the LSM tree, Snappy
// compression), BlockCacheSize = --cache-mb MiB, no logger. A batch is one read-write
// transaction (db.Update), so its commit has happened when the latency sample is
// taken; gets are one read-only transaction each (db.View).

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

var badgerInfo = storeInfo{
	name:       "badger",
	durability: "SyncWrites=false: value log / memtable WAL written (mmap), not fsynced",
	open:       openBadger,
	config: func(cacheMB int) string {
		return fmt.Sprintf("badger v4.9.6 DefaultOptions (ValueThreshold 1 MiB), block cache %d MiB, a txn per batch", cacheMB)
	},
}

type badgerStore struct{ db *badger.DB }

func openBadger(dir string, cacheMB int) (store, error) {
	opts := badger.DefaultOptions(dir).
		WithSyncWrites(false).
		WithBlockCacheSize(int64(cacheMB) << 20).
		WithLogger(nil)
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("badger open: %w", err)
	}
	return &badgerStore{db: db}, nil
}

func (s *badgerStore) newBatch() batch { return &badgerBatch{db: s.db} }

func (s *badgerStore) get(key, dst []byte) (out []byte, found bool, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			out = dst[:0]
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		out, err = item.ValueCopy(dst[:0])
		return err
	})
	return out, found, err
}

func (s *badgerStore) put(key, value []byte) error {
	return s.db.Update(func(txn *badger.Txn) error { return txn.Set(key, value) })
}

// iterate runs fn over an iterator of a read-only transaction.
func (s *badgerStore) iterate(opts badger.IteratorOptions, fn func(it *badger.Iterator) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(opts)
		defer it.Close()
		return fn(it)
	})
}

// visitItem hands the item's key and value (read in place) to visit.
func visitItem(item *badger.Item, visit visitFn) error {
	return item.Value(func(v []byte) error { return visit(item.Key(), v) })
}

// scan uses DefaultIteratorOptions (values prefetched, 100 at a time), badger's
// recommended setting for a full iteration; Reverse for descending.
func (s *badgerStore) scan(reverse bool, visit visitFn) error {
	opts := badger.DefaultIteratorOptions
	opts.Reverse = reverse
	return s.iterate(opts, func(it *badger.Iterator) error {
		for it.Rewind(); it.Valid(); it.Next() {
			if err := visitItem(it.Item(), visit); err != nil {
				return err
			}
		}
		return nil
	})
}

// seek reads at most limit entries, so values are not prefetched (prefetching would
// read 100 of them); each visited value is read with Item.Value.
func (s *badgerStore) seek(key []byte, limit int, visit visitFn) error {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	return s.iterate(opts, func(it *badger.Iterator) error {
		n := 0
		for it.Seek(key); it.Valid() && n < limit; it.Next() {
			if err := visitItem(it.Item(), visit); err != nil {
				return err
			}
			n++
		}
		return nil
	})
}

func (s *badgerStore) close() error { return s.db.Close() }

// badgerBatch collects operations and applies them in one db.Update transaction.
type badgerBatch struct {
	db  *badger.DB
	ops []badgerOp
}

type badgerOp struct {
	key, value []byte
	del        bool
}

func (b *badgerBatch) put(key, value []byte) { b.ops = append(b.ops, badgerOp{key: key, value: value}) }
func (b *badgerBatch) del(key []byte)        { b.ops = append(b.ops, badgerOp{key: key, del: true}) }

func (b *badgerBatch) commit() error {
	err := b.db.Update(func(txn *badger.Txn) error {
		for _, op := range b.ops {
			var err error
			if op.del {
				err = txn.Delete(op.key)
			} else {
				err = txn.Set(op.key, op.value)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	b.ops = b.ops[:0]
	return err
}

func (b *badgerBatch) close() {}
