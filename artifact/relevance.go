package artifact

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// IDsSHA256 is H of an endpoint's ID list (SPEC §10.6 ids_sha256).
func IDsSHA256(ids []string) (string, error) {
	return canonjson.Hash(canonjson.Strings(ids)) // no []any of a large gallery's IDs
}

// RelevanceDocument builds the relevance artifact of ds (SPEC §10.6): the
// label form (relevance_labels, one label per row) for label-derived
// relevance, the relevance object of its pairs otherwise.
func RelevanceDocument(ds *retrieval.Dataset, key string) (*Relevance, error) {
	rf, err := ds.RelevanceFingerprint()
	if err != nil {
		return nil, err
	}
	doc := &Relevance{
		Common:   Common{ArtifactType: TypeRelevance, VertebraeVersion: version.Version, OutputKey: key},
		QueryIDs: ds.QueryIDs(), GalleryIDs: ds.GalleryIDs(), NQueries: ds.NumQueries(), NGallery: ds.NumGallery(),
		Exclusions:         [][2]int{},
		DatasetIdentityKey: ds.IdentityKey(), ProtocolFingerprint: rf, DatasetIdentity: ds.Summary().Identity,
		QueryModality: ds.Queries().Modality(), GalleryModality: ds.Gallery().Modality(),
	}
	for q, gs := range ds.RawExclusions() {
		for _, g := range gs {
			doc.Exclusions = append(doc.Exclusions, [2]int{q, g})
		}
	}
	if ql, gl, ok := ds.RelevanceLabels(); ok {
		doc.RelevanceLabels = &RelevanceLabels{Query: ql, Gallery: gl}
		return doc, nil
	}
	doc.Relevance = map[string]map[string]float64{}
	for q, ps := range ds.RawRelevance() {
		if len(ps) == 0 {
			continue
		}
		row := make(map[string]float64, len(ps))
		for _, p := range ps {
			row[strconv.Itoa(p.Index)] = p.Grade
		}
		doc.Relevance[strconv.Itoa(q)] = row
	}
	return doc, nil
}

// WriteRelevance commits ds's relevance artifact at key ("" = the
// canonical RelevanceKey) and returns the key. An explicit key is written
// with ExplicitKey: it never replaces another artifact.
func (s *Store) WriteRelevance(ctx context.Context, ds *retrieval.Dataset, key string) (string, *Relevance, error) {
	var opts []WriteOption
	if key == "" {
		key = RelevanceKey(ds.IdentityKey())
	} else {
		opts = append(opts, ExplicitKey())
	}
	doc, err := RelevanceDocument(ds, key)
	if err != nil {
		return "", nil, err
	}
	return key, doc, s.WriteJSON(ctx, key, doc, opts...)
}

// Protocol is a verified relevance artifact in the scorer's form: explicit
// relevance as Positives, label-derived relevance as Classes (implicit, as
// a local run holds it; Positives is then nil).
type Protocol struct {
	Key        string
	Doc        *Relevance
	Positives  [][]retrieval.Positive // per query, ascending gallery index
	Classes    *retrieval.Classes     // label-derived relevance, or nil
	Exclusions [][]int                // per query, ascending
	// view marks a ReadRelevanceView protocol: Doc.GalleryIDs holds only
	// the held rows' IDs (the others are empty) and galleryIDsSHA256 the
	// ids_sha256 of the full list, computed as it streamed past.
	view             bool
	galleryIDsSHA256 string
	// trusted marks a gallery shard's view (readShardRelevance): its
	// fingerprint and gallery ids_sha256 were not recomputed; finalize
	// checks them. name, when set, looks up a gallery ID the view does
	// not keep.
	trusted bool
	name    func(g int) string
}

// galleryIDsSum is ids_sha256 of the protocol's gallery IDs.
func (p *Protocol) galleryIDsSum() (string, error) {
	if p.galleryIDsSHA256 != "" {
		return p.galleryIDsSHA256, nil
	}
	return IDsSHA256(p.Doc.GalleryIDs)
}

// Problem is the scoring problem of the protocol's IDs, relevance and the
// given exclusions (one list per query), without matrices.
func (p *Protocol) Problem(exclusions [][]int) rank.Problem {
	return rank.Problem{QueryIDs: p.Doc.QueryIDs, GalleryIDs: p.Doc.GalleryIDs, GalleryName: p.name,
		Relevance: p.Positives, Classes: p.Classes, Exclusions: exclusions}
}

// ReadRelevance loads and verifies a relevance artifact: exactly one of
// relevance and relevance_labels, indices in range, grades finite and > 0,
// labels aligned with the IDs and non-empty, sorted unique exclusions, and
// the recomputed relevance fingerprint (`relevance fingerprint mismatch`).
func (s *Store) ReadRelevance(ctx context.Context, key string) (*Protocol, error) {
	doc := &Relevance{}
	if _, err := s.ReadJSON(ctx, key, doc); err != nil {
		return nil, err
	}
	if doc.ArtifactType != TypeRelevance {
		md, _, err := s.ReadMetadata(ctx, key)
		if err != nil {
			return nil, err
		}
		return nil, RelevanceArtifact.check(key, md)
	}
	return relevanceProtocol(key, doc)
}

// relevanceProtocol checks a decoded relevance document (artifact type
// checked) and builds its protocol.
func relevanceProtocol(key string, doc *Relevance) (*Protocol, error) {
	bad := func(format string, args ...any) error {
		return keyErr(key, ErrInvalidMetadata, "relevance artifact: "+fmt.Sprintf(format, args...))
	}
	nq, ng := len(doc.QueryIDs), len(doc.GalleryIDs)
	if nq != doc.NQueries || ng != doc.NGallery || nq == 0 || ng == 0 {
		return nil, bad("n_queries/n_gallery (%d, %d) do not match the ID lists (%d, %d)", doc.NQueries, doc.NGallery, nq, ng)
	}
	if (doc.Relevance == nil) == (doc.RelevanceLabels == nil) {
		return nil, bad("it must hold exactly one of relevance and relevance_labels")
	}
	p := &Protocol{Key: key, Doc: doc}
	var rf string
	var err error
	if doc.RelevanceLabels != nil {
		rf, err = p.readLabels(nq, ng, bad)
	} else {
		rf, err = p.readPairs(nq, ng, bad)
	}
	if err != nil {
		return nil, err
	}
	if rf != doc.ProtocolFingerprint {
		return nil, keyErr(key, ErrCheck, fmt.Sprintf("relevance fingerprint mismatch: recomputed %s, stored %s", rf, doc.ProtocolFingerprint))
	}
	if p.Exclusions, err = exclusionLists(key, doc.Exclusions, nq, ng); err != nil {
		return nil, err
	}
	return p, nil
}

// readLabels rebuilds label-derived relevance from relevance_labels and
// returns its recomputed fingerprint (the label form, SPEC §10.3).
func (p *Protocol) readLabels(nq, ng int, bad func(string, ...any) error) (string, error) {
	l := p.Doc.RelevanceLabels
	if len(l.Query) != nq || len(l.Gallery) != ng {
		return "", bad("relevance_labels has %d query and %d gallery labels for %d and %d IDs", len(l.Query), len(l.Gallery), nq, ng)
	}
	c, err := retrieval.ClassesFromLabels(l.Query, l.Gallery)
	if err != nil {
		return "", bad("relevance_labels: %v", err)
	}
	p.Classes = c
	rf, err := retrieval.LabelRelevanceFingerprintOf(p.Doc.DatasetIdentityKey, p.Doc.QueryIDs, p.Doc.GalleryIDs, c)
	if err != nil {
		return "", bad("%v", err)
	}
	return rf, nil
}

// readPairs reads explicit relevance and returns its recomputed
// fingerprint.
func (p *Protocol) readPairs(nq, ng int, bad func(string, ...any) error) (string, error) {
	triples, err := p.pairs(nq, ng, true, bad)
	if err != nil {
		return "", err
	}
	rf, err := retrieval.RelevanceFingerprintOf(p.Doc.DatasetIdentityKey, p.Doc.QueryIDs, p.Doc.GalleryIDs, triples)
	if err != nil {
		return "", bad("%v", err)
	}
	return rf, nil
}

// pairs sets Positives from the document's relevance object (checked) and,
// with triples set, returns the sorted [query, gallery, grade] triples its
// fingerprint hashes.
func (p *Protocol) pairs(nq, ng int, triples bool, bad func(string, ...any) error) ([]any, error) {
	doc := p.Doc
	p.Positives = make([][]retrieval.Positive, nq)
	index := func(s string, n int, what string) (int, error) {
		i, err := strconv.Atoi(s)
		if err != nil || i < 0 || i >= n || strconv.Itoa(i) != s {
			return 0, bad("%s index %q is not in [0, %d)", what, s, n)
		}
		return i, nil
	}
	for qs, row := range doc.Relevance {
		q, err := index(qs, nq, "query")
		if err != nil {
			return nil, err
		}
		for gs, grade := range row {
			g, err := index(gs, ng, "gallery")
			if err != nil {
				return nil, err
			}
			if math.IsNaN(grade) || math.IsInf(grade, 0) || grade <= 0 {
				return nil, bad("grade %v of (%s, %s) must be finite and > 0", grade, qs, gs)
			}
			p.Positives[q] = append(p.Positives[q], retrieval.Positive{Index: g, Grade: grade})
		}
	}
	var out []any
	if triples {
		out = []any{}
	}
	for q, ps := range p.Positives {
		sort.Slice(ps, func(a, b int) bool { return ps[a].Index < ps[b].Index })
		if triples {
			for _, x := range ps {
				out = append(out, []any{q, x.Index, x.Grade})
			}
		}
	}
	return out, nil
}

// WriteExclusions commits a separate exclusions artifact (sorted unique
// [query index, gallery index] pairs of a protocol with nq queries and ng
// gallery items), which `score --exclusions-key` uses in place of the
// relevance document's exclusions (SPEC §10.6).
func (s *Store) WriteExclusions(ctx context.Context, key string, pairs [][2]int, nq, ng int) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if pairs == nil {
		pairs = [][2]int{}
	}
	if _, err := exclusionLists(key, pairs, nq, ng); err != nil {
		return err
	}
	return s.WriteJSON(ctx, key, &Exclusions{Common: Common{ArtifactType: TypeExclusions, VertebraeVersion: version.Version, OutputKey: key}, Exclusions: pairs})
}

// ReadExclusions loads the exclusions of an exclusions artifact, or of a
// relevance artifact, for a protocol of nq × ng; a key of any other type is
// a TypeError (read as "no exclusions" it would change every metric).
func (s *Store) ReadExclusions(ctx context.Context, key string, nq, ng int) ([][2]int, [][]int, error) {
	md, _, err := s.ReadMetadata(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	if err := ExclusionsArtifact.check(key, md); err != nil {
		return nil, nil, err
	}
	if typeOf(md) == TypeRelevance {
		p, err := s.ReadRelevance(ctx, key)
		if err != nil {
			return nil, nil, err
		}
		if p.Doc.NQueries != nq || p.Doc.NGallery != ng {
			return nil, nil, checkErr(key, fmt.Sprintf("its exclusions are of a %d × %d protocol, not %d × %d", p.Doc.NQueries, p.Doc.NGallery, nq, ng))
		}
		return p.Doc.Exclusions, p.Exclusions, nil
	}
	doc := &Exclusions{}
	if _, err := s.ReadJSON(ctx, key, doc); err != nil {
		return nil, nil, err
	}
	if doc.Exclusions == nil {
		return nil, nil, keyErr(key, ErrInvalidMetadata, "exclusions artifact has no exclusions list")
	}
	lists, err := exclusionLists(key, doc.Exclusions, nq, ng)
	return doc.Exclusions, lists, err
}

func exclusionLists(key string, pairs [][2]int, nq, ng int) ([][]int, error) {
	out := make([][]int, nq)
	for i, p := range pairs {
		if p[0] < 0 || p[0] >= nq || p[1] < 0 || p[1] >= ng {
			return nil, keyErr(key, ErrInvalidMetadata, fmt.Sprintf("exclusion %d (%d, %d) is out of range", i, p[0], p[1]))
		}
		if i > 0 && (pairs[i-1][0] > p[0] || pairs[i-1][0] == p[0] && pairs[i-1][1] >= p[1]) {
			return nil, keyErr(key, ErrInvalidMetadata, fmt.Sprintf("exclusions must be sorted unique [qi, gi] pairs; entry %d is not", i))
		}
		out[p[0]] = append(out[p[0]], p[1])
	}
	return out, nil
}

func pairsAny(pairs [][2]int) []any {
	out := make([]any, len(pairs))
	for i, p := range pairs {
		out[i] = []any{p[0], p[1]}
	}
	return out
}
