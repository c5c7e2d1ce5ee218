//go:build !cgo

package onnx

import (
	"context"

	"github.com/vertebrae-eval/vertebrae/extract"
)

// This build has no cgo, so ONNX Runtime cannot be loaded: the types exist
// (the CLI and library compile unchanged) and every constructor returns
// ErrNotCompiled.

// LoadRuntime reports ErrNotCompiled.
func LoadRuntime(library string) (string, error) { return "", ErrNotCompiled }

// Session is unavailable without cgo.
type Session struct{}

// OpenSession reports ErrNotCompiled.
func OpenSession(context.Context, string, Runtime) (*Session, error) { return nil, ErrNotCompiled }

// OpenSessionBytes reports ErrNotCompiled.
func OpenSessionBytes(context.Context, string, []byte, Runtime) (*Session, error) {
	return nil, ErrNotCompiled
}

func (*Session) Inputs() []TensorInfo                                { return nil }
func (*Session) Outputs() []TensorInfo                               { return nil }
func (*Session) RuntimeVersion() string                              { return "" }
func (*Session) Close() error                                        { return nil }
func (*Session) Run(context.Context, []Feed, string) (Output, error) { return Output{}, ErrNotCompiled }

// DualEncoder is unavailable without cgo.
type DualEncoder struct{ extract.BranchEncoder }

// NewDualEncoder reports ErrNotCompiled.
func NewDualEncoder(context.Context, DualEncoderConfig) (*DualEncoder, error) {
	return nil, ErrNotCompiled
}

// Close does nothing.
func (*DualEncoder) Close() error { return nil }

// TextEncoder is unavailable without cgo.
type TextEncoder struct{ extract.Encoder }

// NewTextEncoder reports ErrNotCompiled.
func NewTextEncoder(context.Context, TextConfig) (*TextEncoder, error) { return nil, ErrNotCompiled }

// Close does nothing.
func (*TextEncoder) Close() error { return nil }

// ImageEncoder is unavailable without cgo.
type ImageEncoder struct{ extract.Encoder }

// NewImageEncoder reports ErrNotCompiled.
func NewImageEncoder(context.Context, ImageConfig) (*ImageEncoder, error) { return nil, ErrNotCompiled }

// Close does nothing.
func (*ImageEncoder) Close() error { return nil }

// Compiled reports whether this build includes the ONNX Runtime adapters.
const Compiled = false
