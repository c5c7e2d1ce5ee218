package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/evaluate/compare"
	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/report"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Summary is the dataset summary of a reconstruction (SPEC §10.8 step 6).
type Summary struct {
	Modality        string         `json:"modality"`
	NQueries        int            `json:"n_queries"`
	NGallery        int            `json:"n_gallery"`
	QueryModality   string         `json:"query_modality"`
	GalleryModality string         `json:"gallery_modality"`
	Identity        map[string]any `json:"identity"`
}

// ReportMetadata is the metadata of a reconstruction.
type ReportMetadata struct {
	ArtifactBacked      bool             `json:"artifact_backed"`
	ScoreKeys           []string         `json:"score_keys"`
	RelevanceKey        string           `json:"relevance_key"`
	ProtocolFingerprint string           `json:"protocol_fingerprint"`
	RetrievalConfig     retrieval.Config `json:"retrieval_config"`
	VertebraeVersion    string           `json:"vertebrae_version"`
}

// Reconstruction is the §5.4 report rebuilt from score artifacts.
type Reconstruction struct {
	SchemaVersion    int                        `json:"schema_version"`
	DatasetSummary   Summary                    `json:"dataset_summary"`
	ExtractorResults []*results.ExtractorResult `json:"extractor_results"`
	Ranking          []results.RankEntry        `json:"ranking"`
	// Comparison is the §13 comparison of two or more results, with the
	// default options (as a run without --compare flags computes it).
	Comparison *results.Comparison `json:"comparison,omitempty"`
	Metadata   ReportMetadata      `json:"metadata"`
}

// Benchmark views the reconstruction as a benchmark for the report writers.
func (r *Reconstruction) Benchmark() *results.Benchmark {
	return &results.Benchmark{SchemaVersion: r.SchemaVersion, ExtractorResults: r.ExtractorResults, Ranking: r.Ranking,
		Comparison: r.Comparison,
		Metadata: results.Metadata{RetrievalConfig: r.Metadata.RetrievalConfig, ProtocolFingerprint: r.Metadata.ProtocolFingerprint,
			VertebraeVersion: r.Metadata.VertebraeVersion}}
}

// MarshalReport renders the JSON report (sorted keys, 2-space indent).
func (r *Reconstruction) MarshalReport() ([]byte, error) {
	c := *r
	c.ExtractorResults = results.WithoutPerQuery(r.ExtractorResults)
	raw, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return results.EncodeReport(raw, r.ExtractorResults, results.ReportOptions{})
}

// Markdown renders the §5.5 report with the §10.8 dataset summary.
func (r *Reconstruction) Markdown() ([]byte, error) {
	id, err := canonjson.Marshal(r.DatasetSummary.Identity)
	if err != nil {
		return nil, err
	}
	s := r.DatasetSummary
	return report.MarkdownWithSummary(r.Benchmark(), []report.SummaryEntry{
		{Key: "modality", Value: s.Modality}, {Key: "query_modality", Value: s.QueryModality},
		{Key: "gallery_modality", Value: s.GalleryModality}, {Key: "n_queries", Value: strconv.Itoa(s.NQueries)},
		{Key: "n_gallery", Value: strconv.Itoa(s.NGallery)}, {Key: "identity", Value: string(id)},
	})
}

const fpInconsistent = "protocol fingerprint is inconsistent with its relevance, exclusions, or retrieval_config"

// FromArtifacts reconstructs a ranked result from score artifacts, running
// the checks of SPEC §10.8 in order.
func (s *Store) FromArtifacts(ctx context.Context, scoreKeys []string) (*Reconstruction, error) {
	if len(scoreKeys) == 0 {
		return nil, fmt.Errorf("%w: from-artifacts needs at least one score key", ErrCheck)
	}
	docs := make([]*Evaluation, len(scoreKeys))
	for i, k := range scoreKeys {
		doc := &Evaluation{}
		if _, err := s.ReadJSON(ctx, k, doc); err != nil {
			return nil, err
		}
		if doc.ArtifactType != TypeEvaluation {
			return nil, s.CheckType(ctx, k, ScoreArtifact)
		}
		docs[i] = doc
	}
	for i, d := range docs {
		if d.ProtocolFingerprint == "" || d.ProtocolFingerprint != docs[0].ProtocolFingerprint || d.RelevanceKey != docs[0].RelevanceKey {
			return nil, checkErr(scoreKeys[i], fmt.Sprintf("protocol fingerprint mismatch: %q with relevance %q, but %s has %q with relevance %q",
				d.ProtocolFingerprint, d.RelevanceKey, scoreKeys[0], docs[0].ProtocolFingerprint, docs[0].RelevanceKey))
		}
	}
	// Only its fingerprint, sizes and exclusions are used: no gallery ID.
	prot, err := s.readRelevanceView(ctx, docs[0].RelevanceKey, viewOptions{})
	if err != nil {
		return nil, err
	}
	rc := &Reconstruction{SchemaVersion: 1}
	var cfg0 retrieval.Config
	for i, d := range docs {
		key := scoreKeys[i]
		cfg, err := retrieval.ConfigFromMap(jsonNumbers(d.RetrievalConfig))
		if err != nil {
			return nil, checkErr(key, fmt.Sprintf("%s: retrieval_config: %v", fpInconsistent, err))
		}
		pairs := prot.Doc.Exclusions
		if d.ExclusionsKey != nil {
			if pairs, _, err = s.ReadExclusions(ctx, *d.ExclusionsKey, prot.Doc.NQueries, prot.Doc.NGallery); err != nil {
				return nil, err
			}
		}
		pf, err := retrieval.ProtocolFingerprintOf(prot.Doc.ProtocolFingerprint, pairsAny(pairs), cfg)
		if err != nil {
			return nil, err
		}
		if pf != d.ProtocolFingerprint {
			return nil, checkErr(key, fpInconsistent)
		}
		if i == 0 {
			cfg0 = cfg
		}
		r, err := extractorResult(key, d, cfg)
		if err != nil {
			return nil, err
		}
		rc.ExtractorResults = append(rc.ExtractorResults, r)
	}
	b := &results.Benchmark{ExtractorResults: rc.ExtractorResults}
	if err := b.Finalize(); err != nil {
		return nil, err
	}
	rc.Ranking = b.Ranking
	if len(b.ExtractorResults) >= 2 && hasPerQuery(b) {
		b.Metadata.RetrievalConfig = cfg0
		if rc.Comparison, err = compare.Compute(ctx, b, compare.Options{}); err != nil {
			return nil, err
		}
	}
	rc.DatasetSummary = Summary{Modality: "retrieval", NQueries: prot.Doc.NQueries, NGallery: prot.Doc.NGallery,
		QueryModality: prot.Doc.QueryModality, GalleryModality: prot.Doc.GalleryModality, Identity: prot.Doc.DatasetIdentity}
	if rc.DatasetSummary.Identity == nil {
		rc.DatasetSummary.Identity = map[string]any{"key": prot.Doc.DatasetIdentityKey}
	}
	rc.Metadata = ReportMetadata{ArtifactBacked: true, ScoreKeys: append([]string(nil), scoreKeys...), RelevanceKey: prot.Key,
		ProtocolFingerprint: docs[0].ProtocolFingerprint, RetrievalConfig: cfg0, VertebraeVersion: version.Version}
	return rc, nil
}

// hasPerQuery reports whether every result keeps its per-query values,
// which the comparison needs (a score written with --no-per-query has none).
func hasPerQuery(b *results.Benchmark) bool {
	for _, r := range b.ExtractorResults {
		if r.Forward == nil || r.Forward.PerQuery == nil {
			return false
		}
		if r.Reverse != nil && r.Reverse.PerQuery == nil {
			return false
		}
	}
	return true
}

// jsonNumbers turns float64 integers back into json.Number so configs
// decoded without UseNumber pass the integer checks.
func jsonNumbers(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch t := v.(type) {
		case float64:
			out[k] = json.Number(strconv.FormatFloat(t, 'f', -1, 64))
		case []any:
			l := make([]any, len(t))
			for i, e := range t {
				if f, ok := e.(float64); ok {
					l[i] = json.Number(strconv.FormatFloat(f, 'f', -1, 64))
				} else {
					l[i] = e
				}
			}
			out[k] = l
		default:
			out[k] = v
		}
	}
	return out
}

func extractorResult(key string, d *Evaluation, cfg retrieval.Config) (*results.ExtractorResult, error) {
	bad := func(format string, args ...any) error { return checkErr(key, fmt.Sprintf(format, args...)) }
	fwd, err := decodeScore(d.Forward, d.PerQuery.Forward, cfg)
	if err != nil {
		return nil, bad("forward: %v", err)
	}
	if fwd == nil {
		return nil, bad("forward score result is missing")
	}
	rev, err := decodeScore(d.Reverse, d.PerQuery.Reverse, cfg)
	if err != nil {
		return nil, bad("reverse: %v", err)
	}
	if (rev != nil) != cfg.Bidirectional {
		return nil, bad("reverse must be present exactly when retrieval_config is bidirectional (bidirectional=%v)", cfg.Bidirectional)
	}
	want := fwd.Score
	if rev != nil {
		want = (fwd.Score + rev.Score) / 2
	}
	if d.PrimaryScore != want {
		return nil, bad("primary_score %v is not the forward score or the forward/reverse mean (%v)", d.PrimaryScore, want)
	}
	recipe, _ := d.QueryEndpoint["extractor_recipe"].(map[string]any)
	if recipe == nil {
		recipe = map[string]any{}
	}
	name, _ := recipe["name"].(string)
	if name == "" {
		name = "artifact"
	}
	typ, _ := recipe["extractor_type"].(string)
	if typ == "" {
		typ = "unknown"
	}
	comp := d.CompressionMetadata
	if comp == nil {
		if c, ok := d.GalleryEndpoint["compression"].(map[string]any); ok {
			comp = c
		}
	}
	if comp == nil {
		return nil, bad("no compression metadata")
	}
	var ws []string
	ws = append(ws, fwd.Warnings...)
	if rev != nil {
		ws = append(ws, rev.Warnings...)
	}
	if l, ok := comp["warnings"].([]any); ok {
		for _, w := range l {
			if s, ok := w.(string); ok {
				ws = append(ws, s)
			}
		}
	}
	sort.Strings(ws)
	uniq := []string{}
	for i, w := range ws {
		if i == 0 || w != ws[i-1] {
			uniq = append(uniq, w)
		}
	}
	variant, err := variantName(name, comp)
	if err != nil {
		return nil, bad("compression metadata: %v", err)
	}
	return &results.ExtractorResult{Name: variant, ExtractorType: typ, Forward: fwd, Reverse: rev, PrimaryScore: d.PrimaryScore,
		CompressionMetadata: comp, Warnings: uniq, Recipe: recipe}, nil
}

func variantName(name string, comp map[string]any) (string, error) {
	recipe, _ := comp["recipe"].(map[string]any)
	if recipe == nil || recipe["enabled"] == false {
		return name, nil
	}
	m := make(map[string]any, len(recipe))
	for k, v := range recipe {
		if k != "generator" {
			m[k] = v
		}
	}
	cfg, err := compress.ConfigFromMap(jsonNumbers(m))
	if err != nil {
		return "", err
	}
	dim := 0
	switch t := comp["compressed_dim"].(type) {
	case float64:
		dim = int(t)
	case json.Number:
		n, _ := t.Int64()
		dim = int(n)
	}
	return compress.VariantName(name, cfg, dim), nil
}

type scoreJSON struct {
	Score         float64            `json:"score"`
	PrimaryMetric string             `json:"primary_metric"`
	Metrics       map[string]float64 `json:"metrics"`
	Diagnostics   struct {
		PositiveSimilarity        metrics.Summary  `json:"positive_similarity"`
		NearestNegativeSimilarity metrics.Summary  `json:"nearest_negative_similarity"`
		RetrievalMargin           metrics.Summary  `json:"retrieval_margin"`
		EligibleQueries           int              `json:"eligible_queries"`
		WorstQueries              []map[string]any `json:"worst_queries"`
	} `json:"diagnostics"`
	Warnings []string `json:"warnings"`
	// PerQuery is the columnar per-query block (the same values as the
	// document's per-query rows, which are read only when it is absent):
	// arrays of numbers decode far faster than an object per query.
	PerQuery *struct {
		QueryIDs []string             `json:"query_ids"`
		Metrics  map[string][]float64 `json:"metrics"`
	} `json:"per_query"`
	Metadata struct {
		Config     map[string]any `json:"config"`
		NQueries   int            `json:"n_queries"`
		NGallery   int            `json:"n_gallery"`
		Similarity string         `json:"similarity"`
		Exact      bool           `json:"exact"`
	} `json:"metadata"`
}

// decodeScore rebuilds a §5.1 score result; nil for JSON null.
func decodeScore(raw, perQuery json.RawMessage, cfg retrieval.Config) (*results.ScoreResult, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var sj scoreJSON
	if err := json.Unmarshal(raw, &sj); err != nil {
		return nil, err
	}
	keys := cfg.MetricKeys()
	vals, err := orderedValues(sj.Metrics, keys)
	if err != nil {
		return nil, err
	}
	rows := func(list []map[string]any) ([]results.QueryRow, error) {
		out := make([]results.QueryRow, 0, len(list))
		for _, r := range list {
			id, _ := r["query_id"].(string)
			m := map[string]float64{}
			for k, v := range r {
				if f, ok := v.(float64); ok {
					m[k] = f
				}
			}
			v, err := orderedValues(m, keys)
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", id, err)
			}
			out = append(out, results.QueryRow{QueryID: id, Metrics: v})
		}
		return out, nil
	}
	worst, err := rows(sj.Diagnostics.WorstQueries)
	if err != nil {
		return nil, err
	}
	c, err := retrieval.ConfigFromMap(jsonNumbers(sj.Metadata.Config))
	if err != nil {
		return nil, err
	}
	res := &results.ScoreResult{Score: sj.Score, PrimaryMetric: sj.PrimaryMetric, Metrics: results.MetricObject{Values: vals},
		Diagnostics: results.Diagnostics{PositiveSimilarity: sj.Diagnostics.PositiveSimilarity,
			NearestNegativeSimilarity: sj.Diagnostics.NearestNegativeSimilarity, RetrievalMargin: sj.Diagnostics.RetrievalMargin,
			EligibleQueries: sj.Diagnostics.EligibleQueries, WorstQueries: worst},
		Warnings: sj.Warnings,
		Metadata: results.ScoreMetadata{Config: c, NQueries: sj.Metadata.NQueries, NGallery: sj.Metadata.NGallery,
			Similarity: sj.Metadata.Similarity, Exact: sj.Metadata.Exact}}
	if res.Warnings == nil {
		res.Warnings = []string{}
	}
	if s, ok := vals.Get(res.PrimaryMetric); !ok || s != res.Score {
		return nil, fmt.Errorf("score %v is not metrics[%q]", res.Score, res.PrimaryMetric)
	}
	if pq := sj.PerQuery; pq != nil && len(bytes.TrimSpace(perQuery)) > 0 && string(bytes.TrimSpace(perQuery)) != "null" {
		n := len(pq.QueryIDs)
		cols := make([][]float64, len(keys))
		for j, k := range keys {
			if cols[j] = pq.Metrics[k]; len(cols[j]) != n {
				return nil, fmt.Errorf("per_query: metric %q has %d values for %d queries", k, len(cols[j]), n)
			}
		}
		shared := slices.Clone(keys) // every row's keys (read only)
		vals := make([]float64, n*len(keys))
		res.PerQuery = make([]results.QueryRow, n)
		for i, id := range pq.QueryIDs {
			v := vals[i*len(keys) : (i+1)*len(keys) : (i+1)*len(keys)]
			for j, k := range keys {
				if x := cols[j][i]; math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("per_query: query %q: metric %q is missing or not finite", id, k)
				} else {
					v[j] = x
				}
			}
			res.PerQuery[i] = results.QueryRow{QueryID: id, Metrics: metrics.Values{Keys: shared, Vals: v}}
		}
	} else if len(bytes.TrimSpace(perQuery)) > 0 && string(bytes.TrimSpace(perQuery)) != "null" {
		var list []map[string]any
		if err := json.Unmarshal(perQuery, &list); err != nil {
			return nil, fmt.Errorf("per_query: %w", err)
		}
		if res.PerQuery, err = rows(list); err != nil {
			return nil, fmt.Errorf("per_query: %w", err)
		}
	}
	return res, nil
}

func orderedValues(m map[string]float64, keys []string) (metrics.Values, error) {
	v := metrics.Values{Keys: append([]string(nil), keys...), Vals: make([]float64, len(keys))}
	for i, k := range keys {
		x, ok := m[k]
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			return v, fmt.Errorf("metric %q is missing or not finite", k)
		}
		v.Vals[i] = x
	}
	return v, nil
}
