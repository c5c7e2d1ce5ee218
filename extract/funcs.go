package extract

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Func is a same-modality Encoder built from Go functions.
type Func struct {
	ExtractorName string
	ExtractorType string
	Serves        string // modality, or "multimodal" / "embeddings"
	Streaming     bool   // each output row depends only on its own input row
	RecipeValues  map[string]any
	EncodeFunc    func(ctx context.Context, b Batch) (matrix.Matrix, error)
	// FitFunc, when set, is called once with the gallery inputs.
	FitFunc func(ctx context.Context, gallery retrieval.Items) error
}

func (f *Func) Name() string        { return f.ExtractorName }
func (f *Func) Type() string        { return f.ExtractorType }
func (f *Func) StreamingSafe() bool { return f.Streaming }
func (f *Func) Modality() string    { return f.Serves }

// Recipe implements Extractor; func extractors are cache-safe only with an
// explicit cache_identity (SPEC §9.5), which the recipe values may carry.
func (f *Func) Recipe() map[string]any {
	r := map[string]any{"name": f.ExtractorName, "extractor_type": typeOr(f.ExtractorType, "func")}
	for k, v := range f.RecipeValues {
		r[k] = v
	}
	return r
}

// Encode implements Encoder.
func (f *Func) Encode(ctx context.Context, b Batch) (matrix.Matrix, error) {
	return f.EncodeFunc(ctx, b)
}

// Fit implements Fitter (a no-op without FitFunc).
func (f *Func) Fit(ctx context.Context, gallery retrieval.Items) error {
	if f.FitFunc == nil {
		return nil
	}
	return f.FitFunc(ctx, gallery)
}

// FuncBranches is the "explicit branch encoders" case: a BranchEncoder with
// branches "query" and "gallery", each a Go function serving a declared
// modality (text queries against an image gallery, say).
type FuncBranches struct {
	ExtractorName                  string
	ExtractorType                  string
	QueryModality, GalleryModality string
	RecipeValues                   map[string]any
	Query, Gallery                 func(ctx context.Context, b Batch) (matrix.Matrix, error)
}

func (f *FuncBranches) Name() string        { return f.ExtractorName }
func (f *FuncBranches) Type() string        { return f.ExtractorType }
func (f *FuncBranches) StreamingSafe() bool { return true }

// Recipe implements Extractor.
func (f *FuncBranches) Recipe() map[string]any {
	r := map[string]any{"name": f.ExtractorName, "extractor_type": typeOr(f.ExtractorType, "func_branches"),
		"branches": map[string]any{"query": f.QueryModality, "gallery": f.GalleryModality}}
	for k, v := range f.RecipeValues {
		r[k] = v
	}
	return r
}

// Branches implements BranchEncoder.
func (f *FuncBranches) Branches() map[string]string {
	return map[string]string{"query": f.QueryModality, "gallery": f.GalleryModality}
}

// EncodeBranch implements BranchEncoder.
func (f *FuncBranches) EncodeBranch(ctx context.Context, b Batch, branch string) (matrix.Matrix, error) {
	switch branch {
	case "query":
		return f.Query(ctx, b)
	case "gallery":
		return f.Gallery(ctx, b)
	}
	return nil, fmt.Errorf("Extractor %s has no branch %q", f.ExtractorName, branch)
}

func typeOr(t, def string) string {
	if t == "" {
		return def
	}
	return t
}

// Precomputed serves embedding tables computed elsewhere: the query table
// for the query endpoint, the gallery table for the gallery endpoint (the
// only adapter that looks at Batch.Side, SPEC §9.1).
type Precomputed struct {
	ExtractorName  string
	Query, Gallery matrix.Matrix
	RecipeValues   map[string]any
	// Digest, when set, returns the SPEC §2.9 digest of a table (Query or
	// Gallery) in place of hashing it: the value
	// retrieval.EmbeddingDigestContext(ctx, m) returns, which a digest
	// cache keyed by the file the table was read from knows without
	// reading it (every extraction shard of a large gallery would
	// otherwise hash the whole table). It returns ctx's error once ctx is
	// done.
	Digest func(ctx context.Context, m matrix.Matrix) (map[string]any, error)

	digestMu   sync.Mutex
	digestDone bool
	digests    map[string]any // SPEC §2.9 digests of the tables, nil if unavailable
}

func (p *Precomputed) Name() string        { return p.ExtractorName }
func (p *Precomputed) Type() string        { return "precomputed" }
func (p *Precomputed) StreamingSafe() bool { return true }
func (p *Precomputed) Modality() string    { return ModalityEmbeddings }

// Recipe implements Extractor.
func (p *Precomputed) Recipe() map[string]any {
	r := map[string]any{"name": p.ExtractorName, "extractor_type": "precomputed"}
	// The tables' content is the recipe's identity (SPEC §9.5); hashing
	// them once keeps repeated Recipe calls cheap.
	_ = p.HashTables(context.Background()) // fails only with its context
	if p.digests != nil {
		r["table_digests"], r["cache_safe"] = p.digests, true
	}
	for k, v := range p.RecipeValues {
		r[k] = v
	}
	return r
}

// HashTables computes the tables' digests that Recipe carries, unless
// done already; it returns ctx's error (and leaves them to a later call)
// once ctx is done. Hashing gigabytes of tables takes seconds: a caller
// with a context hashes them here, interruptibly, before asking for the
// recipe.
func (p *Precomputed) HashTables(ctx context.Context) error {
	p.digestMu.Lock()
	defer p.digestMu.Unlock()
	if p.digestDone {
		return nil
	}
	q, qerr := p.digestOrNil(ctx, p.Query)
	g, gerr := p.digestOrNil(ctx, p.Gallery)
	if err := ctx.Err(); err != nil && (errors.Is(qerr, err) || errors.Is(gerr, err)) {
		return err
	}
	if qerr == nil && gerr == nil && q != nil && g != nil {
		p.digests = map[string]any{"query": q, "gallery": g}
	}
	p.digestDone = true
	return nil
}

func (p *Precomputed) digestOrNil(ctx context.Context, m matrix.Matrix) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	if p.Digest != nil {
		return p.Digest(ctx, m)
	}
	return retrieval.EmbeddingDigestContext(ctx, m)
}

// checkRows applies SPEC §9.4 before any batch: a table must have exactly
// as many rows as its endpoint (a longer one would silently misalign).
func (p *Precomputed) checkRows(owner, side string, n int) error {
	t := p.Query
	if side == "gallery" {
		t = p.Gallery
	}
	if t != nil && t.Rows() != n {
		return fmt.Errorf("%s returned %d embeddings for %d rows: the precomputed %s table must have one row per %s item", owner, t.Rows(), n, side, side)
	}
	return nil
}

// Encode implements Encoder: rows Row(0), …, Row(n-1) of the side's table.
func (p *Precomputed) Encode(_ context.Context, b Batch) (matrix.Matrix, error) {
	t := p.Query
	if b.Side == "gallery" {
		t = p.Gallery
	}
	n := b.Items.Len()
	if t == nil || b.Start < 0 || (n > 0 && b.Row(n-1) >= t.Rows()) {
		rows := 0
		if t != nil {
			rows = t.Rows()
		}
		return nil, fmt.Errorf("precomputed %s table has %d rows; rows %s requested", b.Side, rows, b.Span())
	}
	if b.Contiguous() {
		switch m := t.(type) {
		case *matrix.Dense:
			return m.RowSlice(b.Start, b.Start+n), nil
		case *matrix.CSR:
			return m.RowSlice(b.Start, b.Start+n), nil
		}
	}
	// A table mapped from a file is read in blocks (pread), not through
	// the mapping: a modulo shard of narrow rows touches every page.
	m, err := matrix.ReadStridedRows(t, b.Start, b.Step(), n)
	if err != nil {
		return nil, fmt.Errorf("precomputed %s table: %w", b.Side, err)
	}
	return m, nil
}
