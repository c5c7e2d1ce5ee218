//go:build !linux

package admit

import "os"

// reserveSpace is a no-op where fallocate is unavailable; a full disk then
// surfaces as a write error.
func reserveSpace(*os.File, int64) error { return nil }
