package runspec

import (
	"errors"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/retrieval"
)

const prefixBase = `version: 1
dataset:
  queries: {modality: text, path: q.txt}
  gallery: {modality: text, path: g.txt}
  qrels: {path: qrels.tsv}
extractors:
`

// text_prefix on every text extractor type (SPEC §9.4).
func TestTextPrefixOption(t *testing.T) {
	for _, c := range []struct {
		name, entry string
		q, g        string
	}{
		{"openai e5", `  - {name: x, type: openai, base_url: "http://h/v1", model: e5, text_prefix: {query: "query: ", gallery: "passage: "}}`, "query: ", "passage: "},
		{"ollama nomic", `  - {name: x, type: ollama, base_url: "http://h", model: nomic, text_prefix: {query: "search_query: ", gallery: "search_document: "}}`, "search_query: ", "search_document: "},
		{"tei bge query only", `  - {name: x, type: tei, base_url: "http://h", text_prefix: {query: "Represent this sentence for searching relevant passages: "}}`, "Represent this sentence for searching relevant passages: ", ""},
		{"onnx_text", "  - name: x\n    type: onnx_text\n    model_dir: m\n    text_prefix:\n      query: 'query: '\n      gallery: 'passage: '", "query: ", "passage: "},
		{"onnx_dual_encoder", `  - {name: x, type: onnx_dual_encoder, model_dir: m, query_branch: text_branch, gallery_branch: text_branch, text_prefix: {query: "a photo of "}}`, "a photo of ", ""},
		{"command", `  - {name: x, type: command, command: [enc], modality: text, text_prefix: {gallery: "passage: "}}`, "", "passage: "},
		{"command branches", `  - {name: x, type: command, command: [enc], branches: {q: text, g: image}, query_branch: q, gallery_branch: q, text_prefix: {query: "q: "}}`, "q: ", ""},
		{"empty strings", `  - {name: x, type: openai, base_url: "http://h/v1", model: e5, text_prefix: {query: "", gallery: ""}}`, "", ""},
		{"absent", `  - {name: x, type: openai, base_url: "http://h/v1", model: e5}`, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse("/d/run.yaml", []byte(prefixBase+c.entry+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			q, g := s.Extractors[0].TextPrefix()
			if q != c.q || g != c.g {
				t.Errorf("TextPrefix() = %q, %q; want %q, %q", q, g, c.q, c.g)
			}
		})
	}
}

func TestTextPrefixOptionErrors(t *testing.T) {
	for _, c := range []struct {
		name, entry, frag string
	}{
		{"string", `  - {name: x, type: openai, base_url: "http://h/v1", model: e5, text_prefix: "query: "}`, `extractor x: option text_prefix must be a mapping {query: ..., gallery: ...}`},
		{"unknown key", `  - {name: x, type: openai, base_url: "http://h/v1", model: e5, text_prefix: {passage: "passage: "}}`, `extractor x: option text_prefix has no key "passage" (keys: query, gallery)`},
		{"empty mapping", `  - {name: x, type: openai, base_url: "http://h/v1", model: e5, text_prefix: {}}`, `option text_prefix must set query or gallery`},
		{"number", `  - {name: x, type: openai, base_url: "http://h/v1", model: e5, text_prefix: {query: 1}}`, `option text_prefix.query must be a string`},
		{"image extractor", `  - {name: x, type: onnx_image, model_dir: m, text_prefix: {query: "q: "}}`, `unknown field "text_prefix" in extractor x (type onnx_image)`},
		{"precomputed", `  - {name: x, type: precomputed, queries: q.npy, gallery: g.npy, text_prefix: {query: "q: "}}`, `unknown field "text_prefix"`},
		{"command image", `  - {name: x, type: command, command: [enc], modality: image, text_prefix: {query: "q: "}}`, `text_prefix applies to text inputs`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("/d/run.yaml", []byte(prefixBase+c.entry+"\n"))
			if err == nil || !strings.Contains(err.Error(), c.frag) || !strings.HasPrefix(err.Error(), "/d/run.yaml:7: ") {
				t.Errorf("got %v, want /d/run.yaml:7: …%s", err, c.frag)
			}
		})
	}
}

// A bad primary_metric names the run-file key at its own line and lists the
// choices; it stays a retrieval.ConfigError (exit 2).
func TestPrimaryMetricRunFile(t *testing.T) {
	base := prefixBase + "  - {name: x, type: openai, base_url: \"http://h/v1\", model: e5}\nretrieval:\n  ks: [1, 10]\n  similarity: dot\n"
	for _, m := range []string{"mrr", "map", "recall@10", "hit_rate@1", "precision@10", "ndcg@1"} {
		s, err := Parse("/d/run.yaml", []byte(base+"  primary_metric: "+m+"\n"))
		if err != nil || s.Retrieval.PrimaryMetric != m {
			t.Errorf("%s: %v", m, err)
		}
	}
	_, err := Parse("/d/run.yaml", []byte(base+"  primary_metric: recall@5\n"))
	want := `/d/run.yaml:11: retrieval.primary_metric must be one of mrr, map, precision@1, recall@1, hit_rate@1, ndcg@1, precision@10, recall@10, hit_rate@10, ndcg@10; got "recall@5" (the cut-off 5 is not in retrieval.ks)`
	var ce *retrieval.ConfigError
	if err == nil || err.Error() != want || !errors.As(err, &ce) {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
