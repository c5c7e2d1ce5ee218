package runspec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// specExample is the normative example of SPEC §6.5, verbatim.
const specExample = `version: 1
dataset:
  id: my-set                 # optional; id + revision → declared identity, else content
  revision: "2026-01"
  queries: {modality: text, path: queries.jsonl, ids: query_ids.txt}
  gallery: {modality: image, path: images.txt, ids: gallery_ids.txt}
  #   or {modality: embeddings, path: g.npy, tensor: …} or {modality: embeddings, ids: g.txt}
  qrels: {path: qrels.tsv, format: tsv}   # or labels: {queries: …, gallery: …, leave_one_out: false}
  exclusions: excl.tsv                     # optional; metadata: {…} optional
retrieval: {similarity: cosine, ks: [1, 5, 10], primary_metric: ndcg@10, gain: linear}
embedding: {batch_size: 128, streaming_enabled: true}
memory: {max_memory_bytes: 8000000000, allow_disk_spill: true}
compression: [{method: none}, {method: pca, n_components: 64}]   # default [{method: none}]
extractors:
  - {name: clip-b32, type: onnx_dual_encoder, model_dir: models/clip-b32,
     query_branch: text_branch, gallery_branch: image_branch}
  - {name: e5, type: openai, base_url: "http://localhost:8000/v1", model: e5-base,
     api_key_env: OPENAI_API_KEY}
  - {name: mine, type: precomputed, queries: a_q.npy, gallery: a_g.npy}
outputs: {json: out/report.json, markdown: out/report.md, run: out/runs, run_depth: 100}
engine: local                                # or beam (§11.4)
`

func ptr[T any](v T) *T { return &v }

func TestSpecExample(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte(specExample), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	j := func(p string) string { return filepath.Join(dir, p) }
	rc := retrieval.DefaultConfig()
	rc.Gain = retrieval.GainLinear
	mc := memory.Default()
	mc.MaxMemoryBytes = ptr(int64(8000000000))
	pca := compress.Default()
	pca.Method = compress.MethodPCA
	pca.NComponents = ptr(64)
	want := &Spec{
		Path:    path,
		Dir:     dir,
		Version: 1,
		Dataset: Dataset{
			ID: "my-set", Revision: "2026-01",
			Queries:    Endpoint{Modality: "text", Path: j("queries.jsonl"), IDs: j("query_ids.txt")},
			Gallery:    Endpoint{Modality: "image", Path: j("images.txt"), IDs: j("gallery_ids.txt")},
			Qrels:      &Qrels{Path: j("qrels.tsv"), Format: "tsv"},
			Exclusions: j("excl.tsv"),
		},
		Retrieval:   rc,
		Embedding:   Embedding{BatchSize: 128, StreamingEnabled: true},
		Memory:      mc,
		Compression: []compress.Config{compress.Default(), pca},
		Extractors: []Extractor{
			{
				Name: "clip-b32", Type: TypeONNXDualEncoder, QueryBranch: "text_branch", GalleryBranch: "image_branch",
				Cache: true, Options: map[string]any{"model_dir": j("models/clip-b32")},
				OptionLines: map[string]int{"model_dir": 15}, Line: 15, path: path,
			},
			{
				Name: "e5", Type: TypeOpenAI, Cache: true,
				Options: map[string]any{
					"base_url": "http://localhost:8000/v1", "model": "e5-base", "api_key_env": "OPENAI_API_KEY",
				},
				OptionLines: map[string]int{"base_url": 17, "model": 17, "api_key_env": 18}, Line: 17, path: path,
			},
			{
				Name: "mine", Type: TypePrecomputed, Cache: true,
				Options:     map[string]any{"queries": j("a_q.npy"), "gallery": j("a_g.npy")},
				OptionLines: map[string]int{"queries": 19, "gallery": 19}, Line: 19, path: path,
			},
		},
		Outputs: Outputs{
			JSON: j("out/report.json"), Markdown: j("out/report.md"), Run: j("out/runs"), RunDepth: ptr(100),
		},
		Engine: EngineLocal,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SPEC example parsed as\n%#v\nwant\n%#v", got, want)
	}
	if !got.Dataset.Declared() || !got.Extractors[0].Branched() || got.Extractors[1].Branched() {
		t.Fatal("Declared/Branched disagree with the example")
	}
}

const smallYAML = `
version: 1
dataset:
  id: set
  revision: "1"
  queries: {path: q.npy, tensor: emb, ids: q.txt}
  gallery: {path: g.parquet, id_column: id}
  qrels: {path: qrels.jsonl, format: jsonl}
  metadata: {source: unit, n: 3, ratio: 0.5, tags: [a, b], nested: {ok: true, none: null}}
retrieval: {similarity: dot, ks: [10, 1], primary_metric: ndcg@1, bidirectional: true, max_pairwise_comparisons: 1000}
memory: {max_memory_bytes: 1000000, max_fraction: 0.5, allow_disk_spill: false}
compression: [{method: quantize, precision: int8}]
extractors:
  - name: cmd
    type: command
    command: [python3, embed.py, --fast]
    env: {CUDA_VISIBLE_DEVICES: "0"}
    dir: tools
    modality: embeddings
    timeout: 90s
    cache: false
outputs: {json: "-", csv: per_query.csv}
engine: beam
`

const smallJSON = `{
	"version": 1,
	"dataset": {
		"id": "set",
		"revision": "1",
		"queries": {"path": "q.npy", "tensor": "emb", "ids": "q.txt"},
		"gallery": {"path": "g.parquet", "id_column": "id"},
		"qrels": {"path": "qrels.jsonl", "format": "jsonl"},
		"metadata": {"source": "unit", "n": 3, "ratio": 0.5, "tags": ["a", "b"], "nested": {"ok": true, "none": null}}
	},
	"retrieval": {"similarity": "dot", "ks": [10, 1], "primary_metric": "ndcg@1", "bidirectional": true, "max_pairwise_comparisons": 1e3},
	"memory": {"max_memory_bytes": 1000000, "max_fraction": 0.5, "allow_disk_spill": false},
	"compression": [{"method": "quantize", "precision": "int8"}],
	"extractors": [
		{"name": "cmd", "type": "command", "command": ["python3", "embed.py", "--fast"],
		 "env": {"CUDA_VISIBLE_DEVICES": "0"}, "dir": "tools", "modality": "embeddings",
		 "timeout": "90s", "cache": false}
	],
	"outputs": {"json": "-", "csv": "per_query.csv"},
	"engine": "beam"
}`

// stripLines drops what legitimately differs between two layouts of one spec.
func stripLines(s *Spec) {
	for i := range s.Extractors {
		s.Extractors[i].Line = 0
		s.Extractors[i].OptionLines = nil
	}
}

func TestJSONMatchesYAML(t *testing.T) {
	y, err := Parse("cfg/run.yaml", []byte(smallYAML))
	if err != nil {
		t.Fatal(err)
	}
	j, err := Parse("cfg/run.yaml", []byte(smallJSON))
	if err != nil {
		t.Fatal(err)
	}
	stripLines(y)
	stripLines(j)
	if !reflect.DeepEqual(y, j) {
		t.Fatalf("YAML and JSON differ:\n%#v\n%#v", y, j)
	}

	s := y
	if s.Dir != "cfg" || s.Dataset.Queries.Path != filepath.Join("cfg", "q.npy") || s.Dataset.Queries.Tensor != "emb" {
		t.Fatalf("dataset.queries = %+v (dir %q)", s.Dataset.Queries, s.Dir)
	}
	if s.Dataset.Gallery.IDColumn != "id" || s.Dataset.Gallery.IDs != "" {
		t.Fatalf("dataset.gallery = %+v", s.Dataset.Gallery)
	}
	meta := map[string]any{"source": "unit", "n": int64(3), "ratio": 0.5, "tags": []any{"a", "b"},
		"nested": map[string]any{"ok": true, "none": nil}}
	if !reflect.DeepEqual(s.Dataset.Metadata, meta) {
		t.Fatalf("metadata = %#v", s.Dataset.Metadata)
	}
	if !reflect.DeepEqual(s.Retrieval.Ks, []int{10, 1}) || s.Retrieval.Similarity != "dot" ||
		!s.Retrieval.Bidirectional || *s.Retrieval.MaxPairwiseComparisons != 1000 {
		t.Fatalf("retrieval = %+v", s.Retrieval)
	}
	if s.Memory.AllowDiskSpill || s.Memory.MaxFraction != 0.5 || *s.Memory.MaxMemoryBytes != 1000000 {
		t.Fatalf("memory = %+v", s.Memory)
	}
	if len(s.Compression) != 1 || s.Compression[0].Method != compress.MethodQuantize || *s.Compression[0].Precision != "int8" {
		t.Fatalf("compression = %+v", s.Compression)
	}
	e := s.Extractors[0]
	if e.Cache || !reflect.DeepEqual(e.Strings("command"), []string{"python3", "embed.py", "--fast"}) ||
		e.Str("dir") != filepath.Join("cfg", "tools") || e.StringMap("env")["CUDA_VISIBLE_DEVICES"] != "0" ||
		e.Duration("timeout", 0) != 90*time.Second || e.Int("batch_size", 64) != 64 || !e.Bool("streaming_safe", true) {
		t.Fatalf("extractor = %+v", e)
	}
	if s.Outputs.JSON != "-" || s.Outputs.CSV != filepath.Join("cfg", "per_query.csv") || s.Engine != EngineBeam {
		t.Fatalf("outputs/engine = %+v %q", s.Outputs, s.Engine)
	}
}

const minimal = `version: 1
dataset:
  queries: {path: q.npy}
  gallery: {path: g.npy}
  qrels: {path: qrels.tsv}
extractors:
  - {name: a, type: precomputed}
`

func TestDefaults(t *testing.T) {
	s, err := Parse("run.yaml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Retrieval, retrieval.DefaultConfig()) {
		t.Errorf("retrieval = %+v", s.Retrieval)
	}
	if !reflect.DeepEqual(s.Memory, memory.Default()) {
		t.Errorf("memory = %+v", s.Memory)
	}
	if !reflect.DeepEqual(s.Compression, []compress.Config{compress.Default()}) {
		t.Errorf("compression = %+v", s.Compression)
	}
	if s.Embedding != (Embedding{BatchSize: 128, StreamingEnabled: true}) {
		t.Errorf("embedding = %+v", s.Embedding)
	}
	if s.Engine != EngineLocal || s.Outputs != (Outputs{}) || s.Dataset.Declared() {
		t.Errorf("engine %q outputs %+v declared %v", s.Engine, s.Outputs, s.Dataset.Declared())
	}
	for _, ep := range []Endpoint{s.Dataset.Queries, s.Dataset.Gallery} {
		if ep.Modality != ModalityEmbeddings {
			t.Errorf("modality = %q", ep.Modality)
		}
	}
	e := s.Extractors[0]
	if !e.Cache || len(e.Options) != 0 || e.Line != 7 {
		t.Errorf("extractor = %+v", e)
	}
	if s.Dataset.Qrels.Format != "" || s.Dataset.Labels != nil {
		t.Errorf("relevance = %+v %+v", s.Dataset.Qrels, s.Dataset.Labels)
	}
	// Explicit nulls and empty sections mean the defaults too.
	s2, err := Parse("run.yaml", []byte(minimal+"retrieval: {}\nmemory:\nembedding: ~\noutputs: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, s2) {
		t.Errorf("empty sections changed the spec:\n%#v\n%#v", s, s2)
	}
}

func TestPathResolution(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "abs")
	text := `version: 1
dataset:
  queries: {modality: text, path: in/q.jsonl, ids: ../ids/q.txt}
  gallery: {path: ` + abs + `/g.npy}
  labels: {queries: lq.txt, gallery: ` + abs + `/lg.txt}
  exclusions: ex.tsv
extractors:
  - {name: hf, type: onnx_text, model_dir: models/m, onnxruntime_library: libonnxruntime.so}
  - {name: ort, type: onnx_image, model_dir: ` + abs + `/m, onnxruntime_library: lib/libonnxruntime.so}
  - {name: pre, type: precomputed, queries: a.npy, gallery: ` + abs + `/b.npy, queries_tensor: x}
outputs: {json: r.json, markdown: "-", csv: out/q.csv, run: out/run.trec, write_qrels: ` + abs + `/q.qrels}
`
	base := filepath.Join("conf", "exp")
	s, err := Parse(filepath.Join(base, "run.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	j := func(p string) string { return filepath.Join(base, p) }
	checks := []struct{ name, got, want string }{
		{"queries.path", s.Dataset.Queries.Path, j("in/q.jsonl")},
		{"queries.ids", s.Dataset.Queries.IDs, filepath.Join("conf", "ids", "q.txt")},
		{"gallery.path", s.Dataset.Gallery.Path, abs + "/g.npy"},
		{"labels.queries", s.Dataset.Labels.Queries, j("lq.txt")},
		{"labels.gallery", s.Dataset.Labels.Gallery, abs + "/lg.txt"},
		{"exclusions", s.Dataset.Exclusions, j("ex.tsv")},
		{"model_dir", s.Extractors[0].Str("model_dir"), j("models/m")},
		{"bare library", s.Extractors[0].Str("onnxruntime_library"), "libonnxruntime.so"},
		{"abs model_dir", s.Extractors[1].Str("model_dir"), abs + "/m"},
		{"library path", s.Extractors[1].Str("onnxruntime_library"), j("lib/libonnxruntime.so")},
		{"precomputed queries", s.Extractors[2].Str("queries"), j("a.npy")},
		{"precomputed gallery", s.Extractors[2].Str("gallery"), abs + "/b.npy"},
		{"tensor is not a path", s.Extractors[2].Str("queries_tensor"), "x"},
		{"json", s.Outputs.JSON, j("r.json")},
		{"markdown stdout", s.Outputs.Markdown, "-"},
		{"csv", s.Outputs.CSV, j("out/q.csv")},
		{"run", s.Outputs.Run, j("out/run.trec")},
		{"write_qrels", s.Outputs.WriteQrels, abs + "/q.qrels"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestLeaveOneOut(t *testing.T) {
	text := `version: 1
dataset:
  queries: {path: x.npy, ids: ids.txt}
  labels: {queries: labels.txt, leave_one_out: true}
extractors: [{name: a, type: precomputed}]
`
	s, err := Parse("run.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if s.Dataset.Gallery != s.Dataset.Queries || s.Dataset.Labels.Gallery != s.Dataset.Labels.Queries || !s.Dataset.Labels.LeaveOneOut {
		t.Fatalf("dataset = %+v labels %+v", s.Dataset, s.Dataset.Labels)
	}
	// Naming the same inputs again is allowed.
	same := strings.Replace(text, "  labels:", "  gallery: {ids: ids.txt, path: x.npy}\n  labels:", 1)
	same = strings.Replace(same, "leave_one_out: true", "gallery: labels.txt, leave_one_out: true", 1)
	if _, err := Parse("run.yaml", []byte(same)); err != nil {
		t.Fatal(err)
	}
}

func TestAnchorsAndMerges(t *testing.T) {
	text := `version: 1
defaults: &hosted {base_url: "http://localhost:8080", batch_size: 32}
`
	// Unknown top-level keys fail even when they only hold anchors.
	if _, err := Parse("run.yaml", []byte(text)); err == nil || !strings.Contains(err.Error(), `run.yaml:2: unknown field "defaults"`) {
		t.Fatalf("err = %v", err)
	}
	text = `version: 1
dataset:
  queries: &ep {modality: text, path: q.txt}
  gallery: *ep
  qrels: {path: qrels.tsv}
extractors:
  - &base {name: a, type: tei, base_url: "http://localhost:8080", batch_size: 32, request_timeout: 2.5}
  - <<: *base
    name: b
    model: bge
  - {<<: [*base], name: c, batch_size: 8}
`
	s, err := Parse("run.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if s.Dataset.Gallery != s.Dataset.Queries {
		t.Fatalf("alias endpoint = %+v", s.Dataset.Gallery)
	}
	b, c := s.Extractors[1], s.Extractors[2]
	if b.Name != "b" || b.Str("model") != "bge" || b.Int("batch_size", 0) != 32 || b.Str("base_url") != "http://localhost:8080" {
		t.Fatalf("merged extractor b = %+v", b)
	}
	if c.Name != "c" || c.Int("batch_size", 0) != 8 || c.Duration("request_timeout", 0) != 2500*time.Millisecond {
		t.Fatalf("merged extractor c = %+v", c)
	}
	if b.OptionLines["model"] != 10 || b.OptionLines["batch_size"] != 7 {
		t.Fatalf("option lines = %v", b.OptionLines)
	}
}

func TestScalarConversions(t *testing.T) {
	text := minimal + `  - {name: b, type: ollama, base_url: "https://h", model: m, dimensions: 0x40, max_retries: 0,
     headers: {X-Trace: "on"}, initial_backoff: 1, max_backoff: 1m}
retrieval: {ks: [1.0, 5], primary_metric: ndcg@5, worst_queries: !!int "3", max_pairwise_comparisons: null}
dataset_revision_is_checked_below: 1
`
	// The extra key proves the whole file was read; drop it to parse.
	if _, err := Parse("run.yaml", []byte(text)); err == nil || !strings.Contains(err.Error(), "run.yaml:11: unknown field") {
		t.Fatalf("err = %v", err)
	}
	text = strings.Replace(text, "dataset_revision_is_checked_below: 1\n", "", 1)
	s, err := Parse("run.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	e := s.Extractors[1]
	if e.Options["dimensions"] != int64(64) || e.Options["max_retries"] != int64(0) ||
		e.Duration("initial_backoff", 0) != time.Second || e.Duration("max_backoff", 0) != time.Minute ||
		e.StringMap("headers")["X-Trace"] != "on" {
		t.Fatalf("options = %#v", e.Options)
	}
	if !reflect.DeepEqual(s.Retrieval.Ks, []int{1, 5}) || s.Retrieval.WorstQueries != 3 || s.Retrieval.MaxPairwiseComparisons != nil {
		t.Fatalf("retrieval = %+v", s.Retrieval)
	}
	// An unquoted date is a YAML timestamp; it is still the string written.
	d, err := Parse("run.yaml", []byte(strings.Replace(minimal, "dataset:\n", "dataset:\n  id: x\n  revision: 2026-01-15\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if d.Dataset.Revision != "2026-01-15" {
		t.Fatalf("revision = %q", d.Dataset.Revision)
	}
}

func TestExtractorErrorf(t *testing.T) {
	s, err := Parse("dir/run.yaml", []byte(minimal+"  - name: h\n    type: openai\n    base_url: http://x\n    model: m\n    dimensions: 12\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := s.Extractors[1]
	err = e.Errorf("dimensions", "server returned width %d", 10)
	if got, want := err.Error(), "dir/run.yaml:12: extractor h: server returned width 10"; got != want {
		t.Fatalf("Errorf = %q, want %q", got, want)
	}
	if got := e.Errorf("absent", "x").Error(); !strings.HasPrefix(got, "dir/run.yaml:8: ") {
		t.Fatalf("Errorf for absent key = %q", got)
	}
	if len(ExtractorTypes()) != 8 {
		t.Fatalf("ExtractorTypes = %v", ExtractorTypes())
	}
}

func TestConfigErrorUnwraps(t *testing.T) {
	_, err := Parse("run.yaml", []byte(minimal+"retrieval: {ks: [0]}\n"))
	var ce *retrieval.ConfigError
	if !errors.As(err, &ce) || ce.Field != "ks" {
		t.Fatalf("err = %v, want a *retrieval.ConfigError for ks", err)
	}
	var re *Error
	if !errors.As(err, &re) || re.Line != 8 || re.Path != "run.yaml" {
		t.Fatalf("err = %#v", err)
	}
}

func TestLoadMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+": cannot read run file") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestJSONEscapesAndLayout(t *testing.T) {
	compact := `{"version":1,"dataset":{"id":"caf\u00e9\/x \ud83d\ude00","revision":"\"r\"\t1",` +
		`"queries":{"path":"q.npy"},"gallery":{"path":"g.npy"},"qrels":{"path":"q.tsv"}},` +
		`"extractors":[{"name":"a","type":"precomputed"}]}`
	s, err := Parse("r.json", []byte(compact))
	if err != nil {
		t.Fatal(err)
	}
	if s.Dataset.ID != "café/x 😀" || s.Dataset.Revision != "\"r\"\t1" {
		t.Fatalf("id %q revision %q", s.Dataset.ID, s.Dataset.Revision)
	}
	tabbed := "{\n\t\"version\": 1,\n\t\"dataset\": {\n\t\t\"queries\": {\"path\": \"q.npy\"},\n\t\t\"gallery\": {\"path\": \"g.npy\"},\n" +
		"\t\t\"qrels\": {\"path\": \"q.tsv\", \"colour\": \"red\"}\n\t},\n\t\"extractors\": [{\"name\": \"a\", \"type\": \"precomputed\"}]\n}\n"
	_, err = Parse("r.json", []byte(tabbed))
	if err == nil || !strings.HasPrefix(err.Error(), `r.json:6: unknown field "colour" in dataset.qrels`) {
		t.Fatalf("err = %v", err)
	}
}
