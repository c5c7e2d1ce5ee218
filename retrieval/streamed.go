package retrieval

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"unicode/utf8"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
)

// RelevanceHasher computes a relevance fingerprint (SPEC §10.3) whose
// gallery side streams past one row at a time, as a gallery shard reads a
// relevance artifact: the gallery IDs, then (label form) the gallery labels,
// then the query side, which is small and given whole. It writes exactly the
// canonical text RelevanceFingerprintOf and LabelRelevanceFingerprintOf
// hash (their payload keys in canonical order), without holding any
// gallery-sized list.
type RelevanceHasher struct {
	h        hash.Hash
	w        *bufio.Writer
	ids      int
	labels   int
	inLabels bool
	err      error
}

// NewRelevanceHasher starts the fingerprint of a relevance of the given
// dataset identity key; the gallery IDs follow.
func NewRelevanceHasher(datasetKey string) *RelevanceHasher {
	r := &RelevanceHasher{h: sha256.New()}
	r.w = bufio.NewWriterSize(r.h, 64<<10)
	r.str(`{"dataset_identity_key":`)
	r.enc(datasetKey)
	r.str(`,"gallery_ids":[`)
	return r
}

func (r *RelevanceHasher) str(s string) {
	if r.err == nil {
		_, r.err = r.w.WriteString(s)
	}
}

func (r *RelevanceHasher) enc(s string) {
	if r.err == nil {
		r.err = canonjson.EncodeString(r.w, s)
	}
}

func (r *RelevanceHasher) encBytes(b []byte) {
	if r.err == nil {
		r.err = canonjson.EncodeStringBytes(r.w, b)
	}
}

func (r *RelevanceHasher) value(v any) {
	if r.err == nil {
		r.err = r.w.Flush()
	}
	if r.err == nil {
		r.err = canonjson.Encode(r.w, v)
	}
}

// GalleryID adds the next gallery ID (row order); id is not retained.
func (r *RelevanceHasher) GalleryID(id []byte) {
	if r.inLabels {
		r.err = fmt.Errorf("relevance fingerprint: gallery ID after gallery labels")
		return
	}
	if r.ids > 0 {
		r.str(",")
	}
	r.ids++
	r.encBytes(id)
}

// GalleryIDsCanonical adds the next n gallery IDs given as their canonical
// text (see canonjson.StringsHasher.AddCanonical): GalleryID of each, in
// one write.
func (r *RelevanceHasher) GalleryIDsCanonical(text []byte, n int) {
	if r.inLabels {
		r.err = fmt.Errorf("relevance fingerprint: gallery ID after gallery labels")
		return
	}
	if n == 0 || r.err != nil {
		return
	}
	if r.ids > 0 {
		r.str(",")
	}
	r.ids += n
	_, r.err = r.w.Write(text)
}

// GalleryLabel adds the next gallery label (row order) of label-derived
// relevance; every gallery ID comes first. label is not retained.
func (r *RelevanceHasher) GalleryLabel(label []byte) {
	if !r.inLabels {
		r.inLabels = true
		r.str(`],"gallery_labels":[`)
	}
	if r.labels > 0 {
		r.str(",")
	}
	r.labels++
	r.encBytes(label)
}

// Pairs finishes the fingerprint of explicit relevance: triples are the
// sorted [query index, gallery index, grade] triples RelevanceFingerprintOf
// takes.
func (r *RelevanceHasher) Pairs(queryIDs []string, triples []any) (string, error) {
	if r.inLabels {
		return "", fmt.Errorf("relevance fingerprint: explicit relevance with gallery labels")
	}
	if triples == nil {
		triples = []any{}
	}
	r.str(`],"identity_schema":2,"kind":"retrieval_relevance","query_ids":`)
	r.value(canonjson.Strings(queryIDs))
	r.str(`,"relevance":`)
	r.value(triples)
	r.str(`}`)
	return r.sum()
}

// Labels finishes the fingerprint of label-derived relevance (every gallery
// label added) with the query IDs and labels in row order.
func (r *RelevanceHasher) Labels(queryIDs, queryLabels []string) (string, error) {
	if r.labels != r.ids {
		return "", fmt.Errorf("relevance fingerprint: %d gallery labels for %d gallery IDs", r.labels, r.ids)
	}
	if !r.inLabels { // no gallery rows: an empty label list
		r.inLabels = true
		r.str(`],"gallery_labels":[`)
	}
	r.str(`],"identity_schema":2,"kind":"retrieval_relevance_labels","query_ids":`)
	r.value(canonjson.Strings(queryIDs))
	r.str(`,"query_labels":`)
	r.value(canonjson.Strings(queryLabels))
	r.str(`}`)
	return r.sum()
}

func (r *RelevanceHasher) sum() (string, error) {
	if r.err == nil {
		r.err = r.w.Flush()
	}
	if r.err != nil {
		return "", r.err
	}
	return hex.EncodeToString(r.h.Sum(nil)), nil
}

// ClassesBuilder assigns class ids to labels as the gallery labels stream
// past (first appearance, gallery then query, as ClassesFromLabels does),
// holding one int32 per gallery row and each distinct label once.
type ClassesBuilder struct {
	ids     map[string]int32
	labels  []string
	gallery []int32
}

// NewClassesBuilder expects ng gallery labels (a capacity hint).
func NewClassesBuilder(ng int) *ClassesBuilder {
	return &ClassesBuilder{ids: map[string]int32{}, gallery: make([]int32, 0, ng)}
}

func (b *ClassesBuilder) id(l []byte) int32 {
	k, ok := b.ids[string(l)] // no allocation for a label seen before
	if !ok {
		s := string(l)
		k = int32(len(b.ids))
		b.ids[s] = k
		b.labels = append(b.labels, s)
	}
	return k
}

func checkLabel(side string, i int, l []byte) error {
	if len(l) == 0 {
		return invalid("%s labels must be non-empty UTF-8 strings; index %d is empty", side, i)
	}
	if !utf8.Valid(l) {
		return invalid("%s labels must be non-empty UTF-8 strings; index %d is not valid UTF-8", side, i)
	}
	return nil
}

// Gallery adds the next gallery row's label (not retained).
func (b *ClassesBuilder) Gallery(label []byte) error {
	if err := checkLabel("gallery", len(b.gallery), label); err != nil {
		return err
	}
	b.gallery = append(b.gallery, b.id(label))
	return nil
}

// Classes adds the query labels and returns the classes ClassesFromLabels
// builds from the same labels.
func (b *ClassesBuilder) Classes(queryLabels []string) (*Classes, error) {
	qc := make([]int32, len(queryLabels))
	for i, l := range queryLabels {
		if err := checkLabel("query", i, []byte(l)); err != nil {
			return nil, err
		}
		qc[i] = b.id([]byte(l))
	}
	c := NewClasses(qc, b.gallery)
	c.labels = b.labels
	if c.labels == nil {
		c.labels = []string{}
	}
	return c, nil
}
