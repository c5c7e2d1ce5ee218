//go:build !unix

package safetensors

// mapFile reads the whole file where memory mapping is not wired up.
func mapFile(path string) ([]byte, func() error, error) {
	data, err := readFile(path)
	return data, nil, err
}
