package stale

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// start is when this process started: entries modified since may belong
// to a run that started after it and has not locked them yet.
var start = time.Now()

// LockName is the lock file inside a staged directory.
const LockName = ".lock"

// CreateFile creates a new file in dir from pattern (as os.CreateTemp) and
// locks it until it is closed.
func CreateFile(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := lock(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// MkdirTemp creates a new directory in dir from pattern (as os.MkdirTemp)
// holding a locked LockName file; release closes the lock (the caller
// removes the directory).
func MkdirTemp(dir, pattern string) (path string, release func(), err error) {
	path, err = os.MkdirTemp(dir, pattern)
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(filepath.Join(path, LockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = lock(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(path)
		return "", nil, err
	}
	return path, func() { f.Close() }, nil
}

// Remove deletes the entries of dir whose names start with prefix, last
// modified before this process started, that no live process holds (a
// file's own lock, a directory's LockName). It returns how many it
// removed; a missing dir has none. Entries it cannot judge are left.
func Remove(dir, prefix string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		ok, err := removeIfStale(filepath.Join(dir, e.Name()), e)
		if err != nil {
			return removed, err
		}
		if ok {
			removed++
		}
	}
	return removed, nil
}

func removeIfStale(p string, e fs.DirEntry) (bool, error) {
	info, err := e.Info()
	if err != nil || !info.ModTime().Before(start.Add(-unlockedGrace)) {
		return false, nil // gone already, or possibly a run younger than this one
	}
	return removeUnlocked(p, e)
}

// RemoveUnlocked deletes the staged entry p (a file or a directory made
// by this package) unless a live process holds its lock, whatever its
// age; callers judge age themselves.
func RemoveUnlocked(p string) (bool, error) {
	info, err := os.Lstat(p)
	if err != nil {
		return false, nil
	}
	return removeUnlocked(p, fs.FileInfoToDirEntry(info))
}

func removeUnlocked(p string, e fs.DirEntry) (bool, error) {
	lockPath := p
	if e.IsDir() {
		lockPath = filepath.Join(p, LockName)
	}
	f, err := os.OpenFile(lockPath, os.O_RDWR, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist) && e.IsDir():
		// A directory killed before its lock file existed.
	case err != nil:
		return false, nil
	default:
		defer f.Close()
		if !tryLock(f) {
			return false, nil // its owner is alive
		}
	}
	if e.IsDir() {
		err = os.RemoveAll(p)
	} else {
		err = os.Remove(p)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}
