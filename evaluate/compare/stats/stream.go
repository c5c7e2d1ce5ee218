package stats

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
)

// Stream returns a generator whose stream is fixed by seed and labels (for
// example a metric, a direction and the names of a result pair): its
// ChaCha8 key is SHA-256 of the seed and the length-prefixed labels. A
// comparison draws each (pair, metric, direction) from its own stream, so
// its numbers do not depend on which other pairs exist, on the order in
// which they are computed or on the number of threads (SPEC §13).
func Stream(seed uint64, labels ...string) *rand.Rand {
	return rand.New(rand.NewChaCha8(streamKey(seed, labels...)))
}

// streamKey is the ChaCha8 key of Stream(seed, labels...).
func streamKey(seed uint64, labels ...string) [32]byte {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	for _, l := range labels {
		binary.LittleEndian.PutUint64(b[:], uint64(len(l)))
		h.Write(b[:])
		h.Write([]byte(l))
	}
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return key
}

// indexSource draws bounded integers two at a time from each 64-bit
// output (bootstrap indices dominate the cost of a comparison).
type indexSource struct {
	r    *rand.Rand
	src  *Source // used instead of r when set
	buf  uint64
	have bool
}

func (s *indexSource) uint64() uint64 {
	if s.src != nil {
		return s.src.Uint64()
	}
	return s.r.Uint64()
}

// next32 returns 32 fresh random bits.
func (s *indexSource) next32() uint64 {
	if s.have {
		s.have = false
		return s.buf >> 32
	}
	s.buf = s.uint64()
	s.have = true
	return s.buf & 0xffffffff
}

// index draws an integer in [0, n), n < 2^32, with Lemire's method on 32
// bits (exactly uniform: draws in the biased low range are rejected).
func (s *indexSource) index(n uint64) uint64 {
	m := s.next32() * n
	if m&0xffffffff < n {
		thresh := (1<<32 - n) % n
		for m&0xffffffff < thresh {
			m = s.next32() * n
		}
	}
	return m >> 32
}

// fill draws len(dst) integers in [0, n), n < 2^32, exactly as that many
// calls of index: the same 32-bit halves in the same order, the same
// rejections, and a half left over for the next call. Bootstrap resamples
// draw ten million indices each; taking both halves of an output in one
// step, with the rejection threshold computed once, is what makes it
// cheaper. Lemire's first test (low bits below n) is implied by the second
// (below (2^32 − n) mod n < n), so one comparison decides a draw.
func (s *indexSource) fill(dst []int, n uint64) {
	const mask = 0xffffffff
	thresh := (1<<32 - n) % n
	j := 0
	if s.have && len(dst) > 0 {
		s.have = false
		if m := (s.buf >> 32) * n; m&mask >= thresh {
			dst[0] = int(m >> 32)
			j = 1
		}
	}
	for j < len(dst) {
		u := s.uint64()
		if m := (u & mask) * n; m&mask >= thresh {
			dst[j] = int(m >> 32)
			j++
			if j == len(dst) {
				s.buf, s.have = u, true // the high half is the next draw's
				return
			}
		}
		if m := (u >> 32) * n; m&mask >= thresh {
			dst[j] = int(m >> 32)
			j++
		}
	}
}

// sumFixed draws len(v) indices i in [0, len(v)), len(v) < 2^32, exactly as
// fill(dst, len(v)) does (same halves, same rejections, same half left
// over), and returns Σ v[i] over them (exact: int128 addition is order-free
// anyway). A bootstrap resample needs only this sum.
func (s *indexSource) sumFixed(v []int128) int128 {
	const mask = 0xffffffff
	n := uint64(len(v))
	if n == 0 {
		return int128{}
	}
	thresh := (1<<32 - n) % n
	if s.src != nil {
		return s.sumFixedChunks(v, thresh)
	}
	var hi, lo, c uint64
	j := 0
	if s.have {
		s.have = false
		if m := (s.buf >> 32) * n; m&mask >= thresh {
			x := v[m>>32]
			lo, c = bits.Add64(lo, x.lo, 0)
			hi += x.hi + c
			j = 1
		}
	}
	for j < len(v) {
		u := s.r.Uint64()
		if m := (u & mask) * n; m&mask >= thresh {
			x := v[m>>32]
			lo, c = bits.Add64(lo, x.lo, 0)
			hi += x.hi + c
			j++
			if j == len(v) {
				s.buf, s.have = u, true // the high half is the next draw's
				break
			}
		}
		if m := (u >> 32) * n; m&mask >= thresh {
			x := v[m>>32]
			lo, c = bits.Add64(lo, x.lo, 0)
			hi += x.hi + c
			j++
		}
	}
	return int128{hi, lo}
}

// sumFixedChunks is sumFixed drawing from s.src a whole epoch at a time.
func (s *indexSource) sumFixedChunks(v []int128, thresh uint64) int128 {
	const mask = 0xffffffff
	n := uint64(len(v))
	var hi, lo, c uint64
	j := 0
	if s.have {
		s.have = false
		if m := (s.buf >> 32) * n; m&mask >= thresh {
			x := v[m>>32]
			lo, c = bits.Add64(lo, x.lo, 0)
			hi += x.hi + c
			j = 1
		}
	}
	for j < len(v) {
		words := s.src.chunk()
		if len(v)-j > 2*len(words) {
			// The resample cannot end inside this epoch: no end test per
			// draw, and the two halves of a value on separate sums.
			var hi1, lo1, c1 uint64
			k := 0
			for _, u := range words {
				if m := (u & mask) * n; m&mask >= thresh {
					x := v[m>>32]
					lo, c = bits.Add64(lo, x.lo, 0)
					hi += x.hi + c
					k++
				}
				if m := (u >> 32) * n; m&mask >= thresh {
					x := v[m>>32]
					lo1, c1 = bits.Add64(lo1, x.lo, 0)
					hi1 += x.hi + c1
					k++
				}
			}
			lo, c = bits.Add64(lo, lo1, 0)
			hi += hi1 + c
			j += k
			continue
		}
		for w, u := range words {
			if m := (u & mask) * n; m&mask >= thresh {
				x := v[m>>32]
				lo, c = bits.Add64(lo, x.lo, 0)
				hi += x.hi + c
				j++
				if j == len(v) {
					s.buf, s.have = u, true // the high half is the next draw's
					s.src.giveBack(len(words) - w - 1)
					return int128{hi, lo}
				}
			}
			if m := (u >> 32) * n; m&mask >= thresh {
				x := v[m>>32]
				lo, c = bits.Add64(lo, x.lo, 0)
				hi += x.hi + c
				j++
				if j == len(v) {
					s.src.giveBack(len(words) - w - 1)
					return int128{hi, lo}
				}
			}
		}
	}
	return int128{hi, lo}
}

// uniformIndex draws an integer in [0, n) from r.Uint64 with Lemire's
// multiply-and-reject method. It is written here rather than taken from
// rand.IntN so that the resamples depend only on the ChaCha8 stream, whose
// output the Go project keeps fixed, and not on how a Go release maps it to
// bounded integers.
func uniformIndex(r interface{ Uint64() uint64 }, n uint64) uint64 {
	hi, lo := bits.Mul64(r.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.Uint64(), n)
		}
	}
	return hi
}
