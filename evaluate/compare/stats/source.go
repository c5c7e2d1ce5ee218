package stats

import (
	"encoding/binary"
	"math/rand/v2"
)

// Source is the generator of Stream(seed, labels...) in a form that the
// bootstrap and the sign-flip test draw from without an interface call per
// value: its Uint64 values are exactly those of the *rand.Rand that Stream
// returns (rand.ChaCha8, whose output the Go project keeps fixed). Where the
// CPU has AVX-512, it computes the ChaCha8 output itself, sixteen blocks at
// a time. A Source is not safe for concurrent use.
//
// rand.ChaCha8 (internal/chacha8rand) produces its stream in epochs: with
// one 32-byte seed it computes the ChaCha8 blocks of counters 0..15 (four
// at a time, interleaved word by word), returns the first 124 of their 128
// 64-bit words and takes the last 4 as the next epoch's seed.
type Source struct {
	buf      [128]uint64
	seed     [4]uint64
	i, n     int
	fallback *rand.ChaCha8 // epochs drawn from rand.ChaCha8 (no AVX-512)
}

// epochValues is the number of values of one epoch; the rest of it is the
// next seed.
const epochValues = 124

// NewSource returns the generator of Stream(seed, labels...).
func NewSource(seed uint64, labels ...string) *Source {
	return newSource(streamKey(seed, labels...), epochFunc == nil)
}

func newSource(key [32]byte, fallback bool) *Source {
	s := &Source{}
	if fallback {
		s.fallback = rand.NewChaCha8(key)
	}
	for i := range s.seed {
		s.seed[i] = binary.LittleEndian.Uint64(key[i*8:])
	}
	return s
}

// Uint64 returns the next value of the stream.
func (s *Source) Uint64() uint64 {
	if s.i == s.n {
		s.refill()
	}
	v := s.buf[s.i&127]
	s.i++
	return v
}

// refill computes the next epoch.
func (s *Source) refill() {
	if s.fallback != nil {
		for k := range epochValues {
			s.buf[k] = s.fallback.Uint64()
		}
	} else {
		epochFunc(&s.seed, &s.buf)
		copy(s.seed[:], s.buf[epochValues:])
	}
	s.i, s.n = 0, epochValues
}

// chunk returns the values not yet drawn of the current epoch (refilled
// when none are left) and marks them drawn; giveBack(k) returns the last k
// of them to the stream.
func (s *Source) chunk() []uint64 {
	if s.i == s.n {
		s.refill()
	}
	c := s.buf[s.i:s.n]
	s.i = s.n
	return c
}

func (s *Source) giveBack(k int) { s.i -= k }
