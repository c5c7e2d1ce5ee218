package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vertebrae-eval/vertebrae/demo/internal/subset"
)

const (
	numQueries = 1000
	numGallery = 5000
	side       = 28

	// Sizes of the full splits, checked so that a truncated or different
	// download is not silently accepted.
	trainSize = 60000
	testSize  = 10000

	idxImagesMagic = 0x00000803 // unsigned byte, 3 dimensions
	idxLabelsMagic = 0x00000801 // unsigned byte, 1 dimension
)

func main() {
	src := flag.String("src", "/usr/share/datasets/fashion-mnist", "directory holding the Fashion-MNIST {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz files")
	out := flag.String("out", filepath.Join("data", "fashion-mnist-subset.bin"), "output file")
	flag.Parse()
	if err := run(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	s := &subset.Subset{Rows: side, Cols: side}
	var err error
	if s.QueryPixels, s.QueryLabels, err = readSplit(src, "t10k", testSize, numQueries); err != nil {
		return err
	}
	if s.GalleryPixels, s.GalleryLabels, err = readSplit(src, "train", trainSize, numGallery); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := subset.Encode(&buf, s); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	// Round-trip through the decoder that package demo uses.
	if _, err := subset.Decode(buf.Bytes()); err != nil {
		return fmt.Errorf("decode check: %w", err)
	}
	if err := writeFileAtomic(out, buf.Bytes()); err != nil {
		return err
	}
	fmt.Printf("gen: wrote %s (%d bytes, %d queries, %d gallery)\n", out, buf.Len(), numQueries, numGallery)
	return nil
}

// readSplit returns the first keep images and labels of a split after
// validating both idx files in full.
func readSplit(dir, split string, total, keep int) (pixels, labels []byte, err error) {
	pixels, err = readIdx(filepath.Join(dir, split+"-images-idx3-ubyte.gz"), idxImagesMagic, []int{total, side, side}, keep)
	if err != nil {
		return nil, nil, err
	}
	labels, err = readIdx(filepath.Join(dir, split+"-labels-idx1-ubyte.gz"), idxLabelsMagic, []int{total}, keep)
	if err != nil {
		return nil, nil, err
	}
	return pixels, labels, nil
}

// readIdx reads a gzip-compressed idx file, checks its magic number and
// dimensions against want, and returns the first keep items (an item being
// one index of the first dimension). The rest is read and discarded so that
// a short file and the gzip checksum are both caught.
func readIdx(path string, magic uint32, want []int, keep int) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (install the Fashion-MNIST data with `apt-get install dataset-fashion-mnist`, or pass -src DIR)", err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := bufio.NewReader(zr)

	hdr := make([]byte, 4*(1+len(want)))
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("%s: idx header: %w", path, err)
	}
	if got := binary.BigEndian.Uint32(hdr); got != magic {
		return nil, fmt.Errorf("%s: idx magic %#08x, want %#08x", path, got, magic)
	}
	itemSize := 1
	for i, w := range want {
		if got := int(binary.BigEndian.Uint32(hdr[4*(i+1):])); got != w {
			return nil, fmt.Errorf("%s: idx dimension %d is %d, want %d", path, i, got, w)
		}
		if i > 0 {
			itemSize *= w
		}
	}
	data := make([]byte, keep*itemSize)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rest, err := io.Copy(io.Discard, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if wantRest := int64(want[0]-keep) * int64(itemSize); rest != wantRest {
		return nil, fmt.Errorf("%s: %d data bytes, want %d", path, int64(len(data))+rest, int64(want[0])*int64(itemSize))
	}
	return data, nil
}

// writeFileAtomic replaces path so that an interrupted run never leaves a
// truncated file for go:embed to pick up.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gen-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
