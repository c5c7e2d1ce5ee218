package digestcache

import (
	"os"
	"syscall"
)

// stat reads the identity of a regular file (Linux: nanosecond times).
func stat(path string) (key, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return key{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return key{}, false
	}
	return key{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, true
}
