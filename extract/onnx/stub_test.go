//go:build !cgo

package onnx

import (
	"context"
	"errors"
	"testing"
)

// Without cgo every entry point reports that the adapters are not compiled
// in (.ci/run runs this with CGO_ENABLED=0).
func TestNotCompiled(t *testing.T) {
	ctx := context.Background()
	_, e1 := NewDualEncoder(ctx, DualEncoderConfig{Name: "c", ModelDir: "m"})
	_, e2 := NewTextEncoder(ctx, TextConfig{Name: "t", ModelDir: "m"})
	_, e3 := NewImageEncoder(ctx, ImageConfig{Name: "i", ModelDir: "m"})
	_, e4 := OpenSession(ctx, "m.onnx", Runtime{})
	_, e5 := LoadRuntime("")
	for i, err := range []error{e1, e2, e3, e4, e5} {
		if !errors.Is(err, ErrNotCompiled) {
			t.Errorf("entry point %d: %v, want ErrNotCompiled", i, err)
		}
	}
}
