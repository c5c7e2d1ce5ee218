//go:build cgo

package onnx

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/extract/onnx/imageprep"
	"github.com/vertebrae-eval/vertebrae/extract/onnx/internal/tinymodels"
	"github.com/vertebrae-eval/vertebrae/internal/onnxpb"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

const testdata = "testdata"

// closeTo compares ONNX Runtime's float32 results with the float64
// reference passes: 1e-5 relative (1e-5 absolute below 1).
func closeTo(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %v, reference %v (diff %g)", what, i, got[i], want[i], d)
		}
	}
}

func flat(rows [][]float64) []float64 {
	var out []float64
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// mustDense returns a function that unwraps an encoder's result.
func mustDense(t *testing.T) func(matrix.Matrix, error) *matrix.Dense {
	return func(m matrix.Matrix, err error) *matrix.Dense {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return m.(*matrix.Dense)
	}
}

// padded pads each row to n with pad and returns ids and attention masks.
func padded(rows [][]int64, n int, pad int64) (ids, mask [][]int64) {
	for _, r := range rows {
		id := make([]int64, n)
		m := make([]int64, n)
		for i := range id {
			id[i], m[i] = pad, 0
			if i < len(r) {
				id[i], m[i] = r[i], 1
			}
		}
		ids, mask = append(ids, id), append(mask, m)
	}
	return ids, mask
}

func retrievalImagePaths() retrieval.Images {
	var paths retrieval.Images
	for _, c := range tinymodels.RetrievalImages {
		paths = append(paths, filepath.Join(testdata, "images", c.Name+".png"))
	}
	return paths
}

// TestDualEncoderEmbeddings checks both towers of the tiny CLIP- and
// SigLIP-style exports against the generator's reference forward passes,
// starting from the texts and the image files.
func TestDualEncoderEmbeddings(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	texts := retrieval.Texts(tinymodels.RetrievalTexts)
	images := retrievalImagePaths()
	cases := []struct {
		dir        string
		text       func() [][]float64
		image      func() [][]float64
		maxLen     int
		layoutFile string
	}{
		{"tiny-clip", func() [][]float64 {
			var rows [][]int64
			for _, s := range texts {
				rows = append(rows, tinymodels.CLIPExpectedIDs(s))
			}
			pad, _ := tinymodels.CLIPTokenID("<|endoftext|>")
			return tinymodels.CLIPText(padded(rows, 16, pad))
		}, func() [][]float64 {
			var px [][]float32
			for _, c := range tinymodels.RetrievalImages {
				px = append(px, tinymodels.CLIPPixels(c))
			}
			return tinymodels.CLIPVision(px)
		}, 16, "onnx/text_model.onnx"},
		{"tiny-siglip", func() [][]float64 {
			var rows [][]int64
			for _, s := range texts {
				rows = append(rows, tinymodels.SigLIPExpectedIDs(s))
			}
			return tinymodels.SigLIPText(rows, tinymodels.SigLIPPositionIDs(len(rows), 16))
		}, func() [][]float64 {
			var px [][]float32
			for _, c := range tinymodels.RetrievalImages {
				px = append(px, tinymodels.SigLIPPixels(c))
			}
			return tinymodels.SigLIPVision(px)
		}, 16, "text_model.onnx"},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			d, err := NewDualEncoder(ctx, DualEncoderConfig{Name: c.dir, ModelDir: filepath.Join(testdata, c.dir), BatchSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			got := mustDense(t)(d.EncodeBranch(ctx, extract.Batch{Side: "query", Items: texts}, TextBranch))
			closeTo(t, "text embeddings", got.Float32Data(), flat(c.text()))
			got = mustDense(t)(d.EncodeBranch(ctx, extract.Batch{Side: "gallery", Items: images}, ImageBranch))
			closeTo(t, "image embeddings", got.Float32Data(), flat(c.image()))

			r := d.Recipe()
			text := r["text"].(map[string]any)
			if text["max_length"] != c.maxLen || text["padding"] != PadMaxLength {
				t.Errorf("text recipe %v", text)
			}
			ids := r["path_identities"].(map[string]any)
			want, err := fileDigest(filepath.Join(testdata, c.dir, c.layoutFile))
			if err != nil || ids["text_model"] != "sha256:"+want {
				t.Errorf("text_model identity %v, want sha256:%s", ids["text_model"], want)
			}
			for _, role := range []string{"vision_model", "tokenizer", "preprocessor", "config"} {
				if !strings.HasPrefix(ids[role].(string), "sha256:") {
					t.Errorf("identity of %s missing: %v", role, ids)
				}
			}
			if r["cache_safe"] != true || r["runtime_version"] == "" || !d.StreamingSafe() {
				t.Errorf("recipe %v", r)
			}
			if _, err := d.EncodeBranch(ctx, extract.Batch{Items: texts}, ImageBranch); err == nil || !strings.Contains(err.Error(), "does not support retrieval modality text") {
				t.Errorf("texts on the image branch: %v", err)
			}
		})
	}
}

// TestDualEncoderImageFiles covers decoding and geometry: RGBA and GIF
// files give the same embedding as the solid PNGs, and images that need a
// resize and crop give the embedding of the preprocessed tensor.
func TestDualEncoderImageFiles(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	d, err := NewDualEncoder(ctx, DualEncoderConfig{Name: "clip", ModelDir: filepath.Join(testdata, "tiny-clip")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	img := func(name string) string { return filepath.Join(testdata, "images", name) }
	got := mustDense(t)(d.EncodeBranch(ctx, extract.Batch{Items: retrieval.Images{
		img("red.png"), img(tinymodels.RGBAImage), img("blue.png"), img(tinymodels.GIFImage),
		img(tinymodels.StripesImage), img(tinymodels.QuadrantsImage),
	}}, ImageBranch))
	row := func(i int) []float32 { return got.Float32Data()[i*tinymodels.Dim : (i+1)*tinymodels.Dim] }
	for _, pair := range [][2]int{{0, 1}, {2, 3}} {
		if a, b := row(pair[0]), row(pair[1]); !equal32(a, b) {
			t.Errorf("rows %d and %d differ: %v vs %v", pair[0], pair[1], a, b)
		}
	}
	prep, err := imageprep.LoadConfig(filepath.Join(testdata, "tiny-clip", "preprocessor_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{tinymodels.StripesImage, tinymodels.QuadrantsImage} {
		im, err := imageprep.DecodeFile(img(name))
		if err != nil {
			t.Fatal(err)
		}
		px, h, w, err := prep.Tensor(im)
		if err != nil || h != 8 || w != 8 {
			t.Fatalf("%s: %d×%d %v", name, h, w, err)
		}
		closeTo(t, name, row(4+i), tinymodels.CLIPVision([][]float32{px})[0])
	}
	// The pattern dimension (3) is non-zero for the patterned images only.
	if row(0)[3] != 0 || row(5)[3] == 0 {
		t.Errorf("pattern dimension: solid %v, quadrants %v", row(0)[3], row(5)[3])
	}
}

func equal32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDualEncoderRetrieval runs the designed cross-modal task end to end:
// text→image (forward) and image→text (reverse) with both tiny exports,
// under dot and cosine. "purple" is learned as mostly blue, so the purple
// caption ranks its magenta image second: forward ranks [1,1,1,1,2], reverse
// all 1.
func TestDualEncoderRetrieval(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	texts := retrieval.Texts(tinymodels.RetrievalTexts)
	images := retrievalImagePaths()
	var recs []retrieval.Record
	for i := range texts {
		recs = append(recs, retrieval.Record{QueryID: "t" + strconv.Itoa(i), GalleryID: "i" + strconv.Itoa(i), Grade: 1})
	}
	ids := func(p string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = p + strconv.Itoa(i)
		}
		return out
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: texts, Gallery: images, QueryIDs: ids("t", len(texts)), GalleryIDs: ids("i", len(images)),
		Identity: retrieval.FromContent(),
	}, retrieval.RecordRelevance(recs))
	if err != nil {
		t.Fatal(err)
	}
	// Ranks [1,1,1,1,2]: MRR (4 + 1/2)/5, recall@1 4/5, NDCG@5 with one
	// positive: (4 + 1/log2(3))/5.
	wantForward := map[string]float64{"mrr": 0.9, "recall@1": 0.8, "hit_rate@5": 1, "ndcg@5": (4 + 1/math.Log2(3)) / 5}
	wantReverse := map[string]float64{"mrr": 1, "recall@1": 1, "ndcg@5": 1}
	for _, dir := range []string{"tiny-clip", "tiny-siglip"} {
		for _, sim := range []string{retrieval.Cosine, retrieval.Dot} {
			t.Run(dir+"/"+sim, func(t *testing.T) {
				d, err := NewDualEncoder(ctx, DualEncoderConfig{Name: dir, ModelDir: filepath.Join(testdata, dir)})
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				cfg := retrieval.DefaultConfig()
				cfg.Similarity, cfg.Ks, cfg.PrimaryMetric, cfg.Bidirectional = sim, []int{1, 5}, "ndcg@5", true
				b := &evaluate.Benchmark{Dataset: ds, Config: cfg, Embedding: extract.DefaultEmbeddingConfig(), Memory: memory.Default(),
					Extractors: []extract.Entry{{Extractor: d, QueryBranch: TextBranch, GalleryBranch: ImageBranch}}}
				res, err := b.Run(ctx)
				if err != nil {
					t.Fatal(err)
				}
				r := res.ExtractorResults[0]
				for k, want := range wantForward {
					if got, _ := r.Forward.Metrics.Get(k); math.Abs(got-want) > 1e-12 {
						t.Errorf("text→image %s = %v, want %v", k, got, want)
					}
				}
				for k, want := range wantReverse {
					if got, _ := r.Reverse.Metrics.Get(k); math.Abs(got-want) > 1e-12 {
						t.Errorf("image→text %s = %v, want %v", k, got, want)
					}
				}
			})
		}
	}
}

// TestTextEncoder pools the tiny sentence model's last_hidden_state (E[id] +
// T[type]) over the attention mask, or takes [CLS], optionally normalised.
func TestTextEncoder(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	texts := []string{"a photo of a red square", "Red squares!", "über", "x@y 日本"}
	var rows [][]int64
	for _, s := range texts {
		rows = append(rows, tinymodels.TextExpectedIDs(s))
	}
	ids, mask := padded(rows, 12, 0)
	types := make([][]int64, len(ids))
	for i := range types {
		types[i] = make([]int64, 12)
	}
	hidden := tinymodels.TextHidden(ids, types)
	pooled := func(mode string, norm bool) []float64 {
		var out []float64
		for r, h := range hidden {
			v := make([]float64, tinymodels.Dim)
			n := 0.0
			for s := range h {
				if mode == PoolCLS && s > 0 || mode == PoolMean && mask[r][s] == 0 {
					continue
				}
				n++
				for k := range v {
					v[k] += h[s][k]
				}
			}
			var ss float64
			for k := range v {
				v[k] /= n
				ss += v[k] * v[k]
			}
			if norm {
				for k := range v {
					v[k] /= math.Sqrt(ss)
				}
			}
			out = append(out, v...)
		}
		return out
	}
	cases := []struct {
		name    string
		cfg     TextConfig
		want    []float64
		stream  bool
		padding string
	}{
		{"default mean", TextConfig{}, pooled(PoolMean, false), true, PadMaxLength},
		{"named 3-D output, default mean", TextConfig{Output: "last_hidden_state"}, pooled(PoolMean, false), true, PadMaxLength},
		{"cls", TextConfig{Pooling: PoolCLS}, pooled(PoolCLS, false), true, PadMaxLength},
		{"mean normalised, longest", TextConfig{Pooling: PoolMean, Normalize: true, Text: TextOptions{Padding: PadLongest}}, pooled(PoolMean, true), false, PadLongest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Name, cfg.ModelDir, cfg.BatchSize = "minilm-tiny", filepath.Join(testdata, "tiny-text"), 3
			e, err := NewTextEncoder(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			got := mustDense(t)(e.Encode(ctx, extract.Batch{Items: retrieval.Texts(texts)}))
			closeTo(t, "pooled", got.Float32Data(), c.want)
			text := e.Recipe()["text"].(map[string]any)
			if e.StreamingSafe() != c.stream || text["padding"] != c.padding || text["max_length"] != 12 || text["output"] != "last_hidden_state" {
				t.Errorf("streaming %v, recipe %v", e.StreamingSafe(), text)
			}
		})
	}
	// A sentence-transformers export with the pooling inside the graph: its
	// sentence_embedding output is used as is.
	st, err := NewTextEncoder(ctx, TextConfig{Name: "st", ModelDir: filepath.Join(testdata, "tiny-text-st")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := mustDense(t)(st.Encode(ctx, extract.Batch{Items: retrieval.Texts(texts)}))
	closeTo(t, "sentence_embedding", got.Float32Data(), pooled(PoolMean, false))
	if text := st.Recipe()["text"].(map[string]any); text["output"] != "sentence_embedding" || text["pooling"] != nil {
		t.Errorf("recipe %v", text)
	}

	// A long text is truncated to the tokenizer's max_length (12) and still
	// encodes; max_length 5 overrides it.
	long := strings.Repeat("red square ", 20)
	e, err := NewTextEncoder(ctx, TextConfig{Name: "t", ModelDir: filepath.Join(testdata, "tiny-text"), Text: TextOptions{MaxLength: 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got = mustDense(t)(e.Encode(ctx, extract.Batch{Items: retrieval.Texts{long}}))
	var short []int64 // [CLS] red square red [SEP]
	for _, tok := range []string{"[CLS]", "red", "square", "red", "[SEP]"} {
		id, ok := tinymodels.TextTokenID(tok)
		if !ok {
			t.Fatalf("no token %q", tok)
		}
		short = append(short, id)
	}
	h := tinymodels.TextHidden([][]int64{short}, [][]int64{make([]int64, 5)})[0]
	want := make([]float64, tinymodels.Dim)
	for _, v := range h {
		for k := range want {
			want[k] += v[k] / 5
		}
	}
	closeTo(t, "truncated", got.Float32Data(), want)
}

// TestImageEncoder: pooler_output by default; last_hidden_state (4 patches)
// needs pooling; mean over patches equals the model's own pooler.
func TestImageEncoder(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	dir := filepath.Join(testdata, "tiny-image")
	images := retrievalImagePaths()
	var px [][]float32
	for _, c := range tinymodels.RetrievalImages {
		px = append(px, tinymodels.CLIPPixels(c))
	}
	hidden := tinymodels.ImageHidden(px)
	var cls []float64
	for _, h := range hidden {
		cls = append(cls, h[0]...)
	}
	cases := []struct {
		cfg  ImageConfig
		want []float64
	}{
		{ImageConfig{}, flat(tinymodels.ImagePooled(px))},
		{ImageConfig{Output: "last_hidden_state", Pooling: PoolMean}, flat(tinymodels.ImagePooled(px))},
		{ImageConfig{Output: "last_hidden_state", Pooling: PoolCLS}, cls},
	}
	for i, c := range cases {
		cfg := c.cfg
		cfg.Name, cfg.ModelDir = "img", dir
		e, err := NewImageEncoder(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := mustDense(t)(e.Encode(ctx, extract.Batch{Items: images}))
		closeTo(t, "case "+strconv.Itoa(i), got.Float32Data(), c.want)
		e.Close()
	}
	if _, err := NewImageEncoder(ctx, ImageConfig{Name: "img", ModelDir: dir, Output: "last_hidden_state"}); err == nil ||
		!strings.Contains(err.Error(), "output last_hidden_state float32[?,4,4] is 3-D; set pooling") {
		t.Errorf("3-D output without pooling: %v", err)
	}
}

func TestAdapterErrors(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	tmp := t.TempDir()
	copyDir := func(src string, skip ...string) string {
		dst := filepath.Join(tmp, filepath.Base(src)+strconv.Itoa(len(skip)))
		filepath.WalkDir(src, func(p string, de os.DirEntry, err error) error {
			rel, _ := filepath.Rel(src, p)
			for _, s := range skip {
				if rel == s {
					return nil
				}
			}
			if de.IsDir() {
				return os.MkdirAll(filepath.Join(dst, rel), 0o755)
			}
			b, _ := os.ReadFile(p)
			return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
		})
		return dst
	}
	noTok := copyDir(filepath.Join(testdata, "tiny-clip"), "tokenizer.json")
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"missing tokenizer", func() error {
			_, err := NewDualEncoder(ctx, DualEncoderConfig{Name: "c", ModelDir: noTok})
			return err
		}, "extractor c: tokenizer.json not found (looked for " + filepath.Join(noTok, "tokenizer.json") + ")"},
		{"unknown text output", func() error {
			_, err := NewDualEncoder(ctx, DualEncoderConfig{Name: "c", ModelDir: filepath.Join(testdata, "tiny-clip"), TextOutput: "logits"})
			return err
		}, `has no output "logits" (outputs: text_embeds float32[?,4], last_hidden_state float32[?,?,4])`},
		{"3-D text output", func() error {
			_, err := NewDualEncoder(ctx, DualEncoderConfig{Name: "c", ModelDir: filepath.Join(testdata, "tiny-clip"), TextOutput: "last_hidden_state"})
			return err
		}, "is 3-D; set pooling (cls or mean)"},
		{"image model as text model", func() error {
			_, err := NewDualEncoder(ctx, DualEncoderConfig{Name: "c", ModelDir: filepath.Join(testdata, "tiny-clip"), TextModel: "onnx/vision_model.onnx"})
			return err
		}, "text model input pixel_values float32[?,3,8,8] is not an integer tensor"},
		{"library missing", func() error {
			_, err := NewTextEncoder(ctx, TextConfig{Name: "t", ModelDir: filepath.Join(testdata, "tiny-text"), Runtime: Runtime{Library: filepath.Join(tmp, "libonnxruntime.so")}})
			return err
		}, "ONNX Runtime library not found"},
		{"channels differ from the model's", func() error {
			dir := copyDir(filepath.Join(testdata, "tiny-image"), "preprocessor_config.json")
			os.WriteFile(filepath.Join(dir, "preprocessor_config.json"), []byte(`{"do_resize": false, "do_center_crop": false,
				"do_normalize": false, "do_convert_grayscale": true}`), 0o644)
			_, err := NewImageEncoder(ctx, ImageConfig{Name: "i", ModelDir: dir})
			return err
		}, "image model input pixel_values float32[?,3,8,8] takes 3 channels; the preprocessor produces 1"},
		{"size differs from the model's", func() error {
			dir := copyDir(filepath.Join(testdata, "tiny-image"), "preprocessor_config.json", "x")
			os.WriteFile(filepath.Join(dir, "preprocessor_config.json"), []byte(`{"do_resize": true, "size": {"height": 16, "width": 16},
				"resample": 2, "image_mean": 0.5, "image_std": 0.5}`), 0o644)
			_, err := NewImageEncoder(ctx, ImageConfig{Name: "i", ModelDir: dir})
			return err
		}, "does not match the preprocessor's 16x16 output"},
		{"bad pooling", func() error {
			_, err := NewImageEncoder(ctx, ImageConfig{Name: "i", ModelDir: filepath.Join(testdata, "tiny-image"), Pooling: "max"})
			return err
		}, `pooling must be cls or mean, got "max"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v\nwant %q", err, c.want)
			}
		})
	}
}

// TestOpenCLIPLayout rearranges the tiny CLIP export into the OpenCLIP
// (Immich) layout — textual/ and visual/ towers, preprocess_cfg.json, the
// context length in config.json — and expects the same embeddings.
func TestOpenCLIPLayout(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	src := filepath.Join(testdata, "tiny-clip")
	dir := t.TempDir()
	cp := func(from, to string) {
		b, err := os.ReadFile(filepath.Join(src, from))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, to)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cp("onnx/text_model.onnx", "textual/model.onnx")
	cp("tokenizer.json", "textual/tokenizer.json")
	cp("tokenizer_config.json", "textual/tokenizer_config.json")
	cp("onnx/vision_model.onnx", "visual/model.onnx")
	os.WriteFile(filepath.Join(dir, "visual", "preprocess_cfg.json"), []byte(`{"size": [8, 8], "mode": "RGB",
		"mean": [0.48145466, 0.4578275, 0.40821073], "std": [0.26862954, 0.26130258, 0.27577711],
		"interpolation": "bicubic", "resize_mode": "shortest", "fill_color": 0}`), 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"embed_dim": 4, "text_cfg": {"context_length": 16}}`), 0o644)

	hf, err := NewDualEncoder(ctx, DualEncoderConfig{Name: "hf", ModelDir: src})
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	oc, err := NewDualEncoder(ctx, DualEncoderConfig{Name: "oc", ModelDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	if oc.Recipe()["layout"] != "openclip" || hf.Recipe()["layout"] != "huggingface" {
		t.Errorf("layouts %v, %v", oc.Recipe()["layout"], hf.Recipe()["layout"])
	}
	texts := extract.Batch{Items: retrieval.Texts(tinymodels.RetrievalTexts)}
	images := extract.Batch{Items: retrieval.Images{
		filepath.Join(testdata, "images", tinymodels.StripesImage), filepath.Join(testdata, "images", tinymodels.QuadrantsImage)}}
	for _, c := range []struct {
		branch string
		batch  extract.Batch
	}{{TextBranch, texts}, {ImageBranch, images}} {
		a := mustDense(t)(hf.EncodeBranch(ctx, c.batch, c.branch))
		b := mustDense(t)(oc.EncodeBranch(ctx, c.batch, c.branch))
		if !equal32(a.Float32Data(), b.Float32Data()) {
			t.Errorf("%s: OpenCLIP layout %v, HF layout %v", c.branch, b.Float32Data(), a.Float32Data())
		}
	}
}

// A CPU-only library cannot take the CUDA execution provider: the error
// says so instead of silently running on the CPU.
func TestCUDAUnavailable(t *testing.T) {
	requireRuntime(t)
	_, err := NewImageEncoder(context.Background(), ImageConfig{Name: "i", ModelDir: filepath.Join(testdata, "tiny-image"),
		Runtime: Runtime{ExecutionProvider: "cuda"}})
	if err == nil || !strings.Contains(err.Error(), "execution_provider cuda: this ONNX Runtime library") {
		t.Fatalf("error = %v", err)
	}
}

// TestStaticTextModel: exports with a fixed [1, L] input_ids (common for
// OpenCLIP) run one row at a time at length L; a conflicting max_length or
// padding "longest" is refused.
func TestStaticTextModel(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	src := filepath.Join(testdata, "tiny-clip")
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json", "preprocessor_config.json", "onnx/vision_model.onnx"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	m := tinymodels.CLIPTextModel()
	for i, in := range m.Graph.Inputs {
		m.Graph.Inputs[i] = onnxpb.Input(in.Name, onnxpb.Int64, onnxpb.Fixed(1), onnxpb.Fixed(16))
	}
	if err := os.WriteFile(filepath.Join(dir, "onnx", "text_model.onnx"), m.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	// No config.json: without the model's fixed length the default would be 77.
	static, err := NewDualEncoder(ctx, DualEncoderConfig{Name: "static", ModelDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer static.Close()
	if got := static.Recipe()["text"].(map[string]any)["max_length"]; got != 16 {
		t.Errorf("max_length %v, want the model's 16", got)
	}
	dynamic, err := NewDualEncoder(ctx, DualEncoderConfig{Name: "dynamic", ModelDir: src})
	if err != nil {
		t.Fatal(err)
	}
	defer dynamic.Close()
	texts := extract.Batch{Items: retrieval.Texts(tinymodels.RetrievalTexts)}
	a := mustDense(t)(static.EncodeBranch(ctx, texts, TextBranch))
	b := mustDense(t)(dynamic.EncodeBranch(ctx, texts, TextBranch))
	if !equal32(a.Float32Data(), b.Float32Data()) {
		t.Errorf("static %v, dynamic %v", a.Float32Data(), b.Float32Data())
	}
	for _, c := range []struct {
		text TextOptions
		want string
	}{
		{TextOptions{MaxLength: 8}, "max_length is 8 but text model input input_ids int64[1,16] takes exactly 16 tokens"},
		{TextOptions{Padding: PadLongest}, "has a fixed length of 16 tokens; use padding max_length"},
	} {
		if _, err := NewDualEncoder(ctx, DualEncoderConfig{Name: "static", ModelDir: dir, Text: c.text}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.text, err, c.want)
		}
	}
}

// TestExternalData: a model whose weights sit in model.onnx_data runs like
// the inline one, and the data file is part of the recipe's identity.
func TestExternalData(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	texts := extract.Batch{Items: retrieval.Texts{"a photo of a red square", "Red squares!"}}
	inline, err := NewTextEncoder(ctx, TextConfig{Name: "inline", ModelDir: filepath.Join(testdata, "tiny-text")})
	if err != nil {
		t.Fatal(err)
	}
	defer inline.Close()
	dir := filepath.Join(testdata, "tiny-text-external")
	ext, err := NewTextEncoder(ctx, TextConfig{Name: "external", ModelDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	a := mustDense(t)(inline.Encode(ctx, texts))
	b := mustDense(t)(ext.Encode(ctx, texts))
	if !equal32(a.Float32Data(), b.Float32Data()) {
		t.Errorf("external-data model %v, inline %v", b.Float32Data(), a.Float32Data())
	}
	ids := ext.Recipe()["path_identities"].(map[string]any)
	want, err := fileDigest(filepath.Join(dir, "model.onnx_data"))
	if err != nil || ids["model_data:model.onnx_data"] != "sha256:"+want {
		t.Errorf("identities %v lack the data file (sha256:%s)", ids, want)
	}
	if _, ok := inline.Recipe()["path_identities"].(map[string]any)["model_data:model.onnx_data"]; ok {
		t.Error("inline model has a data identity")
	}
}

// BenchmarkDualEncoderOverhead measures what the adapters add around the
// model: with the tiny CLIP export the ONNX compute is negligible, so the
// time per row is tokenisation, image decoding and preprocessing, tensor
// copies and session calls.
//
//	ONNXRUNTIME_LIB=... go test -run '^$' -bench DualEncoderOverhead ./extract/onnx
func BenchmarkDualEncoderOverhead(b *testing.B) {
	requireRuntime(b)
	ctx := context.Background()
	d, err := NewDualEncoder(ctx, DualEncoderConfig{Name: "clip", ModelDir: filepath.Join(testdata, "tiny-clip")})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	const n = 256
	texts := make(retrieval.Texts, n)
	images := make(retrieval.Images, n)
	for i := range texts {
		texts[i] = tinymodels.RetrievalTexts[i%len(tinymodels.RetrievalTexts)] + " number " + strconv.Itoa(i)
		images[i] = filepath.Join(testdata, "images", tinymodels.StripesImage)
	}
	for _, c := range []struct {
		branch string
		items  retrieval.Items
	}{{TextBranch, texts}, {ImageBranch, images}} {
		b.Run(c.branch, func(b *testing.B) {
			for b.Loop() {
				if _, err := d.EncodeBranch(ctx, extract.Batch{Items: c.items}, c.branch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/row")
		})
	}
}

// TestFloat16Model: a half-precision export (float16 pixel_values and
// image_embeds) is fed float16 and read back as float32; results agree with
// the float64 reference to half precision.
func TestFloat16Model(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	const float16 = onnxpb.DataType(10)
	m := tinymodels.CLIPVisionModel()
	g := &m.Graph
	for i := range g.Nodes {
		for j, in := range g.Nodes[i].Inputs {
			if in == "pixel_values" {
				g.Nodes[i].Inputs[j] = "pixel_values_f32"
			}
		}
		for j, out := range g.Nodes[i].Outputs {
			if out == "image_embeds" {
				g.Nodes[i].Outputs[j] = "image_embeds_f32"
			}
		}
	}
	g.Nodes = append([]onnxpb.NodeProto{onnxpb.Node("Cast", []string{"pixel_values"}, []string{"pixel_values_f32"}, onnxpb.IntAttr("to", int64(onnxpb.Float)))}, g.Nodes...)
	g.Nodes = append(g.Nodes, onnxpb.Node("Cast", []string{"image_embeds_f32"}, []string{"image_embeds"}, onnxpb.IntAttr("to", int64(float16))))
	g.Inputs = []onnxpb.ValueInfo{onnxpb.Input("pixel_values", float16, onnxpb.Sym("batch"), onnxpb.Fixed(3), onnxpb.Fixed(8), onnxpb.Fixed(8))}
	g.Outputs = []onnxpb.ValueInfo{onnxpb.Output("image_embeds", float16, onnxpb.Sym("batch"), onnxpb.Fixed(tinymodels.Dim))}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "model.onnx"), m.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	prep, _ := os.ReadFile(filepath.Join(testdata, "tiny-clip", "preprocessor_config.json"))
	os.WriteFile(filepath.Join(dir, "preprocessor_config.json"), prep, 0o644)
	e, err := NewImageEncoder(ctx, ImageConfig{Name: "fp16", ModelDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got := mustDense(t)(e.Encode(ctx, extract.Batch{Items: retrievalImagePaths()}))
	var px [][]float32
	for _, c := range tinymodels.RetrievalImages {
		px = append(px, tinymodels.CLIPPixels(c))
	}
	want := flat(tinymodels.CLIPVision(px))
	for i, w := range want {
		// float16 keeps 11 significant bits: inputs and outputs are rounded.
		if d := math.Abs(float64(got.Float32Data()[i]) - w); d > 2e-2*math.Max(1, math.Abs(w)) {
			t.Fatalf("value %d = %v, reference %v", i, got.Float32Data()[i], w)
		}
	}
}

// TestInt32TokenInputs: exports that declare int32 token inputs get the
// same IDs as int32.
func TestInt32TokenInputs(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	const int32Type = onnxpb.DataType(6)
	m := tinymodels.TextModel()
	for i, in := range m.Graph.Inputs {
		m.Graph.Inputs[i] = onnxpb.Input(in.Name, int32Type, onnxpb.Sym("batch"), onnxpb.Sym("sequence"))
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "model.onnx"), m.Marshal(), 0o644)
	tok, _ := os.ReadFile(filepath.Join(testdata, "tiny-text", "tokenizer.json"))
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644)
	texts := extract.Batch{Items: retrieval.Texts{"a photo of a red square", "über"}}
	var got [2][]float32
	for i, d := range []string{filepath.Join(testdata, "tiny-text"), dir} {
		e, err := NewTextEncoder(ctx, TextConfig{Name: "t", ModelDir: d})
		if err != nil {
			t.Fatal(err)
		}
		got[i] = mustDense(t)(e.Encode(ctx, texts)).Float32Data()
		e.Close()
	}
	if !equal32(got[0], got[1]) {
		t.Errorf("int32 inputs %v, int64 inputs %v", got[1], got[0])
	}
}
