package retrieval

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Every reported metric may be the primary metric (SPEC §3.1).
func TestPrimaryMetricAnyReportedMetric(t *testing.T) {
	ks := []int{1, 5, 10}
	want := []string{"mrr", "map",
		"precision@1", "recall@1", "hit_rate@1", "ndcg@1",
		"precision@5", "recall@5", "hit_rate@5", "ndcg@5",
		"precision@10", "recall@10", "hit_rate@10", "ndcg@10"}
	if got := PrimaryMetrics(ks); !slices.Equal(got, want) {
		t.Fatalf("PrimaryMetrics = %v, want %v", got, want)
	}
	for _, m := range want {
		t.Run(m, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Ks, cfg.PrimaryMetric = ks, m
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(cfg.MetricKeys(), m) {
				t.Fatalf("%s is not a reported metric", m)
			}
			// Run-file/JSON path too.
			got, err := ConfigFromMap(map[string]any{"ks": []any{1, 5, 10}, "primary_metric": m})
			if err != nil || got.PrimaryMetric != m {
				t.Fatalf("ConfigFromMap: %v %q", err, got.PrimaryMetric)
			}
		})
	}
}

func TestPrimaryMetricErrors(t *testing.T) {
	cases := []struct {
		metric string
		ks     []int
		hint   string // "" = no hint expected
	}{
		{"ndcg@3", []int{1, 5, 10}, "(the cut-off 3 is not in ks)"},
		{"recall@100", []int{1, 5, 10}, "(the cut-off 100 is not in ks)"},
		{"hit_rate@2", []int{1}, "(the cut-off 2 is not in ks)"},
		{"NDCG@10", []int{1, 5, 10}, "(metric names are lower case: ndcg@10)"},
		{"MRR", []int{1}, "(metric names are lower case: mrr)"},
		{"ndcg@010", []int{10}, "(write the cut-off without leading zeros)"},
		{"ndcg", []int{10}, ""},
		{"f1@10", []int{10}, ""},
		{"", []int{10}, ""},
		{"mrr@10", []int{10}, ""},
	}
	for _, c := range cases {
		t.Run(c.metric, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Ks, cfg.PrimaryMetric = c.ks, c.metric
			err := cfg.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != "primary_metric" {
				t.Fatalf("got %v, want a primary_metric ConfigError", err)
			}
			msg := err.Error()
			wantStart := "RetrievalConfig.primary_metric must be one of " + strings.Join(PrimaryMetrics(c.ks), ", ") + "; got \"" + c.metric + "\""
			if !strings.HasPrefix(msg, wantStart) {
				t.Errorf("message %q\ndoes not start %q", msg, wantStart)
			}
			if c.hint != "" && !strings.HasSuffix(msg, c.hint) {
				t.Errorf("message %q lacks hint %q", msg, c.hint)
			}
			if c.hint == "" && strings.Contains(msg, "(") {
				t.Errorf("message %q has an unexpected hint", msg)
			}
			// Front ends name their own setting.
			if p := PrimaryMetricProblem(c.metric, c.ks, "--k"); !strings.HasPrefix(p, "must be one of ") || strings.Contains(p, "RetrievalConfig") {
				t.Errorf("PrimaryMetricProblem = %q", p)
			}
		})
	}
	if p := PrimaryMetricProblem("map", []int{1}, "ks"); p != "" {
		t.Errorf("map: %q", p)
	}
}
