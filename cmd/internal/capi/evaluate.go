package capi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/bytesize"
	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/evaluate/compare"
	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/formats/idlist"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/memory/admit"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Pairs are (query ID, gallery ID) columns: the judged pairs of qrels
// (with Grades) or the exclusions.
type Pairs struct {
	QueryIDs   []string  `json:"query_ids"`
	GalleryIDs []string  `json:"gallery_ids"`
	Grades     []float64 `json:"grades,omitempty"`
}

// EvaluateRequest holds the options of `vertebrae retrieval run` under
// their Python names; a key left out keeps the CLI's default.
type EvaluateRequest struct {
	Name          string   `json:"name"`
	QueryIDs      []string `json:"query_ids"`   // nil: the row numbers
	GalleryIDs    []string `json:"gallery_ids"` // nil: the row numbers
	Qrels         *Pairs   `json:"qrels"`
	QueryLabels   []string `json:"query_labels"`
	GalleryLabels []string `json:"gallery_labels"`
	LeaveOneOut   bool     `json:"leave_one_out"`
	Exclusions    *Pairs   `json:"exclusions"`

	DatasetID       string `json:"dataset_id"`
	DatasetRevision string `json:"dataset_revision"`

	Similarity                  string `json:"similarity"`
	K                           []int  `json:"k"`
	Primary                     string `json:"primary"`
	Gain                        string `json:"gain"`
	Precision                   string `json:"precision"`
	Bidirectional               bool   `json:"bidirectional"`
	DropQueriesWithoutPositives bool   `json:"drop_queries_without_positives"`
	WorstQueries                int    `json:"worst_queries"`
	QueryBatchSize              int    `json:"query_batch_size"`
	GalleryBatchSize            int    `json:"gallery_batch_size"`
	MaxPairwiseComparisons      *int64 `json:"max_pairwise_comparisons"`

	Threads        int             `json:"threads"`
	PerQuery       bool            `json:"per_query"`
	MaxMemoryBytes json.RawMessage `json:"max_memory_bytes"` // bytes, or a string with a K/M/G/T or KiB… suffix
	AllowDiskSpill bool            `json:"allow_disk_spill"`
	SpillDir       string          `json:"spill_dir"`
}

// DefaultEvaluateRequest is the request of an empty JSON object: the
// defaults of the CLI's flags.
func DefaultEvaluateRequest() EvaluateRequest {
	c := retrieval.DefaultConfig()
	return EvaluateRequest{
		Name: "precomputed", Similarity: c.Similarity, K: c.Ks, Primary: c.PrimaryMetric, Gain: c.Gain,
		Precision: c.Precision, WorstQueries: c.WorstQueries, QueryBatchSize: c.QueryBatchSize,
		GalleryBatchSize: c.GalleryBatchSize, PerQuery: true, AllowDiskSpill: true,
	}
}

// ParseEvaluateRequest decodes a request over the defaults.
func ParseEvaluateRequest(data []byte) (EvaluateRequest, error) {
	r := DefaultEvaluateRequest()
	err := decodeStrict("evaluate", data, &r)
	return r, err
}

// Inputs are the caller's arrays of an evaluation. Gallery is nil for a
// leave-one-out collection; Relevance (float64, queries × gallery) is the
// dense relevance matrix when that is the relevance source.
type Inputs struct {
	Queries, Gallery *Array
	Relevance        *Array
}

// Evaluate runs one evaluation and returns its JSON report, byte for byte
// what `vertebrae retrieval run --json` writes for the same data and
// options.
func Evaluate(ctx context.Context, req EvaluateRequest, in Inputs) ([]byte, error) {
	_, data, err := EvaluateBenchmark(ctx, req, in)
	return data, err
}

// EvaluateBenchmark is Evaluate that also returns the benchmark itself,
// which renders with what the JSON report leaves out (the per-query margins
// of the distribution figure), as the CLI renders --html and --plots.
func EvaluateBenchmark(ctx context.Context, req EvaluateRequest, in Inputs) (*results.Benchmark, []byte, error) {
	bench, err := evaluateBenchmark(ctx, req, in)
	if err != nil {
		return nil, nil, err
	}
	data, err := bench.MarshalReportWith(results.ReportOptions{OmitPerQuery: !req.PerQuery})
	if err != nil {
		return nil, nil, err
	}
	return bench, data, nil
}

func evaluateBenchmark(ctx context.Context, req EvaluateRequest, in Inputs) (*results.Benchmark, error) {
	if err := req.check(in); err != nil {
		return nil, err
	}
	cfg, err := req.config()
	if err != nil {
		return nil, err
	}
	memCfg, err := req.memoryConfig()
	if err != nil {
		return nil, err
	}
	budget, err := admit.BudgetFor(memCfg)
	if err != nil {
		return nil, err
	}
	if err := req.charge(in, budget); err != nil {
		return nil, err
	}
	ctx = memory.WithLimit(ctx, budget.Limit())
	var ds *retrieval.Dataset
	// The identity may be hashed in the background from the caller's
	// arrays: it finishes before the call returns them.
	defer func() { ds.WaitIdentity() }()
	ds, err = req.dataset(ctx, cfg, in)
	if err != nil {
		return nil, err
	}
	bench, err := evaluate.Run(ctx, ds, cfg, []evaluate.Backbone{evaluate.Precomputed(req.Name)}, evaluate.Options{
		Threads: req.Threads, RunDepth: -1, MemoryConfig: memCfg.AsMap(),
		Compression: []compress.Config{compress.Default()}, Comparison: DefaultComparison(),
	})
	if err != nil {
		return nil, err
	}
	return bench, nil
}

// charge holds the caller's arrays against the budget when spilling is
// off, as the CLI admits its inputs then (SPEC §7.4): with spilling on, a
// resident array is used in place like a mapped file, since staging it on
// disk would only add a copy.
func (r EvaluateRequest) charge(in Inputs, b *admit.Budget) error {
	if b.AllowSpill() {
		return nil
	}
	required := b.Fixed()
	for _, a := range []struct {
		side string
		arr  *Array
	}{{"query", in.Queries}, {"gallery", in.Gallery}} {
		if a.arr == nil {
			continue
		}
		required = memory.Sum(required, memory.Bytes(a.arr.Rows, a.arr.Cols, a.arr.DType.size()))
		if required > b.Limit() {
			return &admit.BudgetError{Owner: fmt.Sprintf("Retriever '%s' %s embeddings", r.Name, a.side), Required: required, Budget: b.Limit()}
		}
	}
	return nil
}

// DefaultComparison are the §13 settings of the CLI's flags left alone.
func DefaultComparison() compare.Options {
	return compare.Options{
		Test: compare.TestRandomization, Alpha: compare.DefaultAlpha, CIMethod: compare.CIBCa,
		Bootstrap: compare.DefaultBootstrap, Permutations: compare.DefaultPermutations,
	}
}

// check is the CLI's flag check: exactly one relevance source, and a
// gallery unless the collection is leave-one-out.
func (r EvaluateRequest) check(in Inputs) error {
	if in.Queries == nil {
		return usagef("queries are required")
	}
	labels := r.QueryLabels != nil
	sources := 0
	for _, given := range []bool{r.Qrels != nil, in.Relevance != nil, labels || r.GalleryLabels != nil} {
		if given {
			sources++
		}
	}
	switch {
	case sources != 1,
		labels && r.GalleryLabels == nil && !r.LeaveOneOut,
		!labels && r.GalleryLabels != nil:
		return usagef("exactly one relevance source is required: qrels, or query_labels with gallery_labels, or query_labels with leave_one_out")
	}
	if r.LeaveOneOut {
		if !labels {
			return usagef("leave_one_out requires query_labels")
		}
		if in.Gallery != nil || r.GalleryIDs != nil || r.GalleryLabels != nil {
			return usagef("leave_one_out takes one collection: give the queries (with query_ids and query_labels) and no gallery")
		}
	} else if in.Gallery == nil {
		return usagef("a gallery is required (or leave_one_out with query_labels)")
	}
	if r.Qrels != nil && (len(r.Qrels.GalleryIDs) != len(r.Qrels.QueryIDs) || len(r.Qrels.Grades) != len(r.Qrels.QueryIDs)) {
		return usagef("qrels: the query_ids, gallery_ids and grades columns must have equal lengths, got %d, %d and %d",
			len(r.Qrels.QueryIDs), len(r.Qrels.GalleryIDs), len(r.Qrels.Grades))
	}
	if r.Exclusions != nil && (len(r.Exclusions.GalleryIDs) != len(r.Exclusions.QueryIDs) || r.Exclusions.Grades != nil) {
		return usagef("exclusions: the query_ids and gallery_ids columns must have equal lengths (and no grades), got %d and %d",
			len(r.Exclusions.QueryIDs), len(r.Exclusions.GalleryIDs))
	}
	if (r.DatasetID == "") != (r.DatasetRevision == "") {
		return usagef("dataset_id and dataset_revision must be given together")
	}
	if r.Threads < 0 {
		return usagef("threads must be >= 0")
	}
	if strings.TrimSpace(r.Name) == "" {
		return usagef("name must not be blank")
	}
	return nil
}

func (r EvaluateRequest) config() (retrieval.Config, error) {
	cfg := retrieval.DefaultConfig()
	cfg.Similarity, cfg.PrimaryMetric, cfg.Gain, cfg.Precision = r.Similarity, r.Primary, r.Gain, r.Precision
	cfg.Bidirectional = r.Bidirectional
	if r.DropQueriesWithoutPositives {
		cfg.QueriesWithoutPositives = retrieval.UnjudgedDrop
	}
	cfg.WorstQueries, cfg.QueryBatchSize, cfg.GalleryBatchSize = r.WorstQueries, r.QueryBatchSize, r.GalleryBatchSize
	if len(r.K) == 0 {
		return cfg, usagef("k: RetrievalConfig.ks must not be empty")
	}
	cfg.Ks = r.K
	cfg.MaxPairwiseComparisons = r.MaxPairwiseComparisons
	err := cfg.Validate()
	var ce *retrieval.ConfigError
	if errors.As(err, &ce) && ce.Field == "primary_metric" {
		return cfg, &retrieval.ConfigError{Field: ce.Field, Msg: "primary: " + retrieval.PrimaryMetricProblem(cfg.PrimaryMetric, cfg.Ks, "k")}
	}
	return cfg, err
}

func (r EvaluateRequest) memoryConfig() (memory.Config, error) {
	cfg := memory.Default()
	if raw := strings.TrimSpace(string(r.MaxMemoryBytes)); raw != "" && raw != "null" {
		var v int64
		var s string
		switch {
		case json.Unmarshal(r.MaxMemoryBytes, &v) == nil:
		case json.Unmarshal(r.MaxMemoryBytes, &s) == nil:
			n, err := bytesize.Parse(s)
			if err != nil {
				return cfg, usagef("max_memory_bytes: %v", err)
			}
			v = n
		default:
			return cfg, usagef("max_memory_bytes must be a whole number of bytes or a size such as \"8GiB\", got %s", raw)
		}
		cfg.MaxMemoryBytes = &v
	}
	cfg.AllowDiskSpill = r.AllowDiskSpill
	cfg.SpillDir = r.SpillDir
	if err := cfg.Validate(); err != nil {
		return cfg, &UsageError{Msg: err.Error()}
	}
	return cfg, nil
}

// dataset builds the dataset as the CLI's flags path does: the same
// checks in the same order, the same identity and options.
func (r EvaluateRequest) dataset(ctx context.Context, cfg retrieval.Config, in Inputs) (*retrieval.Dataset, error) {
	sim, err := rank.ParseSimilarity(cfg.Similarity)
	if err != nil {
		return nil, err
	}
	qe, err := side(in.Queries, "queries", "query", "Query", r.QueryIDs, sim)
	if err != nil {
		return nil, err
	}
	identity := retrieval.FromContent()
	if r.DatasetID != "" {
		identity = retrieval.Declared(r.DatasetID, r.DatasetRevision)
	}
	var excl []retrieval.Pair
	if r.Exclusions != nil {
		excl = make([]retrieval.Pair, len(r.Exclusions.QueryIDs))
		for i := range excl {
			excl[i] = retrieval.Pair{QueryID: r.Exclusions.QueryIDs[i], GalleryID: r.Exclusions.GalleryIDs[i]}
		}
	}
	opts := []retrieval.Option{retrieval.WithIdentity(identity), retrieval.WithExclusions(excl), retrieval.WithBackgroundIdentity(), retrieval.WithContext(ctx)}
	if r.DatasetID == "" {
		opts = append(opts, retrieval.WithIDsOnlyIdentity())
	}
	if cfg.DropsQueriesWithoutPositives() {
		opts = append(opts, retrieval.WithDropQueriesWithoutPositives())
	}
	if r.LeaveOneOut {
		ds, err := retrieval.NewLeaveOneOutDataset(qe, r.QueryIDs, r.QueryLabels, opts...)
		return ds, nameSource(err, "", "query_labels")
	}
	ge, err := side(in.Gallery, "gallery", "gallery", "Gallery", r.GalleryIDs, sim)
	if err != nil {
		return nil, err
	}
	if qm, gm := qe.Matrix(), ge.Matrix(); qm.Cols() != gm.Cols() {
		return nil, fmt.Errorf("Query and gallery embedding dimensions must match: queries has width %d, gallery has width %d (same width; got %d and %d)",
			qm.Cols(), gm.Cols(), qm.Cols(), gm.Cols())
	}
	var rel retrieval.Relevance
	source, labels := "", ""
	switch {
	case r.Qrels != nil:
		source = "qrels"
		if len(r.Qrels.QueryIDs) == 0 {
			return nil, formats.Errorf("qrels", "no relevance records: the qrels are empty")
		}
		recs := make([]retrieval.Record, len(r.Qrels.QueryIDs))
		for i := range recs {
			recs[i] = retrieval.Record{QueryID: r.Qrels.QueryIDs[i], GalleryID: r.Qrels.GalleryIDs[i], Grade: r.Qrels.Grades[i], Origin: "qrels[" + strconv.Itoa(i) + "]"}
		}
		rel = retrieval.RecordRelevance(recs)
	case in.Relevance != nil:
		source = "qrels"
		if rel, err = denseRelevance(*in.Relevance); err != nil {
			return nil, err
		}
	default:
		labels = "query_labels, gallery_labels"
		rel = retrieval.LabelRelevance(r.QueryLabels, r.GalleryLabels)
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: qe, Gallery: ge, QueryIDs: r.QueryIDs, GalleryIDs: r.GalleryIDs,
	}, rel, opts...)
	return ds, nameSource(err, source, labels)
}

// side checks one endpoint as the CLI checks a file: IDs, width,
// finite values, alignment. arg names the argument ("queries").
func side(a *Array, arg, side, endpoint string, ids []string, sim rank.Similarity) (retrieval.EmbeddingItems, error) {
	var none retrieval.EmbeddingItems
	if err := idlist.Check(side, arg+"_ids", ids, false); err != nil {
		return none, err
	}
	m, err := a.Matrix(arg)
	if err != nil {
		return none, err
	}
	if m.Cols() == 0 {
		return none, formats.Errorf(arg, "%s embeddings must be a 2D array with at least one column; got shape (%d, 0)", endpoint, m.Rows())
	}
	if row, col, bad := rank.FirstNonFinite(m, sim, 0); bad {
		id := strconv.Itoa(row)
		if row < len(ids) {
			id = ids[row]
		}
		return none, formats.Errorf(arg, "%s embeddings must contain only finite numeric values; row %d (ID %s), column %d is %v", endpoint, row, msgfmt.Quote(id), col, m.At(row, col))
	}
	if ids != nil && len(ids) != m.Rows() {
		return none, formats.Errorf(arg+"_ids", "%s IDs must align with their input collections: %d IDs for the %d rows of %s", side, len(ids), m.Rows(), arg)
	}
	return retrieval.Embeddings(m), nil
}

// denseRelevance reads a float64 queries × gallery relevance matrix.
func denseRelevance(a Array) (retrieval.Relevance, error) {
	if a.DType != Float64 {
		return nil, usagef("qrels: a dense relevance matrix must be float64 (element type code 2), got code %d", a.DType)
	}
	m, err := a.Matrix("qrels")
	if err != nil {
		return nil, err
	}
	data := m.Float64Data()
	rows := make([][]float64, m.Rows())
	for i := range rows {
		rows[i] = data[i*m.Cols() : (i+1)*m.Cols() : (i+1)*m.Cols()]
	}
	return retrieval.DenseRelevance(rows), nil
}

// nameSource prefixes relevance errors that carry no origin of their own
// with the argument they came from, as the CLI names the file.
func nameSource(err error, qrels, labels string) error {
	var inv *retrieval.InvalidError
	if err == nil || !errors.As(err, &inv) {
		return err
	}
	msg := inv.Error()
	switch {
	case qrels != "" && (strings.HasPrefix(msg, "Dense relevance") || strings.HasPrefix(msg, "Sparse relevance") ||
		strings.HasPrefix(msg, "Relevance grades must be finite and non-negative (query")):
		return fmt.Errorf("%s: %w", qrels, err)
	case labels != "" && strings.Contains(msg, "labels must"):
		return fmt.Errorf("%s: %w", labels, err)
	}
	return err
}
