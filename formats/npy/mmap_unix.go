//go:build unix

package npy

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/vertebrae-eval/vertebrae/formats"
)

// mapFile maps path read-only. Empty files are read normally (mmap refuses
// zero length).
func mapFile(path string) ([]byte, func() error, error) {
	data, _, unmap, err := mapFileKeep(path, false)
	return data, unmap, err
}

// mapFileKeep is mapFile that, with keep, also returns the open file of a
// mapping (nil when the data was read instead), which unmap then closes:
// rows can be read from it (pread) instead of through the mapping.
func mapFileKeep(path string, keep bool) ([]byte, *os.File, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, nil, &formats.Error{Path: path, Msg: "cannot read file", Err: err}
	}
	kept := false
	defer func() {
		if !kept {
			f.Close()
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, nil, &formats.Error{Path: path, Msg: "cannot read file", Err: err}
	}
	size := st.Size()
	if size == 0 || int64(int(size)) != size {
		data, err := readFile(path)
		return data, nil, func() error { return nil }, err
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		// Some file systems cannot be mapped; reading still works.
		data, err := readFile(path)
		return data, nil, func() error { return nil }, err
	}
	if !keep {
		return data, nil, func() error { return syscall.Munmap(data) }, nil
	}
	kept = true
	return data, f, func() error {
		err := syscall.Munmap(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}, nil
}
