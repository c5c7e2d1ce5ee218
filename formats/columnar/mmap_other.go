//go:build !unix

package columnar

// mapFile reads the whole file where memory mapping is not wired up.
func mapFile(path string) ([]byte, func() error, error) {
	return readAll(path)
}
