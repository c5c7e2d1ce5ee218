package cli

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The demo's figures are pinned byte for byte (SPEC §5.8: byte-identical
// between runs), every expected figure exists in both formats, and its
// HTML page is self-contained and renders in a real browser.
func TestDemoFiguresAndHTML(t *testing.T) {
	if testing.Short() {
		t.Skip("demo scores 3 backbones × 1,000 × 5,000 pairs; skipped with -short")
	}
	dir := t.TempDir()
	htmlPath, plotDir := filepath.Join(dir, "demo.html"), filepath.Join(dir, "plots")
	code, markdown, stderr := run(t, "demo", "--quiet", "--markdown", "-", "--html", htmlPath, "--plots", plotDir, "--plot-format", "both")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	entries, err := os.ReadDir(plotDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// Three backbones and a PCA variant, compared (SPEC §6.6): every figure.
	want := []string{"comparison", "compression_frontier", "margins", "metrics_at_k", "per_query_ndcg@10"}
	var wantFiles []string
	for _, w := range want {
		wantFiles = append(wantFiles, w+".png", w+".svg")
	}
	slices.Sort(wantFiles)
	if !slices.Equal(names, wantFiles) {
		t.Fatalf("plots %v, want %v", names, wantFiles)
	}
	goldenDir := filepath.Join("testdata", "demo_plots")
	for _, name := range names {
		data := []byte(mustRead(t, filepath.Join(plotDir, name)))
		if strings.HasSuffix(name, ".png") {
			if _, err := png.Decode(bytes.NewReader(data)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		golden := filepath.Join(goldenDir, name)
		if *update {
			if err := os.MkdirAll(goldenDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if want := mustRead(t, golden); string(data) != want {
			t.Errorf("%s differs from %s (run with -update after looking at the change)", name, golden)
		}
	}
	page := []byte(mustRead(t, htmlPath))
	checkSelfContained(t, page)
	if n := bytes.Count(page, []byte("<svg ")); n != len(want) {
		t.Errorf("%d inline figures, want %d", n, len(want))
	}
	for _, s := range []string{`<td class="name"><span class="swatch" style="background:#cc79a7"></span>hog</td>`, `<h2 id="ranking">Ranking</h2>`, `<h2 id="compression">Compression</h2>`, "@media print"} {
		if !bytes.Contains(page, []byte(s)) {
			t.Errorf("page lacks %s", s)
		}
	}
	if bytes.Contains(page, []byte("| hog |")) {
		t.Error("Markdown table syntax in the HTML page")
	}
	// The page's ranking holds the Markdown ranking's values, cell for cell
	// (key, rank, name, score, metric with superscripts, interval, mrr, map).
	// Colour swatches (the figures' colour of each result) aside.
	ranking := regexp.MustCompile(`<span class="swatch" style="background:#[0-9a-f]{6}"></span>`).ReplaceAll(page, nil)
	rows := 0
	for _, line := range strings.Split(markdown, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 8 || len(cells[0]) != 1 || cells[0] < "a" || cells[0] > "z" {
			continue
		}
		rows++
		want := "<tr><td>" + cells[0] + "</td><td class=\"num\">" + cells[1] + "</td><td class=\"name\">" + cells[2] + "</td>"
		for _, c := range cells[3:] {
			want += "<td class=\"num\">" + c + "</td>"
		}
		if !bytes.Contains(ranking, []byte(want+"</tr>")) {
			t.Errorf("page lacks the ranking row %s", want)
		}
	}
	if rows != 4 {
		t.Errorf("%d ranking rows with key letters in the Markdown report, want 4", rows)
	}
	screenshotHTML(t, htmlPath)
}

// networkRef matches anything that could make a page fetch or run code.
var networkRef = regexp.MustCompile(`(?i)https?://|<script|<link|<iframe|<object|<embed|@import|url\(`)

func checkSelfContained(t *testing.T, page []byte) {
	t.Helper()
	if m := networkRef.Find(page); m != nil {
		t.Errorf("HTML page references %q", m)
	}
}

// screenshotHTML renders the page in headless Chromium at 1280 px and
// checks the picture: not blank (pixel variance) and the figures drawn
// (pixels of the figures' first palette colour). Without Chromium the test
// skips, except in CI (CI=true or VERTEBRAE_REQUIRE_CHROMIUM=1), where it
// fails.
func screenshotHTML(t *testing.T, htmlPath string) {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("CI") == "true" || os.Getenv("VERTEBRAE_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("chromium is required in CI (.ci/run installs the Debian package) but was not found")
		}
		t.Skip("chromium not installed; the HTML screenshot check needs it")
	}
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "page.png")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--window-size=1280,2000", "file://"+abs)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1280 {
		t.Errorf("screenshot %v, want 1280 px wide", b)
	}
	mean, variance, blue := pixelStats(img)
	if variance < 200 {
		t.Errorf("screenshot looks blank: luminance mean %.1f, variance %.1f", mean, variance)
	}
	if blue < 200 {
		t.Errorf("only %d pixels of the figures' blue: figures not drawn", blue)
	}
	if dir := os.Getenv("VERTEBRAE_SCREENSHOT_DIR"); dir != "" { // for looking at it by eye
		if data, err := os.ReadFile(shot); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "demo-html.png"), data, 0o644)
		}
	}
}

// pixelStats returns the luminance mean and variance and the number of
// pixels close to the palette's first colour (#0072B2).
func pixelStats(img image.Image) (mean, variance float64, blue int) {
	b := img.Bounds()
	var sum, sum2 float64
	n := float64(b.Dx() * b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r8, g8, b8 := float64(r>>8), float64(g>>8), float64(bl>>8)
			l := 0.2126*r8 + 0.7152*g8 + 0.0722*b8
			sum += l
			sum2 += l * l
			if near(r8, 0x00) && near(g8, 0x72) && near(b8, 0xB2) {
				blue++
			}
		}
	}
	mean = sum / n
	return mean, sum2/n - mean*mean, blue
}

func near(v, want float64) bool { return v >= want-24 && v <= want+24 }

func TestFigureFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"demo", "--plots", t.TempDir(), "--plot-format", "pdf"}, "plot format must be one of svg, png, both"},
		{[]string{"demo", "--plot-format", "png"}, "--plot-format requires --plots"},
		{[]string{"demo", "--html", "-"}, "--html does not write to stdout"},
		{[]string{"demo", "--plots", "-"}, "--plots names a directory"},
		{[]string{"demo", "--html", t.TempDir()}, "is a directory; give a file path"},
		{[]string{"demo", "--plots", writeFile(t, t.TempDir(), "f.txt", "x")}, "exists and is not a directory"},
	} {
		code, _, stderr := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, stderr, c.msg)
		}
	}
}

func plotNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// retrieval run with three results (an extractor and two compression
// variants) writes every figure, and the HTML page inlines them; compare
// of JSON reports writes the figures its reports support (per-query
// margins are not part of the JSON report, so no margins figure).
func TestRunAndCompareFigures(t *testing.T) {
	f := newCmpFixture(t)
	dir := t.TempDir()
	plotDir, htmlPath := filepath.Join(dir, "run-plots"), filepath.Join(dir, "run.html")
	mustRun(t, f.runArgs("sharp", "--compress", "prefix:2", "--compress", "prefix:4", "--plots", plotDir, "--html", htmlPath)...)
	want := []string{"comparison.svg", "compression_frontier.svg", "margins.svg", "metrics_at_k.svg", "per_query_ndcg@10.svg"}
	if got := plotNames(t, plotDir); !slices.Equal(got, want) {
		t.Errorf("run figures %v, want %v", got, want)
	}
	page := []byte(mustRead(t, htmlPath))
	checkSelfContained(t, page)
	if n := bytes.Count(page, []byte("<svg ")); n != len(want) {
		t.Errorf("%d inline figures, want %d", n, len(want))
	}
	var reports []string
	for _, name := range []string{"sharp", "blurry", "noisy"} {
		p := filepath.Join(dir, name+".json")
		mustRun(t, f.runArgs(name, "--json", p)...)
		reports = append(reports, p)
	}
	cmpDir, cmpHTML := filepath.Join(dir, "cmp-plots"), filepath.Join(dir, "cmp.html")
	mustRun(t, append([]string{"retrieval", "compare", "--quiet", "--bootstrap", "400", "--permutations", "500",
		"--plots", cmpDir, "--plot-format", "png", "--html", cmpHTML}, reports...)...)
	if got, want := plotNames(t, cmpDir), []string{"comparison.png", "metrics_at_k.png", "per_query_ndcg@10.png"}; !slices.Equal(got, want) {
		t.Errorf("compare figures %v, want %v", got, want)
	}
	page = []byte(mustRead(t, cmpHTML))
	checkSelfContained(t, page)
	for _, s := range []string{`<td class="name">sharp</td>`, `<h2 id="comparison">Comparison</h2>`, `<figure id="figure-comparison">`} {
		if !bytes.Contains(page, []byte(s)) {
			t.Errorf("compare page lacks %s", s)
		}
	}
	// A refused compare creates no output at all (SPEC §6.1).
	failDir, failHTML := filepath.Join(dir, "fail-plots"), filepath.Join(dir, "fail.html")
	code, _, _ := run(t, append([]string{"retrieval", "compare", "--quiet", "--plots", failDir, "--html", failHTML}, reports[0], reports[0])...)
	if code == 0 {
		t.Fatal("compare of a report with itself succeeded")
	}
	for _, p := range []string{failDir, failHTML} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists after a failed run", p)
		}
	}
}

// --html and --plots are allowed next to --spec and write the run file's
// report (three results: an extractor and two compression variants).
func TestRunFileFigures(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "qrels.tsv", "query-id\tcorpus-id\tscore\n0\t0\t1\n1\t1\t1\n2\t2\t1\n")
	writeFile(t, dir, "q_ids.txt", "0\n1\n2\n")
	writeFile(t, dir, "g_ids.txt", "0\n1\n2\n3\n")
	writeNPY(t, dir, "q.npy", [][]float64{{1, 0.2, 0, 0}, {0.1, 1, 0, 0}, {0.5, 0.4, 1, 0}})
	writeNPY(t, dir, "g.npy", [][]float64{{1, 0.1, 0, 0}, {0, 1, 0.2, 0.1}, {0.3, 0, 1, 0}, {1, 1, 1, 1}})
	spec := `version: 1
dataset:
  id: tiny
  revision: "1"
  queries: {modality: embeddings, ids: q_ids.txt}
  gallery: {modality: embeddings, ids: g_ids.txt}
  qrels: {path: qrels.tsv}
retrieval: {similarity: cosine, ks: [1, 2], primary_metric: ndcg@2}
compression:
  - {method: none}
  - {method: prefix_truncate, n_components: 2}
  - {method: quantize, precision: int8}
extractors:
  - {name: tables, type: precomputed, queries: q.npy, gallery: g.npy}
`
	specPath := writeFile(t, dir, "run.yaml", spec)
	htmlPath, plotDir := filepath.Join(dir, "out", "r.html"), filepath.Join(dir, "out", "plots")
	code, _, stderr := run(t, "retrieval", "run", "--spec", specPath, "--quiet", "--html", htmlPath, "--plots", plotDir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := []string{"comparison.svg", "compression_frontier.svg", "margins.svg", "metrics_at_k.svg", "per_query_ndcg@2.svg"}
	if got := plotNames(t, plotDir); !slices.Equal(got, want) {
		t.Errorf("figures %v, want %v", got, want)
	}
	page := []byte(mustRead(t, htmlPath))
	checkSelfContained(t, page)
	if !bytes.Contains(page, []byte("tables[quantize_int8]")) {
		t.Error("page lacks the quantized variant")
	}
}
