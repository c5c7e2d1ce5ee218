//go:build !unix

package admit

import (
	"fmt"
	"io"
	"os"
)

// mapFile reads the file where memory mapping is not wired up (as the npy
// reader does); the rows then live in the heap after all.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("spill file of %d bytes is too large", size)
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && err != io.EOF {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
