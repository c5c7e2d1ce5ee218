package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write atomically replaces path with data, creating parent directories.
func Write(path string, data []byte) error {
	return write(path, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// WriteFunc atomically replaces path with what fill writes, streaming
// through a buffered writer. If fill fails, the target is left untouched
// and no temporary file remains.
func WriteFunc(path string, fill func(w io.Writer) error) error {
	return write(path, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 1<<16)
		if err := fill(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}

func write(path string, fill func(f *os.File) error) (err error) {
	if path == "" {
		return errors.New("write output: empty path")
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	dir, base := filepath.Dir(path), filepath.Base(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The temporary file lives next to the target so the rename stays on
	// one file system and is atomic.
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmp, closed := f.Name(), false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	// Sync before the rename so a crash cannot expose a renamed but
	// empty or partial file.
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp uses 0o600
		return err
	}
	closed = true
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes the rename durable where the platform supports syncing a
// directory; failure is ignored because the file content is already safe
// and some systems refuse directory syncs.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}
