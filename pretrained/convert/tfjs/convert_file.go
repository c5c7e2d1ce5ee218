package tfjs

import "fmt"

// Convert loads the graph model in dir and returns the ONNX bytes.
func Convert(dir string, o Options) ([]byte, error) {
	g, err := LoadGraphModel(dir)
	if err != nil {
		return nil, err
	}
	m, err := g.ToONNX(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return m.Marshal(), nil
}
