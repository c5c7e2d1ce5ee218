package syncfile

import (
	"context"
	"os"

	"golang.org/x/sys/unix"
)

// chunk is the write-back step and window the number of steps in flight: a
// cancellation waits for at most about one chunk to reach the disk, while
// the device still sees a queue of window chunks.
const (
	chunk  = 8 << 20
	window = 4
)

// flush writes f back with sync_file_range: each step starts the write-back
// of one chunk and waits for the chunk started window steps before.
func flush(ctx context.Context, f *os.File) error {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() <= chunk {
		return nil // small or special: the Sync alone is quick or necessary
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	n := (fi.Size() + chunk - 1) / chunk
	var cerr error
	_ = rc.Control(func(fd uintptr) {
		for i := int64(0); i < n+window; i++ {
			if err := ctx.Err(); err != nil {
				cerr = err
				return
			}
			if i < n {
				if unix.SyncFileRange(int(fd), i*chunk, chunk, unix.SYNC_FILE_RANGE_WRITE) != nil {
					return // unsupported here: the Sync writes everything
				}
			}
			if j := i - window; j >= 0 {
				const wait = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
				if unix.SyncFileRange(int(fd), j*chunk, chunk, wait) != nil {
					return // an I/O error: the Sync reports it
				}
			}
		}
	})
	return cerr
}
