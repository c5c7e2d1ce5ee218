package evaluate

import (
	"context"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/memory/admit"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Benchmark runs a dataset against several extractors (package extract) × compression variants
// under one protocol and returns the ranked result of SPEC §5. Endpoints are
// encoded through the memory-bounded pipeline; each extractor's endpoints are
// released once its variants are scored.
type Benchmark struct {
	Dataset     *retrieval.Dataset
	Config      retrieval.Config
	Extractors  []extract.Entry
	Compression []compress.Config // nil: only the uncompressed variant
	Embedding   extract.EmbeddingConfig
	Memory      memory.Config
	Threads     int // 0 = GOMAXPROCS
	RunDepth    int // < 0 none, 0 full ranking, N top N (forward)
	// Cache, when set, keeps the endpoints of cache-eligible extractors
	// across runs (SPEC §9.5); nil reports every result as disabled.
	Cache extract.EndpointCache
}

// Run checks every extractor against the dataset before encoding anything,
// then evaluates them in order. An error in any extractor aborts the run.
func (b *Benchmark) Run(ctx context.Context) (*results.Benchmark, error) {
	if b.Dataset == nil {
		return nil, fmt.Errorf("benchmark has no dataset")
	}
	if len(b.Extractors) == 0 {
		return nil, fmt.Errorf("benchmark has no extractors")
	}
	if err := b.Embedding.Validate(); err != nil {
		return nil, err
	}
	qm, gm := b.Dataset.Queries().Modality(), b.Dataset.Gallery().Modality()
	for _, e := range b.Extractors {
		if err := extract.Check(e, qm, gm); err != nil {
			return nil, err
		}
	}
	budget, err := admit.BudgetFor(b.Memory)
	if err != nil {
		return nil, err
	}
	backbones := make([]Backbone, len(b.Extractors))
	for i, e := range b.Extractors {
		var enc *extract.Encoded
		status := extract.CacheDisabled
		backbones[i] = Backbone{
			Name: e.Extractor.Name(), Type: e.Extractor.Type(), Recipe: e.Extractor.Recipe(),
			// evaluate encodes the query side first: that call runs the
			// whole §9.2 flow (fit on the gallery, queries, then gallery).
			Encode: func(ctx context.Context, side string, _ retrieval.Items) (matrix.Matrix, error) {
				if enc == nil {
					var err error
					if enc, status, err = extract.EncodeCached(ctx, b.Dataset, e, b.Embedding, budget, b.Cache, !e.NoCache); err != nil {
						return nil, err
					}
					// Both endpoints are encoded: an extractor with
					// persistent workers (command, persistent: true) ends
					// them now, freeing the model before the next extractor,
					// and a worker that does not exit 0 fails the run
					// (SPEC §9.4).
					if s, ok := e.Extractor.(interface{ Shutdown(context.Context) error }); ok {
						if err := s.Shutdown(ctx); err != nil {
							enc.Close()
							enc = nil
							return nil, fmt.Errorf("Extractor %s: %w", e.Extractor.Name(), err)
						}
					}
				}
				if side == "query" {
					return enc.Query, nil
				}
				return enc.Gallery, nil
			},
			CacheStatus: func() string { return status },
			Release: func() error {
				if enc == nil {
					return nil
				}
				return enc.Close()
			},
		}
	}
	return Run(ctx, b.Dataset, b.Config, backbones, Options{
		Threads: b.Threads, RunDepth: b.RunDepth, Compression: b.Compression,
		MemoryConfig: b.Memory.AsMap(), EmbeddingConfig: b.Embedding.AsMap(),
	})
}
