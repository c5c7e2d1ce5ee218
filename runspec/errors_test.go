package runspec

import (
	"fmt"
	"strings"
	"testing"
)

// base is a valid run file; each case edits it. Its lines:
//
//	1 version, 2 dataset, 3 queries, 4 gallery, 5 qrels, 6 extractors, 7 the extractor.
const base = `version: 1
dataset:
  queries: {path: q.npy}
  gallery: {path: g.npy}
  qrels: {path: qrels.tsv}
extractors:
  - {name: a, type: precomputed}
`

func TestBaseIsValid(t *testing.T) {
	if _, err := Parse("run.yaml", []byte(base)); err != nil {
		t.Fatal(err)
	}
}

func replaceLine(text string, line int, with string) string {
	lines := strings.Split(text, "\n")
	lines[line-1] = with
	return strings.Join(lines, "\n")
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name string
		text string
		line int    // expected line; 0 = no line
		frag string // fragment the message must contain
	}{
		// Structure and YAML.
		{"unknown top-level key", base + "colour: red\n", 8, `unknown field "colour" in run file`},
		{"unknown nested key flow", replaceLine(base, 3, "  queries: {path: q.npy, foo: 1}"), 3, `unknown field "foo" in dataset.queries`},
		{"unknown nested key block", replaceLine(base, 3, "  queries:\n    path: q.npy\n\n    foo: 1"), 6, `unknown field "foo" in dataset.queries`},
		{"unknown dataset key", replaceLine(base, 5, "  qrels: {path: qrels.tsv}\n  labelz: x"), 6, `unknown field "labelz" in dataset`},
		{"unknown qrels key", replaceLine(base, 5, "  qrels: {path: qrels.tsv, fmt: tsv}"), 5, `unknown field "fmt" in dataset.qrels`},
		{"unknown labels key", replaceLine(base, 5, "  labels: {queries: a.txt, gallery: b.txt, loo: true}"), 5, `unknown field "loo" in dataset.labels`},
		{"unknown embedding key", base + "embedding: {batch: 3}\n", 8, `unknown field "batch" in embedding`},
		{"unknown outputs key", base + "outputs:\n  html: x\n", 9, `unknown field "html" in outputs`},
		{"unknown retrieval key", base + "retrieval:\n  k: [1]\n", 9, `unknown field "k" in retrieval (RetrievalConfig has no field "k")`},
		{"unknown memory key", base + "memory: {budget: 3}\n", 8, `MemoryConfig has no field "budget"`},
		{"unknown compression key", base + "compression:\n  - method: pca\n    n_components: 2\n    k: 3\n", 11, `unknown field "k" in compression[0] (CompressionConfig has no field "k")`},
		{"empty file", "", 1, "run file is empty"},
		{"comment only", "# nothing\n", 1, "run file is empty"},
		{"not a mapping", "- 1\n", 1, "run file must be a mapping; got a list"},
		{"scalar document", "hello\n", 1, "run file must be a mapping"},
		{"syntax error", base + "outputs: {json: [\n", 8, "invalid YAML"},
		{"tab indentation", base + "outputs:\n\tjson: r.json\n", 9, "invalid YAML"},
		{"two documents", base + "---\nversion: 1\n", 8, "single YAML document"},
		{"duplicate key", base + "version: 1\n", 8, `duplicate field "version" in run file (first at line 1)`},
		{"non-string key", replaceLine(base, 3, "  queries: {path: q.npy, 1: x}"), 3, "keys must be strings; got number 1"},
		{"unknown anchor", base + "outputs: *nope\n", 8, "invalid YAML: unknown anchor 'nope' referenced"},
		{"unknown anchor later", base + "outputs: {json: *no, csv: *nope}\n", 8, "invalid YAML: unknown anchor 'no' referenced"},
		{"alias cycle", replaceLine(base, 5, "  qrels: {path: qrels.tsv}\n  metadata: &m {self: *m}"), 6, "alias refers to its own ancestor"},
		{"merge cycle", replaceLine(base, 5, "  qrels: {path: qrels.tsv}\n  metadata: &m {<<: *m}"), 6, "alias refers to its own ancestor"},
		{"custom tag", replaceLine(base, 5, "  qrels: {path: qrels.tsv}\n  metadata: {x: !secret abc}"), 6, "unsupported YAML tag !secret"},
		{"binary scalar", replaceLine(base, 5, "  qrels: {path: qrels.tsv}\n  metadata: {x: !!binary aGk=}"), 6, "unsupported YAML tag !!binary"},
		{"non-finite metadata", replaceLine(base, 5, "  qrels: {path: qrels.tsv}\n  metadata: {x: .nan}"), 6, "numbers must be finite"},
		{"huge integer", base + "retrieval: {worst_queries: 18446744073709551615}\n", 8, "out of range"},

		// Types.
		{"version as string", replaceLine(base, 1, `version: "1"`), 1, `version must be an integer; got "1"`},
		{"version as float", replaceLine(base, 1, `version: 1.5`), 1, "version must be an integer; got number 1.5"},
		{"dataset as list", "version: 1\ndataset: [q.npy]\nextractors: [{name: a, type: precomputed}]\n", 2, "dataset must be a mapping; got a list"},
		{"revision as number", replaceLine(base, 2, "dataset:\n  id: set\n  revision: 2026"), 4, "dataset.revision must be a string; got number 2026 (quote it)"},
		{"modality as bool", replaceLine(base, 3, "  queries: {path: q.npy, modality: true}"), 3, "dataset.queries.modality must be a string; got bool true"},
		{"leave_one_out as string", replaceLine(base, 5, `  labels: {queries: a.txt, gallery: b.txt, leave_one_out: "yes"}`), 5, `dataset.labels.leave_one_out must be a bool; got "yes"`},
		{"metadata as list", replaceLine(base, 5, "  qrels: {path: qrels.tsv}\n  metadata: [1]"), 6, "dataset.metadata must be a mapping; got a list"},
		{"batch_size as string", base + "embedding: {batch_size: big}\n", 8, `EmbeddingConfig.batch_size must be an integer; got "big"`},
		{"streaming as number", base + "embedding: {streaming_enabled: 1}\n", 8, "EmbeddingConfig.streaming_enabled must be a bool; got number 1"},
		{"extractors as mapping", replaceLine(base, 7, "  a: 1"), 6, "extractors must be a list; got a mapping"},
		{"extractor as scalar", replaceLine(base, 7, "  - a"), 7, `extractors[0] must be a mapping; got "a"`},
		{"compression as mapping", base + "compression: {method: none}\n", 8, "compression must be a list; got a mapping"},
		{"engine as list", base + "engine: [local]\n", 8, "engine must be a string; got a list"},
		{"run_depth as string", base + "outputs: {run: r.trec, run_depth: all}\n", 8, `outputs.run_depth must be an integer; got "all"`},
		{"retrieval type via ConfigFromMap", base + "retrieval:\n  bidirectional: \"no\"\n", 8, "RetrievalConfig.bidirectional must be a bool"},

		// Values.
		{"version 2", replaceLine(base, 1, "version: 2"), 1, "unsupported run file version 2"},
		{"version missing", replaceLine(base, 1, "# no version"), 2, "version is required"},
		{"dataset missing", "version: 1\nextractors: [{name: a, type: precomputed}]\n", 1, "dataset is required"},
		{"both qrels and labels", replaceLine(base, 5, "  qrels: {path: qrels.tsv}\n  labels: {queries: a.txt, gallery: b.txt}"), 6, "exactly one relevance source is required"},
		{"neither qrels nor labels", replaceLine(base, 5, "  # none"), 2, "exactly one relevance source is required"},
		{"id without revision", replaceLine(base, 2, "dataset:\n  id: set"), 2, "dataset.id and dataset.revision must be provided together"},
		{"blank id", replaceLine(base, 2, "dataset:\n  id: ' '\n  revision: r"), 3, "dataset.id must not be blank"},
		{"bad modality", replaceLine(base, 3, "  queries: {path: q.txt, modality: Text}"), 3, "dataset.queries.modality must match [a-z][a-z0-9_]*"},
		{"queries missing", replaceLine(base, 3, "  # none"), 2, "dataset.queries is required"},
		{"gallery missing", replaceLine(base, 4, "  # none"), 2, "dataset.gallery is required"},
		{"endpoint without path or ids", replaceLine(base, 4, "  gallery: {modality: embeddings}"), 4, "dataset.gallery needs path (an embedding file) or ids"},
		{"text endpoint without path", replaceLine(base, 4, "  gallery: {modality: text, ids: g.txt}"), 4, "dataset.gallery.path is required for modality text"},
		{"tensor on text", replaceLine(base, 4, "  gallery: {modality: text, path: g.txt, tensor: t}"), 4, "dataset.gallery.tensor is only valid for modality embeddings"},
		{"ids and id_column", replaceLine(base, 4, "  gallery:\n    path: g.parquet\n    ids: g.txt\n    id_column: id"), 7, "ids and id_column are mutually exclusive"},
		{"empty path", replaceLine(base, 3, `  queries: {path: ""}`), 3, "dataset.queries.path must not be blank"},
		{"bad qrels format", replaceLine(base, 5, "  qrels: {path: q.txt, format: xml}"), 5, "dataset.qrels.format must be one of trec, tsv, csv, jsonl, npy, npz"},
		{"qrels without path", replaceLine(base, 5, "  qrels: {format: tsv}"), 5, "dataset.qrels.path is required"},
		{"labels without gallery", replaceLine(base, 5, "  labels: {queries: a.txt}"), 5, "dataset.labels.gallery is required"},
		{"leave_one_out other labels", replaceLine(base, 5, "  labels:\n    queries: a.txt\n    gallery: b.txt\n    leave_one_out: true"), 7, "leave_one_out requires the query and gallery inputs to be the same file"},
		{"leave_one_out other gallery", replaceLine(base, 5, "  labels: {queries: a.txt, leave_one_out: true}"), 4, "leave_one_out requires the query and gallery inputs to be the same file"},
		{"batch_size zero", base + "embedding:\n  batch_size: 0\n", 9, "EmbeddingConfig.batch_size must be >= 1; got 0"},
		{"engine unknown", base + "engine: spark\n", 8, `engine must be local or beam; got "spark"`},
		{"run_depth without run", base + "outputs: {json: r.json, run_depth: 5}\n", 8, "outputs.run_depth requires outputs.run"},
		{"negative run_depth", base + "outputs: {run: r.trec, run_depth: -1}\n", 8, "outputs.run_depth must be >= 0"},
		{"csv to stdout", base + "outputs:\n  json: r.json\n  csv: '-'\n", 10, `outputs.csv cannot be "-"`},
		{"same output twice", base + "outputs:\n  json: r\n  markdown: ./r\n", 10, "outputs.json and outputs.markdown name the same file"},

		// Config sections: errors of the shared constructors carry the section's line.
		{"retrieval empty ks", base + "retrieval:\n  similarity: dot\n  ks: []\n", 8, "RetrievalConfig.ks must not be empty"},
		{"retrieval bad primary", base + "retrieval: {ks: [1, 5], primary_metric: ndcg@10}\n", 8, `retrieval.primary_metric must be one of mrr, map, precision@1, recall@1, hit_rate@1, ndcg@1, precision@5, recall@5, hit_rate@5, ndcg@5; got "ndcg@10" (the cut-off 10 is not in retrieval.ks)`},
		{"retrieval as list", base + "retrieval: [1]\n", 8, "retrieval must be a mapping"},
		{"memory bad fraction", base + "memory:\n  max_fraction: 2\n", 8, "MemoryConfig.max_fraction must be in (0, 1]"},
		{"memory bad type", base + "memory: {allow_disk_spill: maybe}\n", 8, "MemoryConfig.allow_disk_spill must be a bool"},
		{"compression missing n_components", base + "compression:\n  - {method: none}\n\n  - method: pca\n    whiten: true\n", 11, "CompressionConfig.n_components is required for method pca"},
		{"compression not valid for method", base + "compression: [{method: quantize, precision: int8, n_components: 3}]\n", 8, "CompressionConfig.n_components is not valid for method quantize"},
		{"compression empty", base + "compression: []\n", 8, "compression must not be empty"},
		{"compression repeated", base + "compression:\n- {method: pca, n_components: 4}\n- {method: pca, n_components: 4, enabled: true}\n", 10, "compression[1] repeats compression[0]"},

		// Extractors.
		{"extractors missing", "version: 1\ndataset:\n  queries: {path: q.npy}\n  gallery: {path: g.npy}\n  qrels: {path: q.tsv}\n", 1, "extractors is required"},
		{"extractors empty", replaceLine(replaceLine(base, 7, ""), 6, "extractors: []"), 6, "extractors must not be empty"},
		{"extractor without name", replaceLine(base, 7, "  - {name: a, type: precomputed}\n  - type: precomputed\n    queries: q.npy"), 8, "extractors[1]: name is required"},
		{"extractor blank name", replaceLine(base, 7, "  - {name: '  ', type: precomputed}"), 7, "extractors[0].name must not be blank"},
		{"extractor name not string", replaceLine(base, 7, "  - {name: 7, type: precomputed}"), 7, "extractors[0].name must be a string; got number 7"},
		{"extractor without type", replaceLine(base, 7, "  - {name: a}"), 7, "extractor a: type is required"},
		{"duplicate names", replaceLine(base, 7, "  - {name: a, type: precomputed}\n  - {name: b, type: precomputed}\n  - {name: a, type: precomputed}"), 9, `duplicate extractor name "a" (first at line 7)`},
		{"unknown type", replaceLine(base, 7, "  - name: a\n    type: clip"), 8, `extractor a: unknown extractor type "clip"`},
		{"one branch only", replaceLine(base, 7, "  - {name: c, type: onnx_dual_encoder, model_dir: m, query_branch: text_branch}"), 7, "query_branch and gallery_branch must be provided together"},
		{"gallery branch only", replaceLine(base, 7, "  - name: c\n    type: onnx_dual_encoder\n    model_dir: m\n    gallery_branch: image_branch"), 7, "query_branch and gallery_branch must be provided together"},
		{"dual encoder without branches", replaceLine(base, 7, "  - {name: c, type: onnx_dual_encoder, model_dir: m}"), 7, "Extractor c requires query_branch and gallery_branch (branches: image_branch, text_branch)"},
		{"unknown branch", replaceLine(base, 7, "  - name: c\n    type: onnx_dual_encoder\n    model_dir: m\n    query_branch: text\n    gallery_branch: image_branch"), 10, `Extractor c has no branch "text"`},
		{"branches on hosted", replaceLine(base, 7, "  - name: e\n    type: openai\n    base_url: http://h\n    model: m\n    query_branch: q\n    gallery_branch: g"), 11, "Extractor e does not support branches"},
		{"option of another type", replaceLine(base, 7, "  - name: e\n    type: openai\n    base_url: http://h\n    model: m\n    model_dir: x"), 11, `unknown field "model_dir" in extractor e (type openai)`},
		{"precomputed unknown option", replaceLine(base, 7, "  - {name: a, type: precomputed, query: q.npy}"), 7, `unknown field "query" in extractor a (type precomputed)`},
		{"hosted without base_url", replaceLine(base, 7, "  - {name: e, type: ollama, model: m}"), 7, "extractor e: option base_url is required for type ollama"},
		{"hosted without model", replaceLine(base, 7, "  - {name: e, type: openai, base_url: 'http://h'}"), 7, "extractor e: option model is required for type openai"},
		{"hosted bad url", replaceLine(base, 7, "  - name: e\n    type: tei\n    base_url: localhost:8080"), 9, "extractor e: option base_url must be an http or https URL"},
		{"hosted bad dimensions", replaceLine(base, 7, "  - name: e\n    type: openai\n    base_url: http://h\n    model: m\n    dimensions: 0"), 11, "extractor e: option dimensions must be >= 1; got 0"},
		{"hosted bad timeout", replaceLine(base, 7, "  - {name: e, type: tei, base_url: 'http://h', request_timeout: soon}"), 7, "extractor e: option request_timeout must be a number of seconds"},
		{"hosted zero backoff", replaceLine(base, 7, "  - {name: e, type: tei, base_url: 'http://h', max_backoff: 0}"), 7, "extractor e: option max_backoff must be positive"},
		{"headers not strings", replaceLine(base, 7, "  - {name: e, type: tei, base_url: 'http://h', headers: {X-N: 1}}"), 7, `extractor e: option headers["X-N"] must be a string`},
		{"command without command", replaceLine(base, 7, "  - {name: x, type: command, modality: text}"), 7, "extractor x: option command is required for type command"},
		{"command argv not strings", replaceLine(base, 7, "  - name: x\n    type: command\n    modality: text\n    command: [run, 3]"), 10, "extractor x: option command[1] must be a string"},
		{"command argv scalar", replaceLine(base, 7, "  - {name: x, type: command, modality: text, command: 'run.sh --x'}"), 7, "extractor x: option command must be a non-empty list of strings"},
		{"command without modality", replaceLine(base, 7, "  - {name: x, type: command, command: [run]}"), 7, "extractor x: option modality is required for type command"},
		{"command with branches", replaceLine(base, 7, "  - {name: x, type: command, command: [run], branches: {q: text, g: image}}"), 7, "Extractor x requires query_branch and gallery_branch (branches: g, q)"},
		{"command bad branch modality", replaceLine(base, 7, "  - {name: x, type: command, command: [run], branches: {q: Text}}"), 7, `option branches["q"] must be a modality`},
		{"onnx bad padding", replaceLine(base, 7, "  - {name: o, type: onnx_text, model_dir: m, padding: right}"), 7, "extractor o: option padding must be one of max_length, longest"},
		{"onnx without model_dir", replaceLine(base, 7, "  - {name: o, type: onnx_image}"), 7, "extractor o: option model_dir is required for type onnx_image"},
		{"onnx_image max_length", replaceLine(base, 7, "  - {name: o, type: onnx_image, model_dir: m, max_length: 3}"), 7, `unknown field "max_length" in extractor o (type onnx_image)`},
		{"cache not bool", replaceLine(base, 7, "  - {name: a, type: precomputed, cache: 'no'}"), 7, `extractor a: cache must be a bool; got "no"`},
		{"precomputed one file", replaceLine(base, 7, "  - {name: a, type: precomputed, queries: q.npy}"), 7, "extractor a: queries and gallery must be provided together"},
		{"precomputed tensor without file", replaceLine(base, 7, "  - name: a\n    type: precomputed\n    gallery_tensor: t"), 9, "extractor a: gallery_tensor requires gallery"},
		{"precomputed passthrough on text", replaceLine(base, 3, "  queries: {modality: text, path: q.txt}"), 7, "type precomputed needs queries and gallery files unless dataset.queries is an embedding file"},
		{"precomputed passthrough on ids", replaceLine(base, 4, "  gallery: {ids: g.txt}"), 7, "unless dataset.gallery is an embedding file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("conf/run.yaml", []byte(c.text))
			if err == nil {
				t.Fatalf("no error for\n%s", c.text)
			}
			prefix := "conf/run.yaml: "
			if c.line > 0 {
				prefix = fmt.Sprintf("conf/run.yaml:%d: ", c.line)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, c.frag) {
				t.Fatalf("error %q\nwant prefix %q and fragment %q", msg, prefix, c.frag)
			}
		})
	}
}

// The "unknown field" fragment of SPEC §6.5 appears for every section.
func TestUnknownFieldEverywhere(t *testing.T) {
	sections := []string{
		"retrieval: {x: 1}", "memory: {x: 1}", "embedding: {x: 1}", "outputs: {x: 1}",
		"compression: [{x: 1}]",
	}
	for _, s := range sections {
		_, err := Parse("run.yaml", []byte(base+s+"\n"))
		if err == nil || !strings.Contains(err.Error(), `unknown field "x"`) || !strings.HasPrefix(err.Error(), "run.yaml:8: ") {
			t.Errorf("%s: err = %v", s, err)
		}
	}
}

func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nextractors: [{name: a, type: precomputed}]\ndataset:\n  queries: {path: q.npy}\n  gallery: {path: g.npy}\n  qrels: {path: qrels.tsv}\n  metadata:\n    l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "    l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	_, err := Parse("run.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "YAML nodes") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	good := map[any]string{int64(2): "2s", 0.25: "250ms", "1m30s": "1m30s"}
	for in, want := range good {
		d, err := ParseDuration(in)
		if err != nil || d.String() != want {
			t.Errorf("ParseDuration(%v) = %v, %v; want %s", in, d, err, want)
		}
	}
	for _, in := range []any{int64(0), -1.0, "-1s", "soon", 1e300, true, nil} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%v) accepted", in)
		}
	}
}
