package subset

import (
	"bytes"
	"compress/gzip"
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

// gz compresses raw bytes, for hand-made malformed payloads.
func gz(raw []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	zw.Close()
	return buf.Bytes()
}

func TestDecodeRejectsMalformed(t *testing.T) {
	good := encode(t, sample())
	var raw bytes.Buffer
	zr, _ := gzip.NewReader(bytes.NewReader(good))
	raw.ReadFrom(zr)
	plain := raw.Bytes()

	patch := func(off int, b ...byte) []byte {
		p := bytes.Clone(plain)
		copy(p[off:], b)
		return gz(p)
	}
	cases := map[string][]byte{
		"empty":          nil,
		"not gzip":       plain,
		"bad magic":      patch(0, 'X'),
		"bad version":    patch(8, 2),
		"huge count":     patch(20, 0xff, 0xff, 0xff, 0x7f),
		"zero rows":      patch(12, 0),
		"bad label":      patch(headerSize+6, 10),
		"truncated data": gz(plain[:len(plain)-1]),
		"trailing data":  gz(append(bytes.Clone(plain), 0)),
		"trailing gzip":  append(bytes.Clone(good), 0),
		"truncated gzip": good[:len(good)-4],
		"second stream":  append(bytes.Clone(good), good...),
	}
	for name, data := range cases {
		if _, err := Decode(data); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
}
