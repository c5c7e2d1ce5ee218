package onnx

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
)

// externalDataFiles lists the external weight files a model's initializers
// point to (TensorProto.external_data "location", relative to the model's
// directory), sorted and without duplicates. Models over 2 GB keep their
// weights in such files (model.onnx_data), and they belong to the model's
// identity. The protobuf is walked as a stream, seeking past everything but
// the graph's initializer headers, so an inline multi-gigabyte model is not
// read into memory.
func externalDataFiles(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	locs, err := externalLocations(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: reading external data references: %w", path, err)
	}
	out := make([]string, 0, len(locs))
	for _, l := range locs {
		if filepath.IsAbs(l) || !filepath.IsLocal(filepath.FromSlash(l)) {
			return nil, fmt.Errorf("%s: external data location %q is outside the model's directory", path, l)
		}
		out = append(out, filepath.Join(filepath.Dir(path), filepath.FromSlash(l)))
	}
	return out, nil
}

// externalLocations returns the sorted, distinct external_data locations of
// the graph initializers of the ModelProto in r (size bytes).
func externalLocations(r io.ReadSeeker, size int64) ([]string, error) {
	w := &pbWalker{r: bufio.NewReaderSize(r, 64<<10), f: r}
	locs := map[string]bool{}
	// ModelProto.graph = 7; GraphProto.initializer = 5;
	// TensorProto.external_data = 13; StringStringEntryProto key = 1, value = 2.
	err := w.fields(size, func(num protowire.Number, n int64) (bool, error) {
		if num != 7 {
			return false, nil
		}
		return true, w.fields(n, func(num protowire.Number, n int64) (bool, error) {
			if num != 5 {
				return false, nil
			}
			return true, w.fields(n, func(num protowire.Number, n int64) (bool, error) {
				if num != 13 {
					return false, nil
				}
				if n > 1<<20 {
					return false, fmt.Errorf("external_data entry of %d bytes", n)
				}
				entry := make([]byte, n)
				if _, err := io.ReadFull(w.r, entry); err != nil {
					return true, noEOF(err)
				}
				w.pos += n
				key, value, err := stringEntry(entry)
				if err == nil && key == "location" {
					locs[value] = true
				}
				return true, err
			})
		})
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(locs))
	for l := range locs {
		out = append(out, l)
	}
	sort.Strings(out)
	return out, nil
}

// pbWalker reads protobuf fields from a stream, seeking over the ones it
// does not descend into.
type pbWalker struct {
	r   *bufio.Reader
	f   io.ReadSeeker
	pos int64 // offset of r's next byte in the file
}

// fields visits the fields of a message of n bytes at the current position.
// visit reports whether it consumed a length-delimited field's n bytes.
func (w *pbWalker) fields(n int64, visit func(num protowire.Number, n int64) (bool, error)) error {
	end := w.pos + n
	for w.pos < end {
		tag, err := w.varint()
		if err != nil {
			return err
		}
		num, typ := protowire.DecodeTag(tag)
		switch typ {
		case protowire.VarintType:
			_, err = w.varint()
		case protowire.Fixed64Type:
			err = w.skip(8)
		case protowire.Fixed32Type:
			err = w.skip(4)
		case protowire.BytesType:
			var size uint64
			if size, err = w.varint(); err != nil {
				return err
			}
			if int64(size) < 0 || w.pos+int64(size) > end {
				return errors.New("field runs past its message")
			}
			var used bool
			if used, err = visit(num, int64(size)); err == nil && !used {
				err = w.skip(int64(size))
			}
		default:
			return fmt.Errorf("unsupported wire type %d", typ)
		}
		if err != nil {
			return err
		}
	}
	if w.pos != end {
		return errors.New("message ends inside a field")
	}
	return nil
}

func (w *pbWalker) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b, err := w.r.ReadByte()
		if err != nil {
			return 0, noEOF(err)
		}
		w.pos++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("varint overflows 64 bits")
}

// skip moves n bytes forward: through the buffer when they are there, else
// by seeking the file and resetting the buffer.
func (w *pbWalker) skip(n int64) error {
	if n <= int64(w.r.Buffered()) {
		_, err := w.r.Discard(int(n))
		w.pos += n
		return err
	}
	if _, err := w.f.Seek(w.pos+n, io.SeekStart); err != nil {
		return err
	}
	w.pos += n
	w.r.Reset(w.f)
	return nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// stringEntry decodes a StringStringEntryProto.
func stringEntry(b []byte) (key, value string, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", "", protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return "", "", protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return "", "", protowire.ParseError(n)
		}
		b = b[n:]
		switch num {
		case 1:
			key = string(v)
		case 2:
			value = string(v)
		}
	}
	return key, value, nil
}
