//go:build unix

package outputset

import "golang.org/x/sys/unix"

// mknodChar creates a character device node (tests of device outputs).
func mknodChar(path string, major, minor uint32) error {
	return unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(major, minor)))
}

// mkfifo creates a named pipe.
func mkfifo(path string) error { return unix.Mkfifo(path, 0o666) }
