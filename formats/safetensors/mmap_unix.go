//go:build unix

package safetensors

import (
	"os"
	"syscall"
)

// mapFile maps path read-only. Empty files are read normally (mmap refuses
// zero length), as are files on file systems that cannot be mapped.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, readError(path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, readError(path, err)
	}
	size := st.Size()
	if size == 0 || int64(int(size)) != size {
		data, err := readFile(path)
		return data, nil, err
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		data, err := readFile(path)
		return data, nil, err
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
