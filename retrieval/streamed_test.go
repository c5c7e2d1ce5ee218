package retrieval

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// Streaming the gallery side gives the fingerprints RelevanceFingerprintOf
// and LabelRelevanceFingerprintOf compute from whole lists, and the
// classes builder the classes of ClassesFromLabels, on random lists with
// escaped and non-ASCII IDs and labels (and an empty gallery).
func TestRelevanceHasherIsFingerprint(t *testing.T) {
	t.Parallel()
	odd := []string{"a", `q"`, `\`, "\t\n", "é", "🚀", "\u0001", "\u2028"}
	r := rand.New(rand.NewPCG(3, 5))
	pick := func(prefix string) string { return prefix + odd[r.IntN(len(odd))] + fmt.Sprint(r.IntN(50)) }
	for trial := range 40 {
		nq, ng := 1+r.IntN(6), r.IntN(30)
		if trial == 0 {
			ng = 0
		}
		qids, gids, ql, gl := make([]string, nq), make([]string, ng), make([]string, nq), make([]string, ng)
		for i := range qids {
			qids[i], ql[i] = pick("q"), pick("l")
		}
		for i := range gids {
			gids[i], gl[i] = pick("g"), pick("l")
		}
		var triples []any
		for q := range nq {
			for g := range ng {
				if r.IntN(4) == 0 {
					triples = append(triples, []any{q, g, float64(1 + r.IntN(3))})
				}
			}
		}
		key := pick("dataset ")
		h := NewRelevanceHasher(key)
		for _, id := range gids {
			h.GalleryID([]byte(id))
		}
		got, err := h.Pairs(qids, triples)
		want, werr := RelevanceFingerprintOf(key, qids, gids, triples)
		if err != nil || werr != nil || got != want {
			t.Fatalf("trial %d pairs: %s %v, want %s %v", trial, got, err, want, werr)
		}

		b := NewClassesBuilder(ng)
		h = NewRelevanceHasher(key)
		for _, id := range gids {
			h.GalleryID([]byte(id))
		}
		for _, l := range gl {
			h.GalleryLabel([]byte(l))
			if err := b.Gallery([]byte(l)); err != nil {
				t.Fatal(err)
			}
		}
		c, err := b.Classes(ql)
		if err != nil {
			t.Fatal(err)
		}
		wc, err := ClassesFromLabels(ql, gl)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.Query, wc.Query) || !reflect.DeepEqual(c.Gallery, wc.Gallery) || !reflect.DeepEqual(c.labels, wc.labels) || !reflect.DeepEqual(c.members, wc.members) {
			t.Fatalf("trial %d: classes differ from ClassesFromLabels", trial)
		}
		got, err = h.Labels(qids, ql)
		want, werr = LabelRelevanceFingerprintOf(key, qids, gids, wc)
		if err != nil || werr != nil || got != want {
			t.Fatalf("trial %d labels: %s %v, want %s %v", trial, got, err, want, werr)
		}
	}
}

// Misuse is an error, not a wrong fingerprint: labels not matching the
// IDs, an ID after the labels, explicit pairs after labels; empty labels
// fail as in ClassesFromLabels.
func TestRelevanceHasherMisuse(t *testing.T) {
	t.Parallel()
	h := NewRelevanceHasher("d")
	h.GalleryID([]byte("a"))
	if _, err := h.Labels([]string{"q"}, []string{"x"}); err == nil {
		t.Error("one gallery ID and no gallery label accepted")
	}
	h = NewRelevanceHasher("d")
	h.GalleryID([]byte("a"))
	h.GalleryLabel([]byte("x"))
	h.GalleryID([]byte("b"))
	if _, err := h.Labels([]string{"q"}, []string{"x"}); err == nil {
		t.Error("gallery ID after labels accepted")
	}
	h = NewRelevanceHasher("d")
	h.GalleryID([]byte("a"))
	h.GalleryLabel([]byte("x"))
	if _, err := h.Pairs([]string{"q"}, nil); err == nil {
		t.Error("pairs after labels accepted")
	}
	if err := NewClassesBuilder(1).Gallery(nil); err == nil {
		t.Error("empty gallery label accepted")
	}
	if _, err := NewClassesBuilder(0).Classes([]string{"\xff"}); err == nil {
		t.Error("invalid UTF-8 query label accepted")
	}
}
