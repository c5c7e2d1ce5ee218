package subset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Magic and Version identify the layout above.
const (
	Magic   = "VTBFMNST"
	Version = 1

	headerSize = len(Magic) + 5*4
	// NumClasses is the number of Fashion-MNIST classes; labels are below it.
	NumClasses = 10
	// maxImages bounds the counts read from a header before allocating.
	maxImages = 1 << 20
	maxSide   = 1 << 10
)

// ErrFormat reports a malformed subset file.
var ErrFormat = errors.New("malformed Fashion-MNIST subset")

// Subset is the decoded content: pixels are n*Rows*Cols bytes, labels n bytes.
type Subset struct {
	Rows, Cols    int
	QueryPixels   []byte
	QueryLabels   []byte
	GalleryPixels []byte
	GalleryLabels []byte
}

// NumQueries returns the number of query images.
func (s *Subset) NumQueries() int { return len(s.QueryLabels) }

// NumGallery returns the number of gallery images.
func (s *Subset) NumGallery() int { return len(s.GalleryLabels) }

func (s *Subset) validate() error {
	if s.Rows <= 0 || s.Cols <= 0 || s.Rows > maxSide || s.Cols > maxSide {
		return fmt.Errorf("%w: image size %dx%d", ErrFormat, s.Rows, s.Cols)
	}
	px := s.Rows * s.Cols
	if len(s.QueryPixels) != len(s.QueryLabels)*px || len(s.GalleryPixels) != len(s.GalleryLabels)*px {
		return fmt.Errorf("%w: pixel and label counts disagree", ErrFormat)
	}
	if len(s.QueryLabels) > maxImages || len(s.GalleryLabels) > maxImages {
		return fmt.Errorf("%w: too many images", ErrFormat)
	}
	for _, labels := range [][]byte{s.QueryLabels, s.GalleryLabels} {
		for i, l := range labels {
			if l >= NumClasses {
				return fmt.Errorf("%w: label %d of image %d is not below %d", ErrFormat, l, i, NumClasses)
			}
		}
	}
	return nil
}

// Encode writes s to w in the layout above.
func Encode(w io.Writer, s *Subset) error {
	if err := s.validate(); err != nil {
		return err
	}
	var hdr [headerSize]byte
	copy(hdr[:], Magic)
	le := binary.LittleEndian
	le.PutUint32(hdr[8:], Version)
	le.PutUint32(hdr[12:], uint32(s.Rows))
	le.PutUint32(hdr[16:], uint32(s.Cols))
	le.PutUint32(hdr[20:], uint32(s.NumQueries()))
	le.PutUint32(hdr[24:], uint32(s.NumGallery()))
	for _, b := range [][]byte{hdr[:], s.QueryPixels, s.QueryLabels, s.GalleryPixels, s.GalleryLabels} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// Decode parses a subset file, checking the magic, version, sizes, labels
// and that nothing follows the data. The slices it returns are fresh copies.
func Decode(data []byte) (*Subset, error) {
	r := bytes.NewReader(data)

	var hdr [headerSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrFormat, err)
	}
	if string(hdr[:len(Magic)]) != Magic {
		return nil, fmt.Errorf("%w: bad magic %q", ErrFormat, hdr[:len(Magic)])
	}
	le := binary.LittleEndian
	if v := le.Uint32(hdr[8:]); v != Version {
		return nil, fmt.Errorf("%w: unsupported version %d", ErrFormat, v)
	}
	rows, cols := le.Uint32(hdr[12:]), le.Uint32(hdr[16:])
	nq, ng := le.Uint32(hdr[20:]), le.Uint32(hdr[24:])
	// Check before multiplying so that a corrupt header cannot overflow or
	// trigger a huge allocation.
	if rows == 0 || cols == 0 || rows > maxSide || cols > maxSide || nq > maxImages || ng > maxImages {
		return nil, fmt.Errorf("%w: implausible header %dx%d, %d queries, %d gallery", ErrFormat, rows, cols, nq, ng)
	}
	px := int(rows) * int(cols)
	// The sections' sizes follow from the header: compare them with the
	// data before allocating, so a header that claims more than the data
	// holds costs nothing (the bounds above keep the sum far from overflow).
	if want := int64(headerSize) + (int64(nq)+int64(ng))*int64(px+1); want != int64(len(data)) {
		return nil, fmt.Errorf("%w: header %dx%d, %d queries, %d gallery needs %d bytes, data has %d", ErrFormat, rows, cols, nq, ng, want, len(data))
	}
	s := &Subset{Rows: int(rows), Cols: int(cols)}
	for _, f := range []struct {
		dst  *[]byte
		n    int
		what string
	}{
		{&s.QueryPixels, int(nq) * px, "query pixels"},
		{&s.QueryLabels, int(nq), "query labels"},
		{&s.GalleryPixels, int(ng) * px, "gallery pixels"},
		{&s.GalleryLabels, int(ng), "gallery labels"},
	} {
		*f.dst = make([]byte, f.n)
		if _, err := io.ReadFull(r, *f.dst); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrFormat, f.what, err)
		}
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}
