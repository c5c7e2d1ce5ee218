package extract

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory/admit"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Batch is a run of an endpoint's rows handed to an encoder: item i is
// endpoint row Row(i) = Start + i×Stride. A whole-endpoint run is
// contiguous (Stride 0 or 1); shard i of N of a modulo split (SPEC §11.2)
// gathers rows i, i+N, i+2N, … into one batch with Stride N, so an encoder
// that looks rows up by index (a precomputed table, row numbers in
// messages or sent to a program) must use Row rather than Start+i.
type Batch struct {
	Side   string          // "query" or "gallery"
	Start  int             // index of the batch's first row in the endpoint
	Stride int             // endpoint rows between consecutive items; 0 means 1
	Items  retrieval.Items // rows Row(0), …, Row(Items.Len()-1)
	IDs    []string        // the rows' IDs
}

// Row is the endpoint row index of item i.
func (b Batch) Row(i int) int { return b.Start + i*b.Step() }

// Step is the batch's stride, 1 for a contiguous batch.
func (b Batch) Step() int { return max(1, b.Stride) }

// Contiguous reports whether the batch's rows are consecutive.
func (b Batch) Contiguous() bool { return b.Step() == 1 }

// Span describes the batch's rows for messages: "[lo, hi)" when
// contiguous, else "lo to last every N".
func (b Batch) Span() string {
	n := b.Items.Len()
	if b.Contiguous() || n <= 1 {
		return fmt.Sprintf("[%d, %d)", b.Start, b.Start+n)
	}
	return fmt.Sprintf("%d to %d every %d", b.Start, b.Row(n-1), b.Step())
}

// Extractor is what every backbone declares.
type Extractor interface {
	Name() string           // non-blank
	Type() string           // extractor_type ("" reports "unknown")
	Recipe() map[string]any // JSON-compatible, deterministic, no secrets
	StreamingSafe() bool    // each output row depends only on its own input row
}

// Encoder is a same-modality extractor: one function for both endpoints.
type Encoder interface {
	Extractor
	Modality() string // endpoint modality served, or "multimodal" / "embeddings"
	Encode(ctx context.Context, b Batch) (matrix.Matrix, error)
}

// Fitter is an optional unsupervised fit of an Encoder, run on the gallery
// inputs only (SPEC §9.2 step 3).
type Fitter interface {
	Fit(ctx context.Context, gallery retrieval.Items) error
}

// BranchEncoder is an asymmetric or cross-modal extractor with named
// branches; it is never fitted.
type BranchEncoder interface {
	Extractor
	Branches() map[string]string // branch name → modality
	EncodeBranch(ctx context.Context, b Batch, branch string) (matrix.Matrix, error)
}

// Wildcard modalities an Encoder may declare (SPEC §9.2 step 2).
const (
	ModalityMultimodal = "multimodal"
	ModalityEmbeddings = "embeddings"
)

// Entry is one extractor of a run and how it is used.
type Entry struct {
	Extractor     Extractor
	QueryBranch   string // both or neither
	GalleryBranch string
	// NoCache is the entry's `cache: false`: its endpoints are neither read
	// from nor written to an endpoint cache (status disabled, SPEC §9.5).
	NoCache bool
}

// EmbeddingConfig is SPEC §9.3.
type EmbeddingConfig struct {
	BatchSize        int  `json:"batch_size"`
	StreamingEnabled bool `json:"streaming_enabled"`
}

// DefaultEmbeddingConfig returns the §9.3 defaults.
func DefaultEmbeddingConfig() EmbeddingConfig {
	return EmbeddingConfig{BatchSize: 128, StreamingEnabled: true}
}

// AsMap returns the config under its JSON names.
func (c EmbeddingConfig) AsMap() map[string]any {
	return map[string]any{"batch_size": c.BatchSize, "streaming_enabled": c.StreamingEnabled}
}

// Validate checks §9.3.
func (c EmbeddingConfig) Validate() error {
	if c.BatchSize < 1 {
		return fmt.Errorf("EmbeddingConfig.batch_size must be >= 1; got %d", c.BatchSize)
	}
	return nil
}

// Check resolves branch mode and checks both endpoints' modalities before
// anything is encoded (SPEC §9.2 steps 1–2).
func Check(e Entry, queryModality, galleryModality string) error {
	name := e.Extractor.Name()
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("extractor names must not be blank")
	}
	if (e.QueryBranch == "") != (e.GalleryBranch == "") {
		return fmt.Errorf("Extractor %s: query_branch and gallery_branch must be provided together", name)
	}
	branchMode := e.QueryBranch != ""
	switch x := e.Extractor.(type) {
	case BranchEncoder:
		if !branchMode {
			return fmt.Errorf("Extractor %s requires query_branch and gallery_branch (branches: %s)", name, branchList(x.Branches()))
		}
		for _, side := range []struct{ branch, modality string }{{e.QueryBranch, queryModality}, {e.GalleryBranch, galleryModality}} {
			m, ok := x.Branches()[side.branch]
			if !ok {
				return fmt.Errorf("Extractor %s has no branch %q (branches: %s)", name, side.branch, branchList(x.Branches()))
			}
			if m != side.modality {
				return fmt.Errorf("Extractor %s does not support retrieval modality %s (branch %s serves %s)", name, side.modality, side.branch, m)
			}
		}
	case Encoder:
		if branchMode {
			return fmt.Errorf("Extractor %s does not support branches", name)
		}
		for _, m := range []string{queryModality, galleryModality} {
			if em := x.Modality(); em != m && em != ModalityMultimodal && em != ModalityEmbeddings {
				return fmt.Errorf("Extractor %s does not support retrieval modality %s", name, m)
			}
		}
	default:
		return fmt.Errorf("Extractor %s implements neither Encoder nor BranchEncoder", name)
	}
	return nil
}

func branchList(b map[string]string) string {
	names := make([]string, 0, len(b))
	for n, m := range b {
		names = append(names, n+" ("+m+")")
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Encoded holds an extractor's two endpoint matrices; Close releases spill
// files and the budget they were charged to.
type Encoded struct {
	Query, Gallery matrix.Matrix
	closers        []func() error
}

// Close releases both endpoints.
func (e *Encoded) Close() error {
	var first error
	for _, c := range e.closers {
		if err := c(); err != nil && first == nil {
			first = err
		}
	}
	e.closers = nil
	return first
}

// Encode runs SPEC §9.2 steps 1–4 for one extractor on ds: checks, the fit
// on the gallery (same-modality Fitters only), then the query endpoint and
// only after it the gallery endpoint, in batches admitted against budget
// (nil: unbounded, in memory).
func Encode(ctx context.Context, ds *retrieval.Dataset, e Entry, cfg EmbeddingConfig, budget *admit.Budget) (*Encoded, error) {
	return encodeSides(ctx, ds, e, cfg, budget, [2]matrix.Matrix{})
}

// encodeSides is Encode for the endpoints (query, gallery) not already in
// have, which are taken as they are; the fit runs only when something is
// left to encode.
func encodeSides(ctx context.Context, ds *retrieval.Dataset, e Entry, cfg EmbeddingConfig, budget *admit.Budget, have [2]matrix.Matrix) (*Encoded, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := Check(e, ds.Queries().Modality(), ds.Gallery().Modality()); err != nil {
		return nil, err
	}
	name := e.Extractor.Name()
	branchMode := e.QueryBranch != ""
	if f, ok := e.Extractor.(Fitter); ok && !branchMode && (have[0] == nil || have[1] == nil) {
		if err := f.Fit(ctx, ds.Gallery()); err != nil {
			return nil, fmt.Errorf("Extractor %s: fit on the gallery: %w", name, err)
		}
	}
	out := &Encoded{}
	for i, side := range []struct {
		name, branch string
		items        retrieval.Items
		ids          []string
		dst          *matrix.Matrix
	}{
		{"query", e.QueryBranch, ds.Queries(), ds.QueryIDs(), &out.Query},
		{"gallery", e.GalleryBranch, ds.Gallery(), ds.GalleryIDs(), &out.Gallery},
	} {
		if have[i] != nil {
			*side.dst = have[i]
			continue
		}
		n := side.items.Len()
		batch := n
		if cfg.StreamingEnabled && (e.Extractor.StreamingSafe() || branchMode) {
			batch = cfg.BatchSize
		}
		owner := fmt.Sprintf("Retriever '%s' %s embeddings", name, side.name)
		if p, ok := e.Extractor.(*Precomputed); ok && !branchMode {
			if err := p.checkRows(owner, side.name, n); err != nil {
				out.Close()
				return nil, err
			}
		}
		enc := func(ctx context.Context, lo, hi int) (matrix.Matrix, error) {
			b := Batch{Side: side.name, Start: lo, Items: side.items.Slice(lo, hi), IDs: side.ids[lo:hi]}
			if branchMode {
				return e.Extractor.(BranchEncoder).EncodeBranch(ctx, b, side.branch)
			}
			return e.Extractor.(Encoder).Encode(ctx, b)
		}
		m, closeFn, err := admit.Endpoint(ctx, owner, n, batch, enc, budget)
		if err != nil {
			out.Close()
			return nil, err
		}
		out.closers = append(out.closers, closeFn)
		*side.dst = m
	}
	if qc, gc := out.Query.Cols(), out.Gallery.Cols(); qc != gc {
		out.Close()
		return nil, fmt.Errorf("Extractor %s: Query and gallery embedding dimensions must match; got %d and %d", name, qc, gc)
	}
	return out, nil
}

// StatefulFitter is a Fitter whose fitted state can be serialised, which a
// distributed run needs to ship the state to its workers (SPEC §11.2).
type StatefulFitter interface {
	Fitter
	MarshalState() ([]byte, error)
	UnmarshalState([]byte) error
}

// ContentDigester is implemented by custom endpoint items that support
// content identity (SPEC §2.9).
type ContentDigester interface {
	ContentDigest() (map[string]any, error)
}

// RecipeHash is an extractor's identity: H({"identity_schema": 2, "recipe":
// recipe}) (SPEC §10.2).
func RecipeHash(x Extractor) (string, error) {
	return canonjson.Hash(map[string]any{"identity_schema": 2, "recipe": x.Recipe()})
}
