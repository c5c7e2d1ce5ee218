package capi

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/outputset"
	"github.com/vertebrae-eval/vertebrae/report"
	"github.com/vertebrae-eval/vertebrae/report/plots"
	"github.com/vertebrae-eval/vertebrae/results"
)

// RenderRequest renders a JSON report: Markdown (returned), or an HTML
// page, a per-query CSV or the figures (written like the CLI's --html,
// --csv and --plots: all or nothing).
type RenderRequest struct {
	Report     json.RawMessage `json:"report"` // a report object, or a string holding one
	Result     uint64          `json:"result"` // instead of a report: a result handle of the C ABI (vt_result_take)
	Format     string          `json:"format"` // markdown, html, csv or plots
	Path       string          `json:"path"`   // the file (html, csv) or directory (plots)
	PlotFormat string          `json:"plot_format"`
}

// ParseRenderRequest decodes a render request.
func ParseRenderRequest(data []byte) (RenderRequest, error) {
	r := RenderRequest{PlotFormat: "svg"}
	err := decodeStrict("render", data, &r)
	return r, err
}

// Render returns the Markdown text, or writes the file or directory and
// returns nothing. held is the benchmark of an earlier evaluation (nil for
// none): it is rendered when the request names no report.
func Render(ctx context.Context, req RenderRequest, held *results.Benchmark) ([]byte, error) {
	data := []byte(req.Report)
	var s string
	if json.Unmarshal(req.Report, &s) == nil {
		data = []byte(s)
	}
	b := held
	switch {
	case len(data) > 0 && string(data) != "null":
		var err error
		if b, err = results.ReadReport(data); err != nil {
			return nil, err
		}
	case b == nil:
		return nil, usagef("render: report is required")
	}
	if req.Format != "markdown" && req.Path == "" {
		return nil, usagef("render: format %s needs a path", req.Format)
	}
	var set outputset.Set
	switch req.Format {
	case "markdown":
		return report.Markdown(b)
	case "html":
		page, err := report.HTML(b)
		if err != nil {
			return nil, err
		}
		set.AddBytes("path", req.Path, page)
	case "csv":
		set.Add("path", req.Path, func(w io.Writer) error { return report.CSV(w, b) })
	case "plots":
		formats, err := plots.ParseFormats(req.PlotFormat)
		if err != nil {
			return nil, usagef("plot_format: %v", err)
		}
		figs, err := plots.Render(b, formats)
		if err != nil {
			return nil, err
		}
		set.AddDir("path", req.Path)
		for _, f := range figs {
			set.AddBytes("path", filepath.Join(req.Path, f.Name), f.Data)
		}
	default:
		return nil, usagef("render: format must be markdown, html, csv or plots, got %q", req.Format)
	}
	if err := set.Check(); err != nil {
		return nil, err
	}
	return nil, set.Commit(ctx)
}
