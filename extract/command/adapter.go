package command

import (
	"context"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// items turns an endpoint batch into the rows the program receives.
func items(b extract.Batch) ([]Item, error) {
	out := make([]Item, b.Items.Len())
	for i := range out {
		if i < len(b.IDs) {
			out[i].ID = b.IDs[i]
		}
	}
	switch t := b.Items.(type) {
	case retrieval.Texts:
		for i, s := range t {
			out[i].Text = s
		}
	case retrieval.Images:
		for i, p := range t {
			out[i].Path = p
		}
	default:
		return nil, fmt.Errorf("command extractor: %s inputs cannot be sent to a program", b.Items.Modality())
	}
	return out, nil
}

// encoder adapts an Extractor to extract.Encoder.
type encoder struct{ *Extractor }

func (e encoder) Encode(ctx context.Context, b extract.Batch) (matrix.Matrix, error) {
	it, err := items(b)
	if err != nil {
		return nil, err
	}
	if len(e.cfg.Branches) > 0 {
		return nil, fmt.Errorf("command extractor %q has branches; encode through EncodeBranch", e.cfg.Name)
	}
	return e.encode(ctx, DefaultBranch, e.cfg.Modality, b.Side, b.Start, b.Step(), it)
}

// branchEncoder adapts an Extractor with branches to extract.BranchEncoder.
type branchEncoder struct{ *Extractor }

func (e branchEncoder) EncodeBranch(ctx context.Context, b extract.Batch, branch string) (matrix.Matrix, error) {
	it, err := items(b)
	if err != nil {
		return nil, err
	}
	modality, ok := e.cfg.Branches[branch]
	if !ok {
		return nil, fmt.Errorf("command extractor %q has no branch %q", e.cfg.Name, branch)
	}
	return e.encode(ctx, branch, modality, b.Side, b.Start, b.Step(), it)
}

// AsExtractor returns e as an extract.Encoder, or as an
// extract.BranchEncoder when it was configured with branches.
func (e *Extractor) AsExtractor() extract.Extractor {
	if len(e.Branches()) > 0 {
		return branchEncoder{e}
	}
	return encoder{e}
}
