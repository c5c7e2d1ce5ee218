//go:build !unix

package cli

import "errors"

// Device nodes and named pipes exist only on Unix; the tests that need
// them skip when these fail.
func mknodChar(path string, major, minor uint32) error { return errors.ErrUnsupported }

func mkfifo(path string) error { return errors.ErrUnsupported }
