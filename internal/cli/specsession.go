package cli

import (
	"context"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/runspec"
)

// SpecSession is a loaded run file (SPEC §6.5) for engines outside this
// package — the Beam module's workers load the run file exactly as the
// artifact commands do, so their endpoints equal the CLI's bit for bit.
type SpecSession struct{ sc *specContext }

// OpenSpec loads a run file and its dataset.
func OpenSpec(ctx context.Context, path string) (*SpecSession, error) {
	sc, err := loadSpecContext(ctx, path)
	if err != nil {
		return nil, err
	}
	return &SpecSession{sc: sc}, nil
}

// Spec is the parsed run file.
func (s *SpecSession) Spec() *runspec.Spec { return s.sc.spec }

// Dataset is the run file's dataset.
func (s *SpecSession) Dataset() *retrieval.Dataset { return s.sc.ds }

// Entry builds the named extractor as an extract.Entry (branches and
// `cache:` included); onnxLib is the ONNX Runtime library for ONNX
// extractors ("" = the default search).
func (s *SpecSession) Entry(ctx context.Context, name, onnxLib string) (extract.Entry, error) {
	e, x, err := s.sc.extractor(ctx, name, onnxLib)
	if err != nil {
		return extract.Entry{}, err
	}
	return specEntry(e, x), nil
}

// Close releases the session's files.
func (s *SpecSession) Close() { s.sc.close() }
