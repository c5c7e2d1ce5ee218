package extract

import (
	"context"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// TextPrefixKey is the recipe key under which WithTextPrefix records the
// prefixes: {"query": …, "gallery": …} (SPEC §9.4, part of the recipe).
const TextPrefixKey = "text_prefix"

// WithTextPrefix returns x with query prepended to every query text and
// gallery to every gallery text before x encodes them: the instruction
// convention of e5 ("query: " / "passage: "), BGE (a query instruction and
// no passage prefix) and nomic ("search_query: " / "search_document: ")
// models (SPEC §9.4 text_prefix). Only text inputs (retrieval.Texts) are
// prefixed; the other side of a cross-modal branch encoder (images, say)
// passes through unchanged. The prefixes are part of the recipe (under
// TextPrefixKey), so prefixed and unprefixed embeddings never share an
// endpoint cache entry.
//
// With both prefixes empty x itself is returned: its recipe, and so every
// existing cache entry, stays valid.
//
// The wrapper keeps x's kind (Encoder or BranchEncoder), its Fitter (the
// gallery texts it is fitted on are prefixed too) and StatefulFitter
// methods, and forwards Shutdown (persistent command workers) when x has it.
// An Encoder whose Fit is a no-op (a Func without FitFunc) is not reported
// as a Fitter.
func WithTextPrefix(x Extractor, query, gallery string) Extractor {
	if query == "" && gallery == "" {
		return x
	}
	p := prefixed{inner: x, query: query, gallery: gallery}
	switch t := x.(type) {
	case BranchEncoder:
		return &prefixBranches{prefixed: p, enc: t}
	case Encoder:
		e := prefixEncoder{prefixed: p, enc: t}
		if fn, ok := x.(*Func); ok && fn.FitFunc == nil {
			return &e
		}
		if sf, ok := x.(StatefulFitter); ok {
			return &prefixStatefulEncoder{prefixFitEncoder{prefixEncoder: e, fit: sf}, sf}
		}
		if f, ok := x.(Fitter); ok {
			return &prefixFitEncoder{prefixEncoder: e, fit: f}
		}
		return &e
	}
	// Neither kind: Check reports it; keep the identity change regardless.
	return &p
}

// prefixed holds what every wrapper shares.
type prefixed struct {
	inner          Extractor
	query, gallery string
}

func (p *prefixed) Name() string        { return p.inner.Name() }
func (p *prefixed) Type() string        { return p.inner.Type() }
func (p *prefixed) StreamingSafe() bool { return p.inner.StreamingSafe() }

// Recipe is the inner recipe plus the prefixes.
func (p *prefixed) Recipe() map[string]any {
	in := p.inner.Recipe()
	r := make(map[string]any, len(in)+1)
	for k, v := range in {
		r[k] = v
	}
	r[TextPrefixKey] = map[string]any{"query": p.query, "gallery": p.gallery}
	return r
}

// Unwrap returns the wrapped extractor.
func (p *prefixed) Unwrap() Extractor { return p.inner }

// Shutdown ends the inner extractor's persistent workers, if it has any.
func (p *prefixed) Shutdown(ctx context.Context) error {
	if s, ok := p.inner.(interface{ Shutdown(context.Context) error }); ok {
		return s.Shutdown(ctx)
	}
	return nil
}

// prefix returns items with the side's prefix prepended to every text.
func (p *prefixed) prefix(side string, items retrieval.Items) retrieval.Items {
	pre := p.query
	if side == "gallery" {
		pre = p.gallery
	}
	texts, ok := items.(retrieval.Texts)
	if !ok || pre == "" {
		return items
	}
	out := make(retrieval.Texts, len(texts))
	for i, s := range texts {
		out[i] = pre + s
	}
	return out
}

func (p *prefixed) batch(b Batch) Batch {
	b.Items = p.prefix(b.Side, b.Items)
	return b
}

type prefixEncoder struct {
	prefixed
	enc Encoder
}

func (e *prefixEncoder) Modality() string { return e.enc.Modality() }

func (e *prefixEncoder) Encode(ctx context.Context, b Batch) (matrix.Matrix, error) {
	return e.enc.Encode(ctx, e.batch(b))
}

type prefixFitEncoder struct {
	prefixEncoder
	fit Fitter
}

// Fit fits the inner encoder on the prefixed gallery texts.
func (e *prefixFitEncoder) Fit(ctx context.Context, gallery retrieval.Items) error {
	return e.fit.Fit(ctx, e.prefix("gallery", gallery))
}

type prefixStatefulEncoder struct {
	prefixFitEncoder
	state StatefulFitter
}

func (e *prefixStatefulEncoder) MarshalState() ([]byte, error) { return e.state.MarshalState() }
func (e *prefixStatefulEncoder) UnmarshalState(b []byte) error { return e.state.UnmarshalState(b) }

type prefixBranches struct {
	prefixed
	enc BranchEncoder
}

func (e *prefixBranches) Branches() map[string]string { return e.enc.Branches() }

func (e *prefixBranches) EncodeBranch(ctx context.Context, b Batch, branch string) (matrix.Matrix, error) {
	return e.enc.EncodeBranch(ctx, e.batch(b), branch)
}
