package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twelveBackbones writes 12 embedding pairs b01 … b12 of 30 labelled
// queries against 45 labelled gallery items in 5 classes (class centroids
// plus noise, the noise growing with the number) and returns the compare
// --pair arguments for all of them.
func twelveBackbones(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(27, 12))
	const classes, dim, nq, ng = 5, 6, 30, 45
	centroid := make([][]float64, classes)
	for c := range centroid {
		centroid[c] = make([]float64, dim)
		for j := range centroid[c] {
			centroid[c][j] = r.NormFloat64()
		}
	}
	label := func(i int) int { return (i * 3) % classes }
	var ql, gl strings.Builder
	for i := range nq {
		ql.WriteString(string(rune('a'+label(i))) + "\n")
	}
	for i := range ng {
		gl.WriteString(string(rune('a'+label(i+1))) + "\n")
	}
	args := []string{"retrieval", "compare", "--query-labels", writeFile(t, dir, "ql.txt", ql.String()),
		"--gallery-labels", writeFile(t, dir, "gl.txt", gl.String()), "--dataset-id", "twelve", "--dataset-revision", "1",
		"--bootstrap", "300", "--permutations", "400", "--quiet"}
	emb := func(n, off int, noise float64) [][]float64 {
		rows := make([][]float64, n)
		for i := range rows {
			rows[i] = make([]float64, dim)
			for j := range rows[i] {
				rows[i][j] = centroid[label(i+off)][j] + noise*r.NormFloat64()
			}
		}
		return rows
	}
	for b := 1; b <= 12; b++ {
		name := fmt.Sprintf("b%02d", b)
		noise := 0.2 * float64(b)
		q := writeNPY(t, dir, name+"_q.npy", emb(nq, 0, noise))
		g := writeNPY(t, dir, name+"_g.npy", emb(ng, 1, noise))
		args = append(args, "--pair", name+"="+q+","+g)
	}
	return args
}

// compare with 12 results (issue 27): every result gets an interval and
// takes part in the significance tests (66 pairs, no silent cap of 10);
// the Markdown and HTML reports show a 12 × 12 significance matrix and the
// plots include comparison_matrix.svg; the numbers do not depend on the
// thread count.
func TestCompareTwelveResultsMatrix(t *testing.T) {
	args := twelveBackbones(t)
	dir := t.TempDir()
	md, page, plotDir := filepath.Join(dir, "r.md"), filepath.Join(dir, "r.html"), filepath.Join(dir, "plots")
	out := mustRun(t, append(args, "--threads", "1", "--json", "-", "--markdown", md, "--html", page, "--plots", plotDir)...)
	var c struct {
		Settings struct {
			Results    []string
			MaxResults *int `json:"max_results"`
			LeftOut    []string
		}
		Blocks []struct {
			Results []struct {
				Name string
				CI   struct{ Low, High float64 }
			}
			Pairs []struct{ A, B string }
		}
	}
	cmp := comparisonOf(t, out)
	if err := json.Unmarshal([]byte(cmp), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Settings.Results) != 12 || c.Settings.MaxResults != nil || len(c.Settings.LeftOut) != 0 {
		t.Fatalf("settings: %d results, max_results %v, left out %v", len(c.Settings.Results), c.Settings.MaxResults, c.Settings.LeftOut)
	}
	if len(c.Blocks) != 1 || len(c.Blocks[0].Results) != 12 || len(c.Blocks[0].Pairs) != 66 {
		t.Fatalf("blocks: %+v", c.Blocks)
	}
	text := mustReadFile(t, md)
	ranking := text[strings.Index(text, "## Ranking"):strings.Index(text, "## Comparison")]
	for b := 1; b <= 12; b++ {
		name := fmt.Sprintf("b%02d", b)
		var line string
		for _, l := range strings.Split(ranking, "\n") {
			if strings.Contains(l, "| "+name+" |") {
				line = l
			}
		}
		if line == "" || strings.Contains(line, "| - |") || !strings.Contains(line, "| [") {
			t.Errorf("ranking row of %s has no interval: %q", name, line)
		}
	}
	section := text[strings.Index(text, "## Comparison"):]
	head := "| key | extractor | a | b | c | d | e | f | g | h | i | j | k | l |\n"
	i := strings.Index(section, head)
	if i < 0 {
		t.Fatalf("no 12 × 12 matrix:\n%s", section)
	}
	rows := strings.Split(section[i+len(head):], "\n")[1:13]
	for b := 1; b <= 12; b++ {
		found := 0
		for _, l := range rows {
			if strings.Contains(l, fmt.Sprintf("| b%02d |", b)) {
				found++
			}
		}
		if found != 1 {
			t.Errorf("b%02d appears in %d matrix rows:\n%s", b, found, strings.Join(rows, "\n"))
		}
	}
	html := mustReadFile(t, page)
	if !strings.Contains(html, `<table class="metrics matrix">`) || !strings.Contains(html, `id="figure-comparison_matrix"`) {
		t.Error("HTML report lacks the matrix table or figure")
	}
	if _, err := os.Stat(filepath.Join(plotDir, "comparison_matrix.svg")); err != nil {
		t.Errorf("no comparison_matrix.svg: %v", err)
	}
	if again := comparisonOf(t, mustRun(t, append(args, "--threads", "3", "--json", "-")...)); again != cmp {
		t.Error("the comparison differs between --threads 1 and 3")
	}
}

func mustReadFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
