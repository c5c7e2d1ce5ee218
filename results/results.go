package results

import (
	"bytes"
	"crypto/rand"
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

	// PerQuery holds every query's metrics in index order (CSV export,
	// significance). The JSON report writes it as the columnar `per_query`
	// block (SPEC §6.6) unless the report omits it.
	PerQuery []QueryRow `json:"-"`
	Run      *Run       `json:"-"` // ranking for TREC export, when requested

	// Margins are the per-query retrieval margins (SPEC §4.7) of the
	// queries that have a nearest negative, in query order; the figures
	// of SPEC §5.8 plot their distribution.
	Margins []float64 `json:"-"`
}

// MarshalJSON writes the §5.1 fields plus `per_query` when PerQuery is set.
func (s ScoreResult) MarshalJSON() ([]byte, error) {
	type plain ScoreResult // drops this method, keeps the field tags
	var pq *PerQuery
	if s.PerQuery != nil {
		pq = PerQueryOf(s.PerQuery)
	}
	return json.Marshal(struct {
		plain
		PerQuery *PerQuery `json:"per_query,omitempty"`
	}{plain(s), pq})
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
	// TaskDigests are the canonical hashes of the task's components
	// (query_ids, gallery_ids, relevance, exclusions, retrieval_config;
	// SPEC §6.6), so a refusal to compare names what differs.
	TaskDigests      map[string]string `json:"task_digests,omitempty"`
	VertebraeVersion string            `json:"vertebrae_version"`
}

// Benchmark is SPEC §5.3 (and the §5.4 report when marshalled).
type Benchmark struct {
	SchemaVersion    int                `json:"schema_version"`
	DatasetSummary   retrieval.Summary  `json:"dataset_summary"`
	ExtractorResults []*ExtractorResult `json:"extractor_results"`
	Ranking          []RankEntry        `json:"ranking"`
	Metadata         Metadata           `json:"metadata"`
	// Comparison is SPEC §13; present when the report holds two or more
	// results (SPEC §6.6).
	Comparison *Comparison `json:"comparison,omitempty"`
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

// ReportOptions select optional parts of the JSON report.
type ReportOptions struct {
	// OmitPerQuery leaves out every `per_query` block (--no-per-query).
	OmitPerQuery bool
}

// MarshalReport renders the JSON report of SPEC §5.4 with per-query values:
// keys sorted at every level, 2-space indent, no HTML escaping, one
// trailing newline.
func (b *Benchmark) MarshalReport() ([]byte, error) {
	return b.MarshalReportWith(ReportOptions{})
}

// MarshalReportWith is MarshalReport with options.
//
// Per-query blocks hold most of a large report's numbers (14 per query with
// the default ks), so they bypass the generic re-encoding of Canonicalize:
// the rest of the report is canonicalised as a small tree holding one
// placeholder string per block, and each placeholder is then replaced by
// its block written directly in the same layout (sorted keys, 2-space
// indent at the placeholder's depth, numbers as encoding/json writes
// them). The text equals that of the generic path (tested); the
// placeholders carry a random nonce, so no report string can collide.
func (b *Benchmark) MarshalReportWith(opt ReportOptions) ([]byte, error) {
	c := *b
	c.ExtractorResults = WithoutPerQuery(b.ExtractorResults)
	raw, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return EncodeReport(raw, b.ExtractorResults, opt)
}

// EncodeReport renders a report document as MarshalReportWith does: raw is
// the encoding/json text of a report whose top-level extractor_results are
// ers without their per-query rows (WithoutPerQuery), and ers' per-query
// blocks are written into it directly. Reports rebuilt from artifacts
// take this path too.
func EncodeReport(raw []byte, ers []*ExtractorResult, opt ReportOptions) ([]byte, error) {
	tree, err := decodeGeneric(raw)
	if err != nil {
		return nil, err
	}
	var blocks [][]QueryRow
	var marks []string
	if !opt.OmitPerQuery {
		if blocks, marks, err = placePerQuery(tree, ers); err != nil {
			return nil, err
		}
	}
	text, err := encodeCanonical(tree)
	if err != nil || len(blocks) == 0 {
		return text, err
	}
	return splicePerQuery(text, blocks, marks)
}

// placePerQuery puts a placeholder string where each per_query block goes
// and returns the blocks with their placeholders, in report order.
func placePerQuery(tree any, ers []*ExtractorResult) ([][]QueryRow, []string, error) {
	root, _ := tree.(map[string]any)
	list, _ := root["extractor_results"].([]any)
	if len(list) != len(ers) {
		return nil, nil, fmt.Errorf("encode report: extractor_results changed while encoding")
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, nil, fmt.Errorf("encode report: %w", err)
	}
	var blocks [][]QueryRow
	var marks []string
	for i, r := range ers {
		m, _ := list[i].(map[string]any)
		for _, d := range []struct {
			key string
			s   *ScoreResult
		}{{"forward", r.Forward}, {"reverse", r.Reverse}} {
			if d.s == nil || d.s.PerQuery == nil {
				continue
			}
			dst, ok := m[d.key].(map[string]any)
			if !ok {
				return nil, nil, fmt.Errorf("encode report: result %q has no %s object", r.Name, d.key)
			}
			mark := fmt.Sprintf("vertebrae-per-query-%x-%d", nonce, len(blocks))
			dst["per_query"] = mark
			blocks = append(blocks, d.s.PerQuery)
			marks = append(marks, mark)
		}
	}
	return blocks, marks, nil
}

// splicePerQuery replaces each quoted placeholder by its block, indented
// one level deeper than the line holding the placeholder.
func splicePerQuery(text []byte, blocks [][]QueryRow, marks []string) ([]byte, error) {
	size := len(text)
	for _, rows := range blocks {
		if len(rows) > 0 {
			// ~20 digits plus a newline and ~16 spaces of indent per value
			size += len(rows) * (len(rows[0].Metrics.Keys)*38 + 24 + len(rows[0].QueryID))
		}
	}
	out := make([]byte, 0, size)
	rest := text
	for k, rows := range blocks {
		q := []byte(`"` + marks[k] + `"`)
		at := bytes.Index(rest, q)
		if at < 0 {
			return nil, fmt.Errorf("encode report: per_query placeholder %d missing", k)
		}
		lineStart := bytes.LastIndexByte(rest[:at], '\n') + 1
		indent := 0
		for indent < at-lineStart && rest[lineStart+indent] == ' ' {
			indent++
		}
		out = append(out, rest[:at]...)
		var err error
		if out, err = appendPerQueryIndented(out, rows, indent); err != nil {
			return nil, fmt.Errorf("encode report: per_query: %w", err)
		}
		rest = rest[at+len(q):]
	}
	return append(out, rest...), nil
}

func decodeGeneric(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return v, nil
}

func encodeCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return buf.Bytes(), nil
}

// Canonicalize re-encodes JSON with sorted keys, 2-space indent and no HTML
// escaping, keeping every number's text exactly.
func Canonicalize(raw []byte) ([]byte, error) {
	v, err := decodeGeneric(raw)
	if err != nil {
		return nil, err
	}
	return encodeCanonical(v)
}

// WithoutPerQuery is shallow copies of ers whose score results carry no
// per-query rows (the originals, used by CSV and significance, are
// untouched).
func WithoutPerQuery(ers []*ExtractorResult) []*ExtractorResult {
	out := make([]*ExtractorResult, len(ers))
	strip := func(s *ScoreResult) *ScoreResult {
		if s == nil {
			return nil
		}
		t := *s
		t.PerQuery = nil
		return &t
	}
	for i, r := range ers {
		e := *r
		e.Forward, e.Reverse = strip(r.Forward), strip(r.Reverse)
		out[i] = &e
	}
	return out
}
