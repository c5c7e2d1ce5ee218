package retrieval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/confval"
)

// Similarity names (SPEC §4.2).
const (
	Cosine    = "cosine"
	Dot       = "dot"
	SquaredL2 = "squared_l2"
)

// Gain and precision names (SPEC §3.1).
const (
	GainExponential = "exponential"
	GainLinear      = "linear"
	PrecisionF64    = "float64"
	PrecisionF32    = "float32"
)

// Config is the retrieval configuration of SPEC §3.1. Every field except the
// two batch sizes is part of the protocol fingerprint.
type Config struct {
	Similarity             string `json:"similarity"`
	Ks                     []int  `json:"ks"`
	PrimaryMetric          string `json:"primary_metric"`
	Bidirectional          bool   `json:"bidirectional"`
	QueryBatchSize         int    `json:"query_batch_size"`
	GalleryBatchSize       int    `json:"gallery_batch_size"`
	MaxPairwiseComparisons *int64 `json:"max_pairwise_comparisons"`
	WorstQueries           int    `json:"worst_queries"`
	Gain                   string `json:"gain"`
	Precision              string `json:"precision"`
	// QueriesWithoutPositives is SPEC §3.1 queries_without_positives:
	// "" (the default, written "error") or "drop". It is recorded and
	// fingerprinted only when "drop", so default protocols keep their
	// fingerprints.
	QueriesWithoutPositives string `json:"queries_without_positives,omitempty"`
}

// DropsQueriesWithoutPositives reports queries_without_positives: drop.
func (c Config) DropsQueriesWithoutPositives() bool { return c.QueriesWithoutPositives == "drop" }

// DefaultConfig returns the defaults of SPEC §3.1.
func DefaultConfig() Config {
	return Config{
		Similarity:       Cosine,
		Ks:               []int{1, 5, 10},
		PrimaryMetric:    "ndcg@10",
		QueryBatchSize:   128,
		GalleryBatchSize: 10000,
		WorstQueries:     10,
		Gain:             GainExponential,
		Precision:        PrecisionF64,
	}
}

// ConfigError is an invalid configuration value or type. Its message starts
// "RetrievalConfig.<field>" (SPEC §3.2). The CLI maps it to exit code 2.
type ConfigError struct {
	Field string // JSON field name, "" for an unknown key
	Msg   string
}

func (e *ConfigError) Error() string { return e.Msg }

func configErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Clone returns a deep copy.
func (c Config) Clone() Config {
	c.Ks = append([]int(nil), c.Ks...)
	if c.MaxPairwiseComparisons != nil {
		v := *c.MaxPairwiseComparisons
		c.MaxPairwiseComparisons = &v
	}
	return c
}

// PrimaryMetrics returns the metrics that may be the primary metric under
// cut-offs ks: every reported metric (MetricKeys): mrr, map, and
// precision@K, recall@K, hit_rate@K and ndcg@K for each K in ks.
func PrimaryMetrics(ks []int) []string { return Config{Ks: ks}.MetricKeys() }

var atKRe = regexp.MustCompile(`^(precision|recall|hit_rate|ndcg)@([0-9]+)$`)

// PrimaryMetricProblem returns "" when metric may be the primary metric
// under ks, and otherwise what is wrong, without naming the setting, so
// that each front end can prefix its own name ("RetrievalConfig.primary_metric",
// "--primary", "retrieval.primary_metric"): `must be one of <choices>; got
// "<metric>"`, with a hint when only the cut-off is missing from ks. ksName
// is how the reader knows the cut-off list ("ks", "--k").
func PrimaryMetricProblem(metric string, ks []int, ksName string) string {
	valid := PrimaryMetrics(ks)
	if slices.Contains(valid, metric) {
		return ""
	}
	msg := fmt.Sprintf("must be one of %s; got %q", strings.Join(valid, ", "), metric)
	lower := strings.ToLower(strings.TrimSpace(metric))
	switch m := atKRe.FindStringSubmatch(lower); {
	case lower != metric && slices.Contains(valid, lower):
		msg += fmt.Sprintf(" (metric names are lower case: %s)", lower)
	case m != nil:
		if k, err := strconv.Atoi(m[2]); err == nil && strconv.Itoa(k) != m[2] {
			msg += " (write the cut-off without leading zeros)"
		} else {
			msg += fmt.Sprintf(" (the cut-off %s is not in %s)", m[2], ksName)
		}
	}
	return msg
}

// Validate checks every rule of SPEC §3.2, field by field in table order.
func (c Config) Validate() error {
	switch c.Similarity {
	case Cosine, Dot, SquaredL2:
	default:
		return configErr("similarity", "RetrievalConfig.similarity must be one of cosine, dot, squared_l2; got %q", c.Similarity)
	}
	if len(c.Ks) == 0 {
		return configErr("ks", "RetrievalConfig.ks must not be empty")
	}
	seen := map[int]bool{}
	for _, k := range c.Ks {
		if k < 1 {
			return configErr("ks", "RetrievalConfig.ks entries must be >= 1; got %d", k)
		}
		if seen[k] {
			return configErr("ks", "RetrievalConfig.ks must not contain duplicates; %d repeats", k)
		}
		seen[k] = true
	}
	if p := PrimaryMetricProblem(c.PrimaryMetric, c.Ks, "ks"); p != "" {
		return configErr("primary_metric", "RetrievalConfig.primary_metric %s", p)
	}
	if c.QueryBatchSize < 1 {
		return configErr("query_batch_size", "RetrievalConfig.query_batch_size must be >= 1; got %d", c.QueryBatchSize)
	}
	if c.GalleryBatchSize < 1 {
		return configErr("gallery_batch_size", "RetrievalConfig.gallery_batch_size must be >= 1; got %d", c.GalleryBatchSize)
	}
	if c.MaxPairwiseComparisons != nil && *c.MaxPairwiseComparisons < 1 {
		return configErr("max_pairwise_comparisons", "RetrievalConfig.max_pairwise_comparisons must be >= 1 when set; got %d", *c.MaxPairwiseComparisons)
	}
	if c.WorstQueries < 0 {
		return configErr("worst_queries", "RetrievalConfig.worst_queries must be >= 0; got %d", c.WorstQueries)
	}
	switch c.Gain {
	case GainExponential, GainLinear:
	default:
		return configErr("gain", "RetrievalConfig.gain must be exponential or linear; got %q", c.Gain)
	}
	switch c.Precision {
	case PrecisionF64, PrecisionF32:
	default:
		return configErr("precision", "RetrievalConfig.precision must be float64 or float32; got %q", c.Precision)
	}
	switch c.QueriesWithoutPositives {
	case "", "error", "drop":
	default:
		return configErr("queries_without_positives", "RetrievalConfig.queries_without_positives must be error or drop; got %q", c.QueriesWithoutPositives)
	}
	return nil
}

// MetricKeys returns the per-query metric keys in canonical order (SPEC §4.4).
func (c Config) MetricKeys() []string {
	keys := []string{"mrr", "map"}
	for _, k := range c.Ks {
		s := strconv.Itoa(k)
		keys = append(keys, "precision@"+s, "recall@"+s, "hit_rate@"+s, "ndcg@"+s)
	}
	return keys
}

// ProtocolFields returns the fingerprinted fields as a JSON object (every
// field present, batch sizes left out: they are performance knobs).
func (c Config) ProtocolFields() map[string]any {
	m := c.AsMap()
	delete(m, "query_batch_size")
	delete(m, "gallery_batch_size")
	return m
}

// AsMap returns every field under its JSON name.
func (c Config) AsMap() map[string]any {
	ks := make([]any, len(c.Ks))
	for i, k := range c.Ks {
		ks[i] = k
	}
	var guard any
	if c.MaxPairwiseComparisons != nil {
		guard = *c.MaxPairwiseComparisons
	}
	m := map[string]any{
		"similarity":               c.Similarity,
		"ks":                       ks,
		"primary_metric":           c.PrimaryMetric,
		"bidirectional":            c.Bidirectional,
		"query_batch_size":         c.QueryBatchSize,
		"gallery_batch_size":       c.GalleryBatchSize,
		"max_pairwise_comparisons": guard,
		"worst_queries":            c.WorstQueries,
		"gain":                     c.Gain,
		"precision":                c.Precision,
	}
	if c.DropsQueriesWithoutPositives() {
		m["queries_without_positives"] = "drop"
	}
	return m
}

// ConfigFromMap builds a Config from decoded JSON/YAML (defaults for absent
// keys), reporting type errors and unknown keys as SPEC §3.2 requires.
func ConfigFromMap(m map[string]any) (Config, error) {
	c := DefaultConfig()
	for _, k := range confval.SortedKeys(m) {
		v := m[k]
		var err error
		switch k {
		case "similarity":
			c.Similarity, err = asString(k, v)
		case "primary_metric":
			c.PrimaryMetric, err = asString(k, v)
		case "gain":
			c.Gain, err = asString(k, v)
		case "precision":
			c.Precision, err = asString(k, v)
		case "queries_without_positives":
			if c.QueriesWithoutPositives, err = asString(k, v); c.QueriesWithoutPositives == "error" {
				c.QueriesWithoutPositives = "" // the default, fingerprinted as such
			}
		case "bidirectional":
			b, ok := v.(bool)
			if !ok {
				err = configErr(k, "RetrievalConfig.%s must be a bool; got %s", k, confval.Describe(v))
			}
			c.Bidirectional = b
		case "query_batch_size":
			c.QueryBatchSize, err = asInt(k, v)
		case "gallery_batch_size":
			c.GalleryBatchSize, err = asInt(k, v)
		case "worst_queries":
			c.WorstQueries, err = asInt(k, v)
		case "max_pairwise_comparisons":
			if v == nil {
				c.MaxPairwiseComparisons = nil
				break
			}
			var n int
			n, err = asInt(k, v)
			n64 := int64(n)
			c.MaxPairwiseComparisons = &n64
		case "ks":
			list, ok := v.([]any)
			if !ok {
				err = configErr(k, "RetrievalConfig.ks must be a list of integers; got %s", confval.Describe(v))
				break
			}
			c.Ks = make([]int, len(list))
			for i, e := range list {
				if c.Ks[i], err = asInt(k, e); err != nil {
					break
				}
			}
		default:
			return c, configErr("", "RetrievalConfig has no field %q", k)
		}
		if err != nil {
			return c, err
		}
	}
	return c, c.Validate()
}

// ConfigFromJSON decodes a JSON object into a Config (see ConfigFromMap).
func ConfigFromJSON(data []byte) (Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return Config{}, configErr("", "RetrievalConfig must be a JSON object: %v", err)
	}
	return ConfigFromMap(m)
}

func asString(field string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", configErr(field, "RetrievalConfig.%s must be a string; got %s", field, confval.Describe(v))
	}
	return s, nil
}

func asInt(field string, v any) (int, error) {
	n, ok := confval.Int64(v)
	if !ok || n != int64(int(n)) {
		return 0, configErr(field, "RetrievalConfig.%s must be an integer; got %s", field, confval.Describe(v))
	}
	return int(n), nil
}
