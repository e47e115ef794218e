package main

// bbolt v1.5.0: one bucket, NoSync and NoFreelistSync (pages written with pwrite at
// commit, never fsynced), otherwise default options. A batch is one Update
// transaction (bbolt has a single writer: concurrent batches serialize); a get is one
// View transaction; scans use a cursor. There is no cache besides the OS page cache
// (bbolt reads through mmap).

import (
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

var bboltInfo = storeInfo{
	name:       "bbolt",
	durability: "NoSync=true, NoFreelistSync=true: pages written at commit, not fsynced",
	open:       openBbolt,
	config: func(int) string {
		return "bbolt v1.5.0 default options, one bucket, an Update txn per batch, no cache (mmap)"
	},
}

var bboltBucket = []byte("kv")

type bboltStore struct{ db *bolt.DB }

func openBbolt(dir string, _ int) (store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, "data.db"), 0o644,
		&bolt.Options{NoSync: true, NoFreelistSync: true})
	if err != nil {
		return nil, fmt.Errorf("bbolt open: %w", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bboltBucket)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return &bboltStore{db: db}, nil
}

func (s *bboltStore) newBatch() batch { return &bboltBatch{db: s.db} }

func (s *bboltStore) get(key, dst []byte) (out []byte, found bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bboltBucket).Get(key)
		found = v != nil
		out = append(dst[:0], v...) // v is only valid inside the transaction
		return nil
	})
	return out, found, err
}

func (s *bboltStore) put(key, value []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bboltBucket).Put(key, value) })
}

func (s *bboltStore) scan(reverse bool, visit visitFn) error {
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bboltBucket).Cursor()
		var k, v []byte
		if reverse {
			k, v = c.Last()
		} else {
			k, v = c.First()
		}
		for k != nil {
			if err := visit(k, v); err != nil {
				return err
			}
			if reverse {
				k, v = c.Prev()
			} else {
				k, v = c.Next()
			}
		}
		return nil
	})
}

func (s *bboltStore) seek(key []byte, limit int, visit visitFn) error {
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bboltBucket).Cursor()
		n := 0
		for k, v := c.Seek(key); k != nil && n < limit; k, v = c.Next() {
			if err := visit(k, v); err != nil {
				return err
			}
			n++
		}
		return nil
	})
}

func (s *bboltStore) close() error { return s.db.Close() }

// bboltBatch collects operations and applies them in one Update transaction.
type bboltBatch struct {
	db  *bolt.DB
	ops []bboltOp
}

type bboltOp struct {
	key, value []byte
	del        bool
}

func (b *bboltBatch) put(key, value []byte) { b.ops = append(b.ops, bboltOp{key: key, value: value}) }
func (b *bboltBatch) del(key []byte)        { b.ops = append(b.ops, bboltOp{key: key, del: true}) }

func (b *bboltBatch) commit() error {
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bboltBucket)
		for _, op := range b.ops {
			var err error
			if op.del {
				err = bk.Delete(op.key)
			} else {
				err = bk.Put(op.key, op.value)
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

func (b *bboltBatch) close() {}
