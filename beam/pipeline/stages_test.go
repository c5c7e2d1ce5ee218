package pipeline

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Score tasks: query blocks of the block size (the last one shorter) ×
// every gallery shard, the reverse direction over the gallery rows.
func TestTasksOf(t *testing.T) {
	pair := Pair{NQuery: 5, NGal: 3}
	for _, c := range []struct {
		name          string
		bidirectional bool
		block, total  int
		want          []scoreTask
	}{
		{"one block", false, 0, 1, []scoreTask{{"x", forward, 0, 5, 0}}},
		{"block larger than queries", false, 9, 2, []scoreTask{{"x", forward, 0, 5, 0}, {"x", forward, 0, 5, 1}}},
		{"blocks of 2", false, 2, 1, []scoreTask{{"x", forward, 0, 2, 0}, {"x", forward, 2, 4, 0}, {"x", forward, 4, 5, 0}}},
		{"bidirectional", true, 2, 2, []scoreTask{
			{"x", forward, 0, 2, 0}, {"x", forward, 0, 2, 1}, {"x", forward, 2, 4, 0}, {"x", forward, 2, 4, 1},
			{"x", forward, 4, 5, 0}, {"x", forward, 4, 5, 1},
			{"x", reverse, 0, 2, 0}, {"x", reverse, 0, 2, 1}, {"x", reverse, 2, 3, 0}, {"x", reverse, 2, 3, 1}}},
	} {
		if got := tasksOf("x", pair, c.bidirectional, c.block, c.total); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A query block missing one of its gallery shards fails the merge stage
// instead of producing numbers; a complete block merges.
func TestMergeBlockNeedsEveryShard(t *testing.T) {
	q, _ := matrix.NewDense64(2, 2, []float64{1, 0, 0, 1})
	g, _ := matrix.NewDense64(3, 2, []float64{1, 0, 0, 1, 1, 1})
	p := rank.Problem{Queries: q, Gallery: g, QueryIDs: []string{"a", "b"}, GalleryIDs: []string{"x", "y", "z"},
		Relevance: [][]retrieval.Positive{{{Index: 0, Grade: 1}}, {{Index: 1, Grade: 1}}}}
	cfg := retrieval.DefaultConfig()
	var parts [][]byte
	for i := 0; i < 2; i++ {
		part, err := evaluate.DirectionShard(context.Background(), p, cfg, 1, -1, rank.Shard{Index: i, Total: 2, Layout: rank.Contiguous})
		if err != nil {
			t.Fatal(err)
		}
		b, err := part.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, b)
	}
	iter := func(bs [][]byte) func(*[]byte) bool {
		return func(dst *[]byte) bool {
			if len(bs) == 0 {
				return false
			}
			*dst, bs = bs[0], bs[1:]
			return true
		}
	}
	var emitted []string
	emit := func(k string, v []byte) { emitted = append(emitted, k+":"+string(v[:1])) }
	err := (&mergeBlockFn{}).ProcessElement(context.Background(), "x\x00forward\x000", iter(parts[1:]), emit)
	if err == nil || !strings.Contains(err.Error(), "some are missing") {
		t.Errorf("one shard of two: %v", err)
	}
	// Shards in any order merge to one forward block.
	if err := (&mergeBlockFn{}).ProcessElement(context.Background(), "x\x00forward\x000", iter([][]byte{parts[1], parts[0]}), emit); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(emitted, []string{"x:F"}) {
		t.Errorf("emitted %v", emitted)
	}
}

// The barrier between two shard stages passes an extractor's group only
// when it holds every shard 0..N-1 once.
func TestCollectShards(t *testing.T) {
	iter := func(is ...int) func(*int) bool {
		return func(dst *int) bool {
			if len(is) == 0 {
				return false
			}
			*dst, is = is[0], is[1:]
			return true
		}
	}
	if err := collectShards("x", "the positives stage", iter(2, 0, 1), 3); err != nil {
		t.Error(err)
	}
	for _, bad := range [][]int{{0, 1}, {0, 1, 1}, {0, 1, 2, 2}, {1, 2, 3}, {}} {
		if err := collectShards("x", "the positives stage", iter(bad...), 3); err == nil || !strings.Contains(err.Error(), "want 0..2") {
			t.Errorf("shards %v: %v", bad, err)
		}
	}
}
