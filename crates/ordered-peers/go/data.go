package main

// Data generation shared by every workload: the splitmix64 RNG, the 16-byte decimal
// keys, the fillrandom permutation and the compressible value buffer. See
// crates/ordered-peers/README.md, "Workloads".

import "math/bits"

// rng is splitmix64.
type rng struct{ state uint64 }

func (r *rng) next() uint64 {
	r.state += 0x9E3779B97F4A7C15
	z := r.state
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// below returns a uniform number in [0, n): (u128(next) * n) >> 64.
func (r *rng) below(n uint64) uint64 {
	hi, _ := bits.Mul64(r.next(), n)
	return hi
}

// threadRNG is the RNG of thread t of workload w: seeded with
// seed ^ ((w*16 + t + 1) * 0xD1B54A32D192ED03), one output discarded.
func threadRNG(seed uint64, w, t int) *rng {
	r := &rng{state: seed ^ ((uint64(w)*16 + uint64(t) + 1) * 0xD1B54A32D192ED03)}
	r.next()
	return r
}

// keyLen is the length of every key.
const keyLen = 16

// putKey writes key number k as 16 zero-padded ASCII decimal digits (`%016d`).
func putKey(dst []byte, k uint64) {
	for i := keyLen - 1; i >= 0; i-- {
		dst[i] = byte('0' + k%10)
		k /= 10
	}
}

// perm is the fillrandom permutation: (i * 2654435761) mod n, a bijection of [0, n)
// because 2654435761 is prime and n is smaller.
func perm(i, n uint64) uint64 {
	hi, lo := bits.Mul64(i, 2654435761)
	_, rem := bits.Div64(hi%n, lo, n)
	return rem
}

// makeValueBuffer builds the shared value buffer: max(1 MiB, valueSize) bytes of
// 100-byte pieces, each 50 random printable ASCII bytes written twice (so values
// compress to about half).
func makeValueBuffer(seed uint64, valueSize int) []byte {
	size := 1 << 20
	if valueSize > size {
		size = valueSize
	}
	buf := make([]byte, size)
	r := &rng{state: seed}
	r.next()
	var piece [50]byte
	for off := 0; off < size; off += 100 {
		for i := range piece {
			piece[i] = ' ' + byte(r.below(95))
		}
		n := copy(buf[off:], piece[:])
		copy(buf[off+n:], piece[:])
	}
	return buf
}

// valueGen hands out consecutive valueSize slices of the shared buffer, wrapping at
// its end. One per thread; the slices are read-only and stay valid forever.
type valueGen struct {
	buf  []byte
	size int
	pos  int
}

func (g *valueGen) next() []byte {
	if g.pos+g.size > len(g.buf) {
		g.pos = 0
	}
	v := g.buf[g.pos : g.pos+g.size]
	g.pos += g.size
	return v
}
