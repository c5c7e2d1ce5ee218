package cli

import (
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/vertebrae-eval/vertebrae/report"
	"github.com/vertebrae-eval/vertebrae/report/plots"
	"github.com/vertebrae-eval/vertebrae/results"
)

// figureFlags are --html, --plots and --plot-format (SPEC §5.8), shared
// by every command that writes reports.
type figureFlags struct {
	html, plots, plotFormat string
}

func (g *figureFlags) register(f *pflag.FlagSet) {
	f.StringVar(&g.html, "html", "", "write a self-contained HTML report (tables and inline SVG figures) to PATH")
	f.StringVar(&g.plots, "plots", "", "write the figures to directory DIR")
	f.StringVar(&g.plotFormat, "plot-format", "svg", "figure file format for --plots: svg, png or both")
}

func (g *figureFlags) check(changed func(string) bool) error {
	if g.html == "-" {
		return usagef("--html does not write to stdout; give a file path")
	}
	if g.plots == "-" {
		return usagef("--plots names a directory; give a path")
	}
	if changed("plot-format") && g.plots == "" {
		return usagef("--plot-format requires --plots")
	}
	if _, err := plots.ParseFormats(g.plotFormat); err != nil {
		return usagef("--plot-format: %v", err)
	}
	// Targets are checked before any evaluation work (SPEC §6.1).
	if g.html != "" {
		if fi, err := os.Stat(g.html); err == nil && fi.IsDir() {
			return usagef("--html %s is a directory; give a file path", g.html)
		}
	}
	if g.plots != "" {
		if fi, err := os.Stat(g.plots); err == nil && !fi.IsDir() {
			return usagef("--plots %s exists and is not a directory", g.plots)
		}
	}
	return nil
}

// renderedFile is one output file rendered in memory before any is written.
type renderedFile struct {
	flag, path string
	data       []byte
}

// files renders the HTML report and the figures; the caller writes them
// with the other outputs, only after the whole run succeeded (SPEC §6.1).
func (g *figureFlags) files(b *results.Benchmark) ([]renderedFile, error) {
	var out []renderedFile
	if g.html != "" {
		data, err := report.HTML(b)
		if err != nil {
			return nil, err
		}
		out = append(out, renderedFile{"--html", g.html, data})
	}
	if g.plots != "" {
		formats, err := plots.ParseFormats(g.plotFormat)
		if err != nil {
			return nil, usagef("--plot-format: %v", err)
		}
		figs, err := plots.Render(b, formats)
		if err != nil {
			return nil, err
		}
		for _, f := range figs {
			out = append(out, renderedFile{"--plots", filepath.Join(g.plots, f.Name), f.Data})
		}
	}
	return out, nil
}
