//go:build unix

package stale

import (
	"os"
	"syscall"
)

// Locks are real: an entry older than this process is removed as soon as
// no live process holds it.
const unlockedGrace = 0

func lock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// tryLock reports whether f could be locked, i.e. no live process holds it.
func tryLock(f *os.File) bool { return lock(f) == nil }
