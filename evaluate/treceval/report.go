package treceval

import (
	"fmt"
	"math"
	"time"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// benchmark assembles the report (see Evaluate for the field choices).
func (e *evaluator) benchmark(cfg retrieval.Config, name, runSHA string, elapsed time.Duration) (*results.Benchmark, error) {
	q := e.q
	rows := make([]results.QueryRow, len(e.rows))
	for i, v := range e.rows {
		for j, x := range v.Vals {
			if math.IsNaN(x) || math.IsInf(x, 0) { // cannot happen: metrics are clipped ratios
				return nil, fmt.Errorf("runeval: non-finite %s for query %q", v.Keys[j], q.ids[i])
			}
		}
		rows[i] = results.QueryRow{QueryID: q.ids[i], Metrics: v}
	}
	mean := metrics.Mean(e.rows)
	score, _ := mean.Get(cfg.PrimaryMetric)
	warnings := e.warnings()
	if warnings == nil {
		warnings = []string{}
	}
	fwd := &results.ScoreResult{
		Score: score, PrimaryMetric: cfg.PrimaryMetric, Metrics: results.MetricObject{Values: mean},
		// Diagnostics need the full candidate set: omitted (SPEC §6.7).
		Warnings: warnings,
		Metadata: results.ScoreMetadata{
			Config: cfg.Clone(), NQueries: len(rows), NGallery: e.docs.len(), Similarity: similarityName, Exact: false,
		},
		PerQuery: rows,
	}
	fp, err := canonjson.Hash(map[string]any{
		"identity_schema":      2,
		"kind":                 "trec_run_evaluation",
		"dataset_identity_key": q.identityKey,
		"retrieval_config":     cfg.ProtocolFields(),
		"ties":                 e.ties.String(),
	})
	if err != nil {
		return nil, fmt.Errorf("runeval: protocol fingerprint: %w", err)
	}
	b := &results.Benchmark{
		DatasetSummary: retrieval.Summary{
			Modality: "retrieval", QueryModality: "unknown", GalleryModality: "unknown",
			NQueries: len(rows), NGallery: e.docs.len(), NRelevancePairs: q.NumPositives(),
			Identity: map[string]any{"schema_version": 2, "mode": "content", "key": q.identityKey},
			Metadata: map[string]any{},
		},
		ExtractorResults: []*results.ExtractorResult{{
			Name: name, ExtractorType: extractorType, Forward: fwd, PrimaryScore: score,
			CompressionMetadata: map[string]any{
				"enabled": false, "method": "none", "applied": false, "fit_side": "gallery", "warnings": []any{},
			},
			Runtime:  results.Runtime{ScoringSeconds: elapsed.Seconds()},
			Warnings: warnings,
			Recipe: map[string]any{
				"name": name, "extractor_type": extractorType, "run_tag": e.stats.Tag, "run_sha256": runSHA, "ties": e.ties.String(),
			},
		}},
		Metadata: results.Metadata{
			RetrievalConfig:     cfg.Clone(),
			CompressionConfigs:  []map[string]any{},
			EmbeddingConfig:     map[string]any{},
			MemoryConfig:        map[string]any{},
			ProtocolFingerprint: fp,
			VertebraeVersion:    version.Version,
		},
	}
	if err := b.Finalize(); err != nil {
		return nil, err
	}
	return b, nil
}
