//go:build unix

package columnar

import (
	"os"
	"syscall"
)

// mapFile maps path read-only so that an IPC file is paged in batch by
// batch rather than copied whole. Empty or unmappable files are read.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, openError(path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, openError(path, err)
	}
	size := st.Size()
	if size == 0 || int64(int(size)) != size {
		return readAll(path)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return readAll(path) // some file systems cannot be mapped
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
