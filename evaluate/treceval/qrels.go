package treceval

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/formats/qrels"
	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
)

// Qrels is relevance judgements prepared for scoring runs. Build it once with
// NewQrels or ReadQrels and evaluate any number of runs against it.
//
// Evaluated queries are the qrels queries with at least one positive grade,
// in the order in which each query ID first appears in the qrels. That is
// the query order of the qrels `vertebrae retrieval run --write-qrels`
// writes, so the means are summed in the same order as the run command's.
type Qrels struct {
	path string

	// Every query ID of the qrels → position in allIDs.
	index  map[string]int32
	allIDs []string
	evalOf []int32 // per qrels query: evaluated index, or -1 without a positive

	ids []string // evaluated query IDs, in first-appearance order
	// The positives of evaluated query e are posDoc/posGrade[posStart[e]:
	// posStart[e+1]], sorted by document ID for binary search.
	posStart []int
	posDoc   []string
	posGrade []float64

	judgedDocs  int    // distinct document IDs over every record
	identityKey string // content hash of the evaluated relevance
}

// ReadQrels reads a text qrels file (trec, tsv, csv or jsonl; "" picks the
// format from the extension, SPEC §6.4.3) and prepares it with NewQrels.
func ReadQrels(path string, f qrels.Format) (*Qrels, error) {
	return ReadQrelsContext(context.Background(), path, f)
}

// ReadQrelsContext is ReadQrels that stops with ctx's error once ctx is
// done: a qrels file of tens of millions of lines takes a minute to read
// and prepare.
func ReadQrelsContext(ctx context.Context, path string, f qrels.Format) (*Qrels, error) {
	recs, err := qrels.ReadRecordsContext(ctx, path, f)
	if err != nil {
		return nil, err
	}
	return NewQrelsContext(ctx, path, recs)
}

// checkEvery is how many records (or identity entries) NewQrelsContext
// handles between context checks.
const checkEvery = 4096

// NewQrels prepares records read from the qrels file at path (path names the
// file in messages). A repeated (query, document) pair fails, whatever its
// grades, with `Duplicate query/gallery relevance records are not allowed`.
// Records with grade 0 are judged non-relevant: they make their query known
// (a qrels query without a positive is ignored with a warning) but are
// otherwise never used. Grades are assumed finite and non-negative, as the
// qrels readers guarantee; any other grade fails.
func NewQrels(path string, recs []qrels.Record) (*Qrels, error) {
	return NewQrelsContext(context.Background(), path, recs)
}

// NewQrelsContext is NewQrels that stops with ctx's error once ctx is
// done.
func NewQrelsContext(ctx context.Context, path string, recs []qrels.Record) (*Qrels, error) {
	q := &Qrels{path: path, index: make(map[string]int32)}
	type pair struct {
		q   int32
		doc string
	}
	firstLine := make(map[pair]int, len(recs))
	docs := make(map[string]struct{})
	// Positives per qrels query, collected as record indices.
	var perQuery [][]int
	for i, r := range recs {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if !(r.Grade >= 0) || math.IsInf(r.Grade, 1) { // also catches NaN
			return nil, formats.LineErrorf(path, r.Line, "Relevance grades must be finite and non-negative; got %v for query %s, gallery %s",
				r.Grade, msgfmt.Quote(r.QueryID), msgfmt.Quote(r.GalleryID))
		}
		qi, ok := q.index[r.QueryID]
		if !ok {
			qi = int32(len(q.allIDs))
			q.index[r.QueryID] = qi
			q.allIDs = append(q.allIDs, r.QueryID)
			perQuery = append(perQuery, nil)
		}
		key := pair{qi, r.GalleryID}
		if first, dup := firstLine[key]; dup {
			return nil, formats.LineErrorf(path, r.Line, "Duplicate query/gallery relevance records are not allowed: (%s, %s) first given at %s:%d",
				msgfmt.Quote(r.QueryID), msgfmt.Quote(r.GalleryID), path, first)
		}
		firstLine[key] = r.Line
		docs[r.GalleryID] = struct{}{}
		if r.Grade > 0 {
			perQuery[qi] = append(perQuery[qi], i)
		}
	}
	q.judgedDocs = len(docs)
	q.evalOf = make([]int32, len(q.allIDs))
	q.posStart = []int{0}
	for qi, ps := range perQuery {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(ps) == 0 {
			q.evalOf[qi] = -1
			continue
		}
		q.evalOf[qi] = int32(len(q.ids))
		q.ids = append(q.ids, q.allIDs[qi])
		sort.Slice(ps, func(a, b int) bool { return recs[ps[a]].GalleryID < recs[ps[b]].GalleryID })
		for _, i := range ps {
			q.posDoc = append(q.posDoc, recs[i].GalleryID)
			q.posGrade = append(q.posGrade, recs[i].Grade+0) // -0 → +0
		}
		q.posStart = append(q.posStart, len(q.posDoc))
	}
	// The identity covers exactly what scoring uses: evaluated queries in
	// order and their positives (ID-sorted within a query), the triples
	// [e, doc, grade] written as they are hashed rather than built as
	// values (tens of millions of them).
	evalOfPos := make([]int32, len(q.posDoc))
	for e := range q.ids {
		for j := q.posStart[e]; j < q.posStart[e+1]; j++ {
			evalOfPos[j] = int32(e)
		}
	}
	rel := canonjson.Array{N: len(q.posDoc), Elem: func(j int, w canonjson.Writer) error {
		if j%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		w.WriteByte('[')
		w.WriteString(canonjson.FormatNumber(float64(evalOfPos[j])))
		w.WriteByte(',')
		if err := canonjson.EncodeString(w, q.posDoc[j]); err != nil {
			return err
		}
		w.WriteByte(',')
		g := q.posGrade[j]
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return fmt.Errorf("canonjson: non-finite number %v", g)
		}
		w.WriteString(canonjson.FormatNumber(g))
		return w.WriteByte(']')
	}}
	key, err := canonjson.Hash(map[string]any{
		"identity_schema": 2,
		"kind":            "trec_qrels",
		"query_ids":       canonjson.Strings(q.ids),
		"relevance":       rel,
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("qrels identity: %w", err)
	}
	q.identityKey = key
	return q, nil
}

// NumQueries is the number of evaluated queries (qrels queries with at
// least one positive grade).
func (q *Qrels) NumQueries() int { return len(q.ids) }

// NumPositives is the number of positive (query, document) pairs of the
// evaluated queries.
func (q *Qrels) NumPositives() int { return len(q.posDoc) }

// QueryIDs returns the evaluated query IDs in evaluation order.
func (q *Qrels) QueryIDs() []string { return append([]string(nil), q.ids...) }

// positives returns evaluated query e's positive range [lo, hi).
func (q *Qrels) positives(e int32) (lo, hi int) { return q.posStart[e], q.posStart[e+1] }

// findPositive returns the index in posDoc of doc within [lo, hi), or -1.
func (q *Qrels) findPositive(lo, hi int, doc []byte) int {
	end := hi
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if q.posDoc[m] < string(doc) { // a comparison operand: no allocation
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < end && q.posDoc[lo] == string(doc) {
		return lo
	}
	return -1
}
