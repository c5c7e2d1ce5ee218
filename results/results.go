// Package results holds the result values of SPEC §5.1–§5.3: one direction's
// score result, one extractor result per (extractor × compression variant),
// and the benchmark result with its ranked view. They marshal to the JSON
// report contract of SPEC §5.4.
package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Metrics is an ordered metric → value list that marshals as a JSON object.
type Metrics = metrics.Values

// QueryRow is one query's metrics: a worst-queries row or a CSV line.
type QueryRow struct {
	QueryID string
	Metrics Metrics
}

// MarshalJSON writes {"query_id": …, <metric>: …}.
func (r QueryRow) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(r.Metrics.Keys)+1)
	m["query_id"] = r.QueryID
	for i, k := range r.Metrics.Keys {
		m[k] = r.Metrics.Vals[i]
	}
	return json.Marshal(m)
}

// Diagnostics is SPEC §4.7.
type Diagnostics struct {
	PositiveSimilarity        metrics.Summary `json:"positive_similarity"`
	NearestNegativeSimilarity metrics.Summary `json:"nearest_negative_similarity"`
	RetrievalMargin           metrics.Summary `json:"retrieval_margin"`
	EligibleQueries           int             `json:"eligible_queries"`
	WorstQueries              []QueryRow      `json:"worst_queries"`
}

// ScoreMetadata is the metadata of a score result.
type ScoreMetadata struct {
	Config     retrieval.Config `json:"config"`
	NQueries   int              `json:"n_queries"`
	NGallery   int              `json:"n_gallery"`
	Similarity string           `json:"similarity"`
	Exact      bool             `json:"exact"`
}

// RankedCandidate is one line of a TREC run.
type RankedCandidate struct {
	Index int
	Score float64
}

// Run is a direction's exported ranking (not part of the JSON report).
type Run struct {
	QueryIDs, GalleryIDs []string
	Float32              bool                // scores are float32 values
	Candidates           [][]RankedCandidate // per query, rank order
}

// ScoreResult is SPEC §5.1.
type ScoreResult struct {
	Score         float64       `json:"score"`
	PrimaryMetric string        `json:"primary_metric"`
	Metrics       MetricObject  `json:"metrics"`
	Diagnostics   Diagnostics   `json:"diagnostics,omitzero"` // omitted by evaluate-run (SPEC §6.7)
	Warnings      []string      `json:"warnings"`
	Metadata      ScoreMetadata `json:"metadata"`

	PerQuery []QueryRow `json:"-"` // every query, in index order (CSV export)
	Run      *Run       `json:"-"` // ranking for TREC export, when requested
}

// MetricObject marshals metric values as a JSON object.
type MetricObject struct{ metrics.Values }

// MarshalJSON implements json.Marshaler.
func (m MetricObject) MarshalJSON() ([]byte, error) {
	out := make(map[string]float64, len(m.Keys))
	for i, k := range m.Keys {
		out[k] = m.Vals[i]
	}
	return json.Marshal(out)
}

// Runtime is the timing block of an extractor result.
type Runtime struct {
	ExtractionSeconds float64 `json:"extraction_seconds"`
	ScoringSeconds    float64 `json:"scoring_seconds"`
}

// ExtractorResult is SPEC §5.2.
type ExtractorResult struct {
	Name                string         `json:"name"`
	ExtractorType       string         `json:"extractor_type"`
	Forward             *ScoreResult   `json:"forward"`
	Reverse             *ScoreResult   `json:"reverse"`
	PrimaryScore        float64        `json:"primary_score"`
	CompressionMetadata map[string]any `json:"compression_metadata"`
	Runtime             Runtime        `json:"runtime"`
	Warnings            []string       `json:"warnings"`
	Recipe              map[string]any `json:"recipe"`
	// CacheStatus is the endpoint cache status of SPEC §9.5 (hit, miss,
	// disabled, bypassed_unsafe_identity) of extractor runs; results built
	// from precomputed flags or artifacts carry none.
	CacheStatus string `json:"cache_status,omitempty"`
}

// RankEntry is one row of the ranked view.
type RankEntry struct {
	Rank         int     `json:"rank"`
	Name         string  `json:"name"`
	PrimaryScore float64 `json:"primary_score"`
}

// Metadata is the benchmark metadata of SPEC §5.4.
type Metadata struct {
	RetrievalConfig     retrieval.Config `json:"retrieval_config"`
	CompressionConfigs  []map[string]any `json:"compression_configs"`
	EmbeddingConfig     map[string]any   `json:"embedding_config"`
	MemoryConfig        map[string]any   `json:"memory_config"`
	ProtocolFingerprint string           `json:"protocol_fingerprint"`
	VertebraeVersion    string           `json:"vertebrae_version"`
}

// Benchmark is SPEC §5.3 (and the §5.4 report when marshalled).
type Benchmark struct {
	SchemaVersion    int                `json:"schema_version"`
	DatasetSummary   retrieval.Summary  `json:"dataset_summary"`
	ExtractorResults []*ExtractorResult `json:"extractor_results"`
	Ranking          []RankEntry        `json:"ranking"`
	Metadata         Metadata           `json:"metadata"`
}

// ErrDuplicateName is returned when two results share a name.
var ErrDuplicateName = errors.New("duplicate extractor result name")

// Ranked returns the results sorted by primary score, descending, stable.
func (b *Benchmark) Ranked() []*ExtractorResult {
	out := append([]*ExtractorResult(nil), b.ExtractorResults...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].PrimaryScore > out[j].PrimaryScore })
	return out
}

// Finalize checks names and fills the ranking.
func (b *Benchmark) Finalize() error {
	seen := map[string]bool{}
	for _, r := range b.ExtractorResults {
		if seen[r.Name] {
			return fmt.Errorf("%w: %q", ErrDuplicateName, r.Name)
		}
		seen[r.Name] = true
	}
	b.SchemaVersion = 1
	b.Ranking = b.Ranking[:0]
	for i, r := range b.Ranked() {
		b.Ranking = append(b.Ranking, RankEntry{Rank: i + 1, Name: r.Name, PrimaryScore: r.PrimaryScore})
	}
	return nil
}

// QualityCohort returns the ranked results within tol of the best score.
func (b *Benchmark) QualityCohort(tol float64) ([]*ExtractorResult, error) {
	if tol < 0 {
		return nil, errors.New("tolerance must be >= 0")
	}
	ranked := b.Ranked()
	if len(ranked) == 0 {
		return nil, nil
	}
	best := ranked[0].PrimaryScore
	var out []*ExtractorResult
	for _, r := range ranked {
		if r.PrimaryScore >= best-tol {
			out = append(out, r)
		}
	}
	return out, nil
}

// MarshalReport renders the JSON report of SPEC §5.4: keys sorted at every
// level, 2-space indent, no HTML escaping, one trailing newline.
func (b *Benchmark) MarshalReport() ([]byte, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return Canonicalize(raw)
}

// Canonicalize re-encodes JSON with sorted keys, 2-space indent and no HTML
// escaping, keeping every number's text exactly.
func Canonicalize(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return buf.Bytes(), nil
}
