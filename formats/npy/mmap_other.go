//go:build !unix

package npy

import "os"

// mapFile reads the whole file where memory mapping is not wired up.
func mapFile(path string) ([]byte, func() error, error) {
	data, err := readFile(path)
	return data, func() error { return nil }, err
}

// mapFileKeep is mapFile; no file is kept (nothing is mapped).
func mapFileKeep(path string, _ bool) ([]byte, *os.File, func() error, error) {
	data, unmap, err := mapFile(path)
	return data, nil, unmap, err
}
