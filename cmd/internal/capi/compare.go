package capi

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/evaluate/compare"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/results"
)

// CompareRequest merges reports of one dataset and protocol and computes
// the §13 comparison, as `vertebrae retrieval compare A.json B.json` does.
type CompareRequest struct {
	Reports      []json.RawMessage `json:"reports"` // each a report object, or a string holding one
	Sources      []string          `json:"sources"` // names for errors; default "report 1", …
	Metrics      []string          `json:"metrics"`
	Baseline     string            `json:"baseline"`
	Test         string            `json:"test"`
	Alpha        float64           `json:"alpha"`
	Bootstrap    int               `json:"bootstrap"`
	CIMethod     string            `json:"ci_method"`
	Permutations int               `json:"permutations"`
	Seed         uint64            `json:"seed"`
	Threads      int               `json:"threads"`
	PerQuery     bool              `json:"per_query"`
}

// ParseCompareRequest decodes a request over the CLI's defaults.
func ParseCompareRequest(data []byte) (CompareRequest, error) {
	d := DefaultComparison()
	r := CompareRequest{Test: d.Test, Alpha: d.Alpha, Bootstrap: d.Bootstrap, CIMethod: d.CIMethod, Permutations: d.Permutations, PerQuery: true}
	err := decodeStrict("compare", data, &r)
	return r, err
}

// Compare returns the merged JSON report with its comparison section.
func Compare(ctx context.Context, req CompareRequest) ([]byte, error) {
	if len(req.Reports) == 0 {
		return nil, usagef("compare needs at least one report")
	}
	if req.Sources != nil && len(req.Sources) != len(req.Reports) {
		return nil, usagef("compare: %d sources for %d reports", len(req.Sources), len(req.Reports))
	}
	if req.Threads < 0 {
		return nil, usagef("threads must be >= 0")
	}
	reports := make([]compare.Report, len(req.Reports))
	for i, raw := range req.Reports {
		src := "report " + strconv.Itoa(i+1)
		if req.Sources != nil {
			src = req.Sources[i]
		}
		data := []byte(raw)
		var s string
		if json.Unmarshal(raw, &s) == nil {
			data = []byte(s)
		}
		reports[i] = compare.Report{Source: src, Data: data}
	}
	merged, err := compare.MergeReports(reports)
	if err != nil {
		return nil, err
	}
	opts, err := req.options(merged)
	if err != nil {
		return nil, err
	}
	limit, err := memory.Resolve(memory.Default())
	if err != nil {
		return nil, err
	}
	ctx = memory.WithLimit(ctx, limit)
	if len(merged.ExtractorResults) >= 2 {
		if merged.Comparison, err = compare.Compute(ctx, merged, opts); err != nil {
			return nil, err
		}
	}
	return merged.MarshalReportWith(results.ReportOptions{OmitPerQuery: !req.PerQuery})
}

// options validates the settings as the CLI validates its flags.
func (r CompareRequest) options(b *results.Benchmark) (compare.Options, error) {
	o := compare.Options{
		Baseline: r.Baseline, Test: r.Test, Alpha: r.Alpha, CIMethod: r.CIMethod,
		Bootstrap: r.Bootstrap, Permutations: r.Permutations, Seed: r.Seed, Threads: r.Threads,
	}
	// Settings named as the Python keywords.
	if err := o.CheckSettings(r.Metrics, b.Metadata.RetrievalConfig.MetricKeys(), keyword); err != nil {
		return o, err
	}
	if r.Baseline != "" && !slices.ContainsFunc(b.ExtractorResults, func(x *results.ExtractorResult) bool { return x.Name == r.Baseline }) {
		names := make([]string, len(b.ExtractorResults))
		for i, x := range b.ExtractorResults {
			names[i] = x.Name
		}
		return o, usagef("baseline %s names no result (results: %s)", msgfmt.Quote(r.Baseline), strings.Join(names, ", "))
	}
	return o, nil
}

// keyword names a comparison setting as the Python package's keyword.
func keyword(setting string) string { return strings.ReplaceAll(setting, "-", "_") }
