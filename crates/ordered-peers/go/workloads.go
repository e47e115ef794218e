package main

// The workloads of crates/ordered-peers/README.md. Thread t of T owns the index range
// [t*X/T, (t+1)*X/T) of a workload of X operations; each thread has its own RNG,
// value generator and histograms; a latency sample is the time since the previous
// operation of the same thread ended (one per batch for batched writes).

import (
	"bytes"
	"fmt"
	"sync"
	"time"
)

// ordered is the full ordered list, in the order the workloads run.
var ordered = []string{"fillseq", "fillrandom", "overwrite", "readrandom", "readmissing",
	"readseq", "readreverse", "seekrandom", "readwrite95", "readwrite50", "putrandom", "deleterandom"}

// seeded numbers the workloads for their threads' RNGs: the list as it was before
// readmissing joined it, then readmissing, so the others draw the keys they drew before
// (src/workload.rs, Workload::seed_index, numbers them alike).
var seeded = []string{"fillseq", "fillrandom", "overwrite", "readrandom", "readseq",
	"readreverse", "seekrandom", "readwrite95", "readwrite50", "putrandom", "deleterandom",
	"readmissing"}

// workloadIndex is the seed number of the workload called name, or -1 if there is none.
func workloadIndex(name string) int {
	for i, n := range seeded {
		if n == name {
			return i
		}
	}
	return -1
}

// env is what a workload runs against.
type env struct {
	st        store
	keys      uint64 // keys in the key space (N)
	reads     uint64 // R: gets of readrandom, operations of readwrite*
	threads   int
	batch     int // puts per batch for batched writes
	valueSize int
	values    []byte // the shared value buffer
	seed      uint64
}

// outcome is one workload's measurement.
type outcome struct {
	name    string
	ops     int64
	seconds float64
	found   *int64
	batch   int
	lat     *hist
	write   *hist // readwrite*: write latencies only
}

// tstate is one thread's state and tallies.
type tstate struct {
	t          int
	lo, hi     uint64 // index range owned
	rng        *rng
	vals       valueGen
	clk        clock
	h, wh      *hist
	ops, found int64
	buf        []byte // reused read buffer
	start, end time.Time
}

// runThreads runs body on env.threads goroutines over x operations and merges their
// tallies. Wall time runs from the first thread's start to the last thread's end.
func (e *env) runThreads(name string, x uint64, body func(s *tstate) error) (outcome, error) {
	w := workloadIndex(name)
	T := uint64(e.threads)
	states := make([]*tstate, e.threads)
	errs := make([]error, e.threads)
	var wg sync.WaitGroup
	for t := range states {
		s := &tstate{
			t: t, lo: uint64(t) * x / T, hi: (uint64(t) + 1) * x / T,
			rng:  threadRNG(e.seed, w, t),
			vals: valueGen{buf: e.values, size: e.valueSize},
			h:    newHist(), wh: newHist(),
			buf: make([]byte, 0, e.valueSize),
		}
		states[t] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.start = time.Now()
			s.clk = clock{last: s.start}
			errs[t] = body(s)
			s.end = time.Now()
		}()
	}
	wg.Wait()
	out := outcome{name: name, lat: newHist(), write: newHist(), batch: 1}
	var first, last time.Time
	var found int64
	for i, s := range states {
		if errs[i] != nil {
			return out, fmt.Errorf("%s thread %d: %w", name, i, errs[i])
		}
		if i == 0 || s.start.Before(first) {
			first = s.start
		}
		if i == 0 || s.end.After(last) {
			last = s.end
		}
		out.ops += s.ops
		found += s.found
		out.lat.merge(s.h)
		out.write.merge(s.wh)
	}
	out.seconds = last.Sub(first).Seconds()
	out.found = &found
	return out, nil
}

// checkValue fails unless a value read back has exactly the value size.
func (e *env) checkValue(key, v []byte) error {
	if len(v) != e.valueSize {
		return fmt.Errorf("key %s: value of %d bytes, want %d", key, len(v), e.valueSize)
	}
	return nil
}

// write puts (or deletes) x keys in batches of e.batch; key(s, i) gives the key
// number for index i of the thread's range.
func (e *env) write(name string, x uint64, del bool, key func(s *tstate, i uint64) uint64) (outcome, error) {
	out, err := e.runThreads(name, x, func(s *tstate) error {
		b := e.st.newBatch()
		defer b.close()
		arena := make([]byte, e.batch*keyLen)
		for i := s.lo; i < s.hi; {
			n := 0
			for ; n < e.batch && i < s.hi; n, i = n+1, i+1 {
				k := arena[n*keyLen : (n+1)*keyLen]
				putKey(k, key(s, i))
				if del {
					b.del(k)
				} else {
					b.put(k, s.vals.next())
				}
			}
			if err := b.commit(); err != nil {
				return err
			}
			s.ops += int64(n)
			s.h.record(s.clk.tick())
		}
		return nil
	})
	out.found, out.batch = nil, e.batch
	return out, err
}

func (e *env) fillseq() (outcome, error) {
	return e.write("fillseq", e.keys, false, func(_ *tstate, i uint64) uint64 { return i })
}

func (e *env) fillrandom() (outcome, error) {
	return e.write("fillrandom", e.keys, false, func(_ *tstate, i uint64) uint64 { return perm(i, e.keys) })
}

func (e *env) overwrite() (outcome, error) {
	return e.write("overwrite", e.keys, false, func(s *tstate, _ uint64) uint64 { return s.rng.below(e.keys) })
}

func (e *env) deleterandom() (outcome, error) {
	return e.write("deleterandom", e.keys, true, func(s *tstate, _ uint64) uint64 { return s.rng.below(e.keys) })
}

// readrandom does x gets of random keys and fails unless every one is found.
func (e *env) readrandom(x uint64) (outcome, error) {
	out, err := e.runThreads("readrandom", x, func(s *tstate) error {
		var key [keyLen]byte
		for i := s.lo; i < s.hi; i++ {
			putKey(key[:], s.rng.below(e.keys))
			v, found, err := e.st.get(key[:], s.buf)
			if err != nil {
				return err
			}
			if found {
				if err := e.checkValue(key[:], v); err != nil {
					return err
				}
				s.found++
				s.buf = v
			}
			s.ops++
			s.h.record(s.clk.tick())
		}
		return nil
	})
	if err == nil && *out.found != out.ops {
		err = fmt.Errorf("readrandom found %d of %d keys", *out.found, out.ops)
	}
	return out, err
}

// readmissing does x gets of keys never written, each between two written keys (a written
// key's digits with the last one replaced by 'x'), and fails if any is found.
func (e *env) readmissing(x uint64) (outcome, error) {
	out, err := e.runThreads("readmissing", x, func(s *tstate) error {
		var key [keyLen]byte
		for i := s.lo; i < s.hi; i++ {
			putKey(key[:], s.rng.below(e.keys))
			key[keyLen-1] = 'x'
			_, found, err := e.st.get(key[:], s.buf)
			if err != nil {
				return err
			}
			if found {
				return fmt.Errorf("readmissing: key %s was never written but was found", key[:])
			}
			s.ops++
			s.h.record(s.clk.tick())
		}
		return nil
	})
	return out, err
}

// scan has every thread scan the whole store; each must see every one of the keys.
func (e *env) scan(reverse bool) (outcome, error) {
	name := "readseq"
	if reverse {
		name = "readreverse"
	}
	out, err := e.runThreads(name, uint64(e.threads), func(s *tstate) error {
		buf := make([]byte, e.valueSize)
		var n int64
		err := e.st.scan(reverse, func(k, v []byte) error {
			if err := e.checkValue(k, v); err != nil {
				return err
			}
			copy(buf, v)
			n++
			s.h.record(s.clk.tick())
			return nil
		})
		if err != nil {
			return err
		}
		if n != int64(e.keys) {
			return fmt.Errorf("scan saw %d entries, want %d", n, e.keys)
		}
		s.ops += n
		return nil
	})
	out.found = nil
	return out, err
}

// seekrandom does x seeks to random keys, reading up to 10 entries from each; the
// first entry must be the key sought (every key is present). found = entries read.
func (e *env) seekrandom(x uint64) (outcome, error) {
	return e.runThreads("seekrandom", x, func(s *tstate) error {
		var key [keyLen]byte
		buf := make([]byte, e.valueSize)
		for i := s.lo; i < s.hi; i++ {
			putKey(key[:], s.rng.below(e.keys))
			n := 0
			err := e.st.seek(key[:], 10, func(k, v []byte) error {
				if n == 0 && !bytes.Equal(k, key[:]) {
					return fmt.Errorf("seek to %s landed on %s", key[:], k)
				}
				if err := e.checkValue(k, v); err != nil {
					return err
				}
				copy(buf, v)
				n++
				return nil
			})
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("seek to %s found nothing", key[:])
			}
			s.found += int64(n)
			s.ops++
			s.h.record(s.clk.tick())
		}
		return nil
	})
}

// readwrite does x operations, each a get (readPct %) or a single put of a random
// key; every get must find its key. Write latencies also go to a separate histogram.
func (e *env) readwrite(readPct uint64) (outcome, error) {
	name := fmt.Sprintf("readwrite%d", readPct)
	var gets int64
	var mu sync.Mutex
	out, err := e.runThreads(name, e.reads, func(s *tstate) error {
		var key [keyLen]byte
		var g int64
		for i := s.lo; i < s.hi; i++ {
			read := s.rng.below(100) < readPct
			putKey(key[:], s.rng.below(e.keys))
			if read {
				v, found, err := e.st.get(key[:], s.buf)
				if err != nil {
					return err
				}
				if found {
					if err := e.checkValue(key[:], v); err != nil {
						return err
					}
					s.found++
					s.buf = v
				}
				g++
				s.ops++
				s.h.record(s.clk.tick())
			} else {
				if err := e.st.put(key[:], s.vals.next()); err != nil {
					return err
				}
				s.ops++
				d := s.clk.tick()
				s.h.record(d)
				s.wh.record(d)
			}
		}
		mu.Lock()
		gets += g
		mu.Unlock()
		return nil
	})
	if err == nil && *out.found != gets {
		err = fmt.Errorf("%s found %d of %d keys read", name, *out.found, gets)
	}
	return out, err
}

// putrandom does N single unbatched puts of random keys.
func (e *env) putrandom() (outcome, error) {
	out, err := e.runThreads("putrandom", e.keys, func(s *tstate) error {
		var key [keyLen]byte
		for i := s.lo; i < s.hi; i++ {
			putKey(key[:], s.rng.below(e.keys))
			if err := e.st.put(key[:], s.vals.next()); err != nil {
				return err
			}
			s.ops++
			s.h.record(s.clk.tick())
		}
		return nil
	})
	out.found = nil
	return out, err
}
