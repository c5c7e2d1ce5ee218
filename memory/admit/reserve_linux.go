package admit

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// reserveSpace allocates size bytes for f. Only a lack of space is an error;
// file systems without fallocate fall back to plain writes.
func reserveSpace(f *os.File, size int64) error {
	if size <= 0 {
		return nil
	}
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EFBIG) {
		return err
	}
	return nil
}
