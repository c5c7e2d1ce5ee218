package retrieval

import (
	"errors"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	neg := int64(0)
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"defaults", func(*Config) {}, ""},
		{"similarity", func(c *Config) { c.Similarity = "euclid" }, "RetrievalConfig.similarity must be one of cosine, dot, squared_l2"},
		{"empty ks", func(c *Config) { c.Ks = nil }, "RetrievalConfig.ks must not be empty"},
		{"k zero", func(c *Config) { c.Ks = []int{0, 10} }, "RetrievalConfig.ks entries must be >= 1"},
		{"dup k", func(c *Config) { c.Ks = []int{10, 10} }, "RetrievalConfig.ks must not contain duplicates"},
		{"primary not in ks", func(c *Config) { c.PrimaryMetric = "ndcg@3" }, "RetrievalConfig.primary_metric must be one of mrr, map, precision@1,"},
		{"primary other metric", func(c *Config) { c.PrimaryMetric = "map" }, ""},
		{"primary unknown metric", func(c *Config) { c.PrimaryMetric = "f1@10" }, "RetrievalConfig.primary_metric must be one of"},
		{"primary leading zero", func(c *Config) { c.PrimaryMetric = "ndcg@010" }, "RetrievalConfig.primary_metric must be one of"},
		{"query batch", func(c *Config) { c.QueryBatchSize = 0 }, "RetrievalConfig.query_batch_size must be >= 1"},
		{"gallery batch", func(c *Config) { c.GalleryBatchSize = -1 }, "RetrievalConfig.gallery_batch_size must be >= 1"},
		{"guard", func(c *Config) { c.MaxPairwiseComparisons = &neg }, "RetrievalConfig.max_pairwise_comparisons must be >= 1 when set"},
		{"worst", func(c *Config) { c.WorstQueries = -1 }, "RetrievalConfig.worst_queries must be >= 0"},
		{"gain", func(c *Config) { c.Gain = "log" }, "RetrievalConfig.gain must be exponential or linear"},
		{"precision", func(c *Config) { c.Precision = "float16" }, "RetrievalConfig.precision must be float64 or float32"},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		c.edit(&cfg)
		err := cfg.Validate()
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var ce *ConfigError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestConfigFromJSON(t *testing.T) {
	cfg, err := ConfigFromJSON([]byte(`{"similarity":"dot","ks":[10,1],"primary_metric":"ndcg@1","max_pairwise_comparisons":5,"gain":"linear"}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Similarity != "dot" || cfg.Ks[0] != 10 || cfg.Ks[1] != 1 || *cfg.MaxPairwiseComparisons != 5 || cfg.Gain != "linear" || cfg.QueryBatchSize != 128 {
		t.Errorf("%+v", cfg)
	}
	for in, want := range map[string]string{
		`{"ks":"1,5"}`:              "RetrievalConfig.ks",
		`{"query_batch_size":"x"}`:  "RetrievalConfig.query_batch_size must be an integer",
		`{"query_batch_size":true}`: "RetrievalConfig.query_batch_size must be an integer",
		`{"bidirectional":1}`:       "RetrievalConfig.bidirectional must be a bool",
		`{"similarity":3}`:          "RetrievalConfig.similarity must be a string",
		`{"worst_queries":1.5}`:     "RetrievalConfig.worst_queries must be an integer",
		`{"seed":1}`:                "RetrievalConfig has no field",
	} {
		if _, err := ConfigFromJSON([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}

func TestMetricKeysOrder(t *testing.T) {
	c := DefaultConfig()
	c.Ks = []int{10, 1}
	got := strings.Join(c.MetricKeys(), ",")
	want := "mrr,map,precision@10,recall@10,hit_rate@10,ndcg@10,precision@1,recall@1,hit_rate@1,ndcg@1"
	if got != want {
		t.Errorf("got %s", got)
	}
}

func TestProtocolFieldsIgnoreBatchSizes(t *testing.T) {
	a, b := DefaultConfig(), DefaultConfig()
	b.QueryBatchSize, b.GalleryBatchSize = 1, 7
	if len(a.ProtocolFields()) != 8 {
		t.Errorf("protocol fields %v", a.ProtocolFields())
	}
	if _, ok := b.ProtocolFields()["query_batch_size"]; ok {
		t.Error("batch sizes must not be fingerprinted")
	}
	if a.ProtocolFields()["max_pairwise_comparisons"] != nil {
		t.Error("unset guard must hash as null")
	}
}
