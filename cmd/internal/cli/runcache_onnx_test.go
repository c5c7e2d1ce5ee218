//go:build cgo

package cli

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The acceptance case: a run file with a precomputed and an ONNX extractor
// encodes on its first run and nothing on its second, which reports hit
// and the same numbers.
func TestRunSpecEndpointCacheONNX(t *testing.T) {
	requireONNXRuntime(t)
	calls, reset := countEncodes(t)
	dir := t.TempDir()
	testdata, err := filepath.Abs(filepath.Join("..", "..", "..", "extract", "onnx", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	var queries, images, qrels strings.Builder
	qrels.WriteString("query-id\tcorpus-id\tscore\n")
	for i, c := range []string{"red", "green", "blue", "yellow", "magenta"} {
		queries.WriteString(`{"_id": "t` + string(rune('0'+i)) + `", "text": "a photo of a ` + c + ` square"}` + "\n")
		images.WriteString(filepath.Join(testdata, "images", c+".png") + "\n")
		qrels.WriteString("t" + string(rune('0'+i)) + "\ti" + string(rune('0'+i)) + "\t1\n")
	}
	writeFile(t, dir, "captions.jsonl", queries.String())
	writeFile(t, dir, "images.txt", images.String())
	writeFile(t, dir, "image_ids.txt", "i0\ni1\ni2\ni3\ni4\n")
	writeFile(t, dir, "qrels.tsv", qrels.String())
	writeNPY(t, dir, "a_q.npy", [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {0, 1, 1}})
	writeNPY(t, dir, "a_g.npy", [][]float64{{1, 0.1, 0}, {0, 1, 0.2}, {0.3, 0, 1}, {1, 1, 1}, {0, 1, 0.9}})
	path := writeFile(t, dir, "run.yaml", `version: 1
dataset:
  queries: {modality: text, path: captions.jsonl}
  gallery: {modality: image, path: images.txt, ids: image_ids.txt}
  qrels: {path: qrels.tsv}
retrieval: {similarity: cosine, ks: [1, 5], primary_metric: ndcg@5}
embedding: {batch_size: 2}
store: cache
extractors:
  - {name: tiny-clip, type: onnx_dual_encoder, model_dir: `+filepath.Join(testdata, "tiny-clip")+`,
     query_branch: text_branch, gallery_branch: image_branch, intra_op_threads: 1}
  - {name: tables, type: precomputed, queries: a_q.npy, gallery: a_g.npy}
`)
	first := runJSON(t, "--spec", path)
	if got := cacheStatuses(t, first); !reflect.DeepEqual(got, map[string]any{"tiny-clip": "miss", "tables": "miss"}) {
		t.Errorf("first run: %v", got)
	}
	if calls("tiny-clip") == 0 || calls("tables") == 0 {
		t.Fatalf("first run encoded tiny-clip %d, tables %d times", calls("tiny-clip"), calls("tables"))
	}
	reset()
	second := runJSON(t, "--spec", path)
	if got := cacheStatuses(t, second); !reflect.DeepEqual(got, map[string]any{"tiny-clip": "hit", "tables": "hit"}) {
		t.Errorf("second run: %v", got)
	}
	if a, b := calls("tiny-clip"), calls("tables"); a != 0 || b != 0 {
		t.Errorf("second run encoded tiny-clip %d, tables %d times", a, b)
	}
	if !reflect.DeepEqual(first, second) {
		t.Errorf("hit and miss reports differ:\n%v\n%v", first, second)
	}
}
