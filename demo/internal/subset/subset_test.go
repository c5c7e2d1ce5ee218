package subset

import (
	"bytes"
	"errors"
	"testing"
)

func sample() *Subset {
	return &Subset{
		Rows: 2, Cols: 3,
		QueryPixels:   []byte{1, 2, 3, 4, 5, 6},
		QueryLabels:   []byte{9},
		GalleryPixels: []byte{0, 0, 0, 0, 0, 0, 7, 7, 7, 7, 7, 7},
		GalleryLabels: []byte{0, 3},
	}
}

func encode(t *testing.T, s *Subset) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, s); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTripIsReproducible(t *testing.T) {
	a, b := encode(t, sample()), encode(t, sample())
	if !bytes.Equal(a, b) {
		t.Fatal("two encodings differ")
	}
	got, err := Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	want := sample()
	if got.Rows != want.Rows || got.Cols != want.Cols ||
		!bytes.Equal(got.QueryPixels, want.QueryPixels) || !bytes.Equal(got.QueryLabels, want.QueryLabels) ||
		!bytes.Equal(got.GalleryPixels, want.GalleryPixels) || !bytes.Equal(got.GalleryLabels, want.GalleryLabels) {
		t.Fatalf("round trip: got %+v, want %+v", got, want)
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	good := encode(t, sample())
	patch := func(off int, b ...byte) []byte {
		p := bytes.Clone(good)
		copy(p[off:], b)
		return p
	}
	cases := map[string][]byte{
		"empty":          nil,
		"short header":   good[:headerSize-1],
		"bad magic":      patch(0, 'X'),
		"bad version":    patch(8, 2),
		"huge count":     patch(20, 0xff, 0xff, 0xff, 0x7f),
		"zero rows":      patch(12, 0),
		"bad label":      patch(headerSize+6, 10),
		"truncated data": good[:len(good)-1],
		"trailing data":  append(bytes.Clone(good), 0),
		"two files":      append(bytes.Clone(good), good...),
		// Plausible counts the data does not hold: refused before any
		// allocation (a fuzzed header once asked for 28 GB).
		"claims more": patch(20, 0, 0, 0x10, 0),
		"big sides":   patch(12, 0, 4, 0, 0, 0, 4),
	}
	for name, data := range cases {
		if _, err := Decode(data); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
}

// Decode returns copies: changing them leaves the file's bytes alone.
func TestDecodeCopies(t *testing.T) {
	good := encode(t, sample())
	orig := bytes.Clone(good)
	s, err := Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{s.QueryPixels, s.QueryLabels, s.GalleryPixels, s.GalleryLabels} {
		for i := range b {
			b[i]++
		}
	}
	if !bytes.Equal(good, orig) {
		t.Fatal("Decode returned views of its input")
	}
}

// Decode never panics, and what it accepts encodes back to the same bytes.
func FuzzDecode(f *testing.F) {
	good := encodeF(f, sample())
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := Encode(&buf, s); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), data) {
			t.Fatal("re-encoding differs from the accepted input")
		}
	})
}

func encodeF(f *testing.F, s *Subset) []byte {
	var buf bytes.Buffer
	if err := Encode(&buf, s); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}
