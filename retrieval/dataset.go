package retrieval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// InvalidError is a dataset that breaks a rule of SPEC §2. Its message
// contains the SPEC fragment verbatim.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

func invalid(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// DatasetInputs carries both endpoints and everything else a dataset is built
// from except relevance.
type DatasetInputs struct {
	Queries    Items
	Gallery    Items
	QueryIDs   []string // nil: "0".."n-1"
	GalleryIDs []string // nil: "0".."n-1"
	Exclusions []Pair
	Metadata   map[string]any
	Identity   Identity

	materialiseLabels  bool
	backgroundIdentity bool
	dropUnjudged       bool            // queries_without_positives: drop (SPEC §2.6, §3.1)
	idsOnlyIdentity    bool            // content identity without endpoint values (SPEC §6.3)
	ctx                context.Context // nil: never cancelled
}

// Option adjusts dataset construction.
type Option func(*DatasetInputs)

// WithExclusions adds exclusion pairs.
func WithExclusions(p []Pair) Option {
	return func(in *DatasetInputs) { in.Exclusions = append(in.Exclusions, p...) }
}

// WithMetadata sets the metadata object.
func WithMetadata(m map[string]any) Option { return func(in *DatasetInputs) { in.Metadata = m } }

// WithMaterialisedLabels stores label-derived relevance as explicit pairs,
// Σ(class size)² of them, instead of class membership. Every result is the
// same either way (SPEC §2.7), and so are the identity, the fingerprints and
// the relevance artifact (the label form); the option exists so tests can
// compare the two representations.
func WithMaterialisedLabels() Option { return func(in *DatasetInputs) { in.materialiseLabels = true } }

// WithBackgroundIdentity lets a content identity over embedding endpoints
// be hashed in the background: NewDataset returns once everything is
// validated, and IdentityKey (and what uses it) waits for the hash. The
// caller must keep the endpoints' storage (file mappings) alive until
// WaitIdentity returns.
func WithBackgroundIdentity() Option { return func(in *DatasetInputs) { in.backgroundIdentity = true } }

// WithDropQueriesWithoutPositives removes the queries left with no eligible
// positive (after exclusions) instead of failing (SPEC §2.6,
// queries_without_positives: drop): the dataset is exactly the one built
// from the judged queries alone (same IDs, relevance, exclusions, query
// rows), so every kept query scores as it would there. DroppedQueries lists
// the removed IDs. A dataset left with no query fails.
func WithDropQueriesWithoutPositives() Option {
	return func(in *DatasetInputs) { in.dropUnjudged = true }
}

// WithIDsOnlyIdentity makes a content identity ignore the endpoint values:
// each endpoint's digest is {"kind":"ids","count":n}, as for an IDs-only
// dataset (SPEC §6.3). Datasets with the same IDs, relevance, exclusions,
// modalities and metadata then share one identity key whatever embeddings
// they hold, so separately evaluated backbones compare. Callers that cache
// by dataset identity must key the endpoint values elsewhere (the recipe).
func WithIDsOnlyIdentity() Option { return func(in *DatasetInputs) { in.idsOnlyIdentity = true } }

// WithContext makes construction stop with ctx's error once ctx is done:
// the long loops (finite checks, IDs, labels, records, the identity hash)
// check it every checkEvery rows or each block.
func WithContext(ctx context.Context) Option { return func(in *DatasetInputs) { in.ctx = ctx } }

// checkEvery is how many rows the construction loops handle between
// context checks.
const checkEvery = 4096

// WithIdentity sets the identity policy.
func WithIdentity(id Identity) Option { return func(in *DatasetInputs) { in.Identity = id } }

// Dataset is an immutable, validated retrieval dataset.
type Dataset struct {
	queries, gallery Items
	queryIDs         []string
	galleryIDs       []string
	positives        [][]Positive // per query, ascending gallery index, grade > 0 (before exclusions); nil when labels is set
	labels           *Classes     // label-derived relevance held implicitly (SPEC §2.7)
	// labelled is label-derived relevance with its label strings, set
	// whether the relevance is held implicitly (labels) or materialised:
	// the identity, the relevance fingerprint and the relevance artifact
	// use its label form (SPEC §2.7), O(queries + gallery).
	labelled    *Classes
	exclusions  [][]int // per query, ascending unique gallery indices
	nExclusions int
	metadata    map[string]any
	identity    Identity
	key         *pendingKey // the identity key, possibly still being hashed
	idsOnly     bool        // content identity without endpoint values (WithIDsOnlyIdentity)
	dropped     []string    // IDs of the queries removed by WithDropQueriesWithoutPositives
}

// NewDataset validates inputs and relevance in the order of SPEC §2.10 and
// returns an immutable dataset holding deep copies of everything given.
func NewDataset(inputs DatasetInputs, rel Relevance, opts ...Option) (*Dataset, error) {
	for _, o := range opts {
		o(&inputs)
	}
	return build(inputs, rel, false)
}

// NewLeaveOneOutDataset uses one collection as both endpoints with
// label-derived relevance; every item's own pair is excluded (SPEC §2.7).
func NewLeaveOneOutDataset(items Items, ids, labels []string, opts ...Option) (*Dataset, error) {
	in := DatasetInputs{Queries: items, Gallery: items, QueryIDs: ids, GalleryIDs: ids}
	for _, o := range opts {
		o(&in)
	}
	return build(in, LabelRelevance(labels, labels), true)
}

func build(in DatasetInputs, rel Relevance, leaveOneOut bool) (*Dataset, error) {
	ctx := in.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	// (1) identity present.
	if in.Identity.mode == "" {
		return nil, invalid("dataset identity is required")
	}
	if rel == nil {
		return nil, invalid("relevance is required")
	}
	// (2) endpoint inputs.
	if err := checkEndpoint(ctx, "Query", in.Queries, in.QueryIDs); err != nil {
		return nil, err
	}
	if err := checkEndpoint(ctx, "Gallery", in.Gallery, in.GalleryIDs); err != nil {
		return nil, err
	}
	qe, qok := in.Queries.(EmbeddingItems)
	ge, gok := in.Gallery.(EmbeddingItems)
	if qok && gok && qe.m.Cols() != ge.m.Cols() {
		return nil, invalid("Query and gallery embedding matrices must have the same width; got %d and %d", qe.m.Cols(), ge.m.Cols())
	}
	nq, ng := in.Queries.Len(), in.Gallery.Len()
	// (3) IDs, query side then gallery side; (4) alignment.
	qids, err := checkIDs(ctx, "query", in.QueryIDs, nq)
	if err != nil {
		return nil, err
	}
	gids, err := checkIDs(ctx, "gallery", in.GalleryIDs, ng)
	if err != nil {
		return nil, err
	}
	if len(qids) != nq {
		return nil, invalid("query IDs must align with their input collections; got %d IDs for %d rows", len(qids), nq)
	}
	if len(gids) != ng {
		return nil, invalid("gallery IDs must align with their input collections; got %d IDs for %d rows", len(gids), ng)
	}
	// (5) relevance.
	d := &Dataset{queryIDs: qids, galleryIDs: gids}
	labelForm := false
	switch r := rel.(type) {
	case denseRelevance:
		d.positives, err = denseToPositives(r.m, qids, gids)
	case csrRelevance:
		d.positives, err = csrToPositives(r.s, qids, gids)
	case recordRelevance:
		d.positives, err = recordsToPositives(ctx, r.recs, qids, gids)
	case labelRelevance:
		labelForm = true
		d.labelled, err = classesFromLabels(ctx, r.query, r.gallery, nq, ng)
		d.labels = d.labelled
		if err == nil && in.materialiseLabels {
			d.positives, d.labels = d.labels.Materialise(), nil
		}
	default:
		err = invalid("unsupported relevance form %T", rel)
	}
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// (6) exclusions.
	pairs := in.Exclusions
	if leaveOneOut {
		self := make([]Pair, nq)
		for i, id := range qids {
			self[i] = Pair{QueryID: id, GalleryID: id}
		}
		pairs = append(self, pairs...)
	}
	if d.exclusions, d.nExclusions, err = resolveExclusions(pairs, qids, gids); err != nil {
		return nil, err
	}
	// (7) metadata.
	md, err := copyMetadata(in.Metadata)
	if err != nil {
		return nil, err
	}
	if qok && gok {
		if _, ok := md["precomputed_embeddings"]; ok {
			return nil, invalid("reserved metadata key %q", "precomputed_embeddings")
		}
		md["precomputed_embeddings"] = true
	}
	if labelForm {
		for _, k := range []string{"relevance_source", "leave_one_out"} {
			if _, ok := md[k]; ok {
				return nil, invalid("reserved metadata key %q", k)
			}
		}
		md["relevance_source"] = "labels"
		md["leave_one_out"] = leaveOneOut
	}
	d.metadata = md
	// (8) eligible positives (the queries without one are removed first
	// when the caller asked for it).
	var keep []int
	if in.dropUnjudged {
		if keep, err = d.dropQueriesWithoutPositives(); err != nil {
			return nil, err
		}
	}
	if err := d.checkEligiblePositives(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.queries = cloneItems(in.Queries)
	d.gallery = cloneItems(in.Gallery)
	if leaveOneOut && keep == nil {
		d.gallery = d.queries
	}
	if keep != nil {
		if d.queries, err = selectItems(d.queries, keep); err != nil {
			return nil, err
		}
	}
	// (9) identity key.
	d.identity = in.Identity
	d.idsOnly = in.idsOnlyIdentity
	if in.backgroundIdentity && in.Identity.deferrable(d) {
		// Hashing a large content identity (every stored value) cannot
		// fail here: it runs while the caller goes
		// on (scoring), and the key's readers wait for it.
		d.key = &pendingKey{done: make(chan struct{})}
		go func() {
			d.key.key, d.key.err = in.Identity.resolve(context.Background(), d)
			close(d.key.done)
		}()
		return d, nil
	}
	key, err := in.Identity.resolve(ctx, d)
	if err != nil {
		return nil, err
	}
	d.key = &pendingKey{key: key}
	return d, nil
}

// pendingKey is a dataset identity key; done (nil when the key was known at
// construction) closes once it is.
type pendingKey struct {
	done chan struct{}
	key  string
	err  error
}

func (p *pendingKey) get() (string, error) {
	if p.done != nil {
		<-p.done
	}
	return p.key, p.err
}

func cloneItems(it Items) Items {
	if e, ok := it.(EmbeddingItems); ok {
		return EmbeddingItems{m: matrix.Clone(e.m), digest: e.digest}
	}
	return it
}

func checkEndpoint(ctx context.Context, side string, it Items, ids []string) error {
	if it == nil {
		return invalid("%s inputs are required", side)
	}
	if !modalityRe.MatchString(it.Modality()) {
		return invalid("%s modality %q must match [a-z][a-z0-9_]*", side, it.Modality())
	}
	if im, ok := it.(Images); ok {
		for i, path := range im {
			if st, err := os.Stat(path); err != nil || st.IsDir() {
				id := strconv.Itoa(i)
				if i < len(ids) {
					id = ids[i]
				}
				return invalid("%s image %d (ID %s) is missing or not a file: %s", side, i, msgfmt.Quote(id), path)
			}
		}
		return nil
	}
	e, ok := it.(EmbeddingItems)
	if !ok {
		return nil
	}
	if e.m == nil || e.m.Rows() < 1 || e.m.Cols() < 1 {
		return invalid("%s embeddings must be a 2D array with at least one row and one column", side)
	}
	r, c, bad, err := matrix.FirstNonFiniteParallelContext(ctx, e.m, 0)
	if err != nil {
		return err
	}
	if bad {
		id := strconv.Itoa(r)
		if r < len(ids) {
			id = ids[r]
		}
		return invalid("%s embeddings must contain only finite numeric values; row %d (ID %s), column %d", side, r, msgfmt.Quote(id), c)
	}
	return nil
}

func checkIDs(ctx context.Context, side string, ids []string, n int) ([]string, error) {
	if ids == nil {
		out := rowNumberIDs(n)
		if n == 0 {
			return nil, invalid("%s IDs must not be empty", side)
		}
		return out, nil
	}
	if len(ids) == 0 {
		return nil, invalid("%s IDs must not be empty", side)
	}
	seen := make(map[string]int, len(ids))
	for i, id := range ids {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if id == "" || !utf8.ValidString(id) {
			return nil, invalid("%s IDs must be non-empty UTF-8 strings; index %d is %s", side, i, msgfmt.Quote(id))
		}
		if j, dup := seen[id]; dup {
			return nil, invalid("%s IDs must be unique; %s appears at index %d and %d", side, msgfmt.Quote(id), j, i)
		}
		seen[id] = i
	}
	return slices.Clone(ids), nil
}

func gradeErr(where string) error {
	return invalid("Relevance grades must be finite and non-negative (%s)", where)
}

func validGrade(g float64) bool { return !math.IsNaN(g) && !math.IsInf(g, 0) && g >= 0 }

func denseToPositives(m [][]float64, qids, gids []string) ([][]Positive, error) {
	if len(m) != len(qids) {
		return nil, invalid("Dense relevance must have shape (n_queries, n_gallery) = (%d, %d); got %d rows", len(qids), len(gids), len(m))
	}
	out := make([][]Positive, len(m))
	for i, row := range m {
		if len(row) != len(gids) {
			return nil, invalid("Dense relevance must have shape (n_queries, n_gallery) = (%d, %d); row %d has %d columns", len(qids), len(gids), i, len(row))
		}
		for j, g := range row {
			if !validGrade(g) {
				return nil, gradeErr(fmt.Sprintf("query %s, gallery %s: %v", msgfmt.Quote(qids[i]), msgfmt.Quote(gids[j]), g))
			}
			if g > 0 {
				out[i] = append(out[i], Positive{Index: j, Grade: g})
			}
		}
	}
	return out, nil
}

func csrToPositives(s SparseRelevance, qids, gids []string) ([][]Positive, error) {
	if s.Rows != len(qids) || s.Cols != len(gids) {
		return nil, invalid("Sparse relevance must have shape (n_queries, n_gallery) = (%d, %d); got (%d, %d)", len(qids), len(gids), s.Rows, s.Cols)
	}
	if len(s.Indptr) != s.Rows+1 || s.Indptr[0] != 0 || s.Indptr[s.Rows] != int64(len(s.Indices)) || len(s.Indices) != len(s.Data) {
		return nil, invalid("Sparse relevance has an invalid indptr: it must have n_queries+1 non-decreasing entries from 0 to nnz")
	}
	out := make([][]Positive, s.Rows)
	sums := map[int]float64{}
	var order []int
	for i := 0; i < s.Rows; i++ {
		lo, hi := s.Indptr[i], s.Indptr[i+1]
		if hi < lo {
			return nil, invalid("Sparse relevance has an invalid indptr: it decreases at row %d", i)
		}
		clear(sums)
		order = order[:0]
		for k := lo; k < hi; k++ {
			j := s.Indices[k]
			if j < 0 || j >= int64(s.Cols) {
				return nil, invalid("Sparse relevance has column index %d outside [0, %d) in row %d", j, s.Cols, i)
			}
			g := s.Data[k]
			if !validGrade(g) {
				return nil, gradeErr(fmt.Sprintf("query %s, gallery %s: %v", msgfmt.Quote(qids[i]), msgfmt.Quote(gids[j]), g))
			}
			if _, ok := sums[int(j)]; !ok {
				order = append(order, int(j))
			}
			sums[int(j)] += g // summed in stored order
		}
		for _, j := range order {
			g := sums[j]
			if math.IsInf(g, 0) {
				return nil, gradeErr(fmt.Sprintf("query %s, gallery %s: duplicate entries sum to %v", msgfmt.Quote(qids[i]), msgfmt.Quote(gids[j]), g))
			}
			if g > 0 {
				out[i] = append(out[i], Positive{Index: j, Grade: g})
			}
		}
		sort.Slice(out[i], func(a, b int) bool { return out[i][a].Index < out[i][b].Index })
	}
	return out, nil
}

func recordsToPositives(ctx context.Context, recs []Record, qids, gids []string) ([][]Positive, error) {
	qi, gi := indexIDs(qids), indexIDs(gids)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := unknownIDs(ctx, len(recs), func(n int) (string, string, string) {
		return recs[n].Origin, recs[n].QueryID, recs[n].GalleryID
	}, qi, gi, "record", "Relevance record references an unknown query or gallery ID"); err != nil {
		return nil, err
	}
	out := make([][]Positive, len(qids))
	type pair struct{ q, g int }
	seen := make(map[pair]string, len(recs))
	for n, r := range recs {
		if n%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		where := r.Origin
		if where == "" {
			where = fmt.Sprintf("record %d", n)
		}
		q, g := qi.at(r.QueryID), gi.at(r.GalleryID)
		if !validGrade(r.Grade) {
			return nil, gradeErr(fmt.Sprintf("%s: query %s, gallery %s: %v", where, msgfmt.Quote(r.QueryID), msgfmt.Quote(r.GalleryID), r.Grade))
		}
		if first, dup := seen[pair{q, g}]; dup {
			return nil, invalid("%s: Duplicate query/gallery relevance records are not allowed: (%s, %s) first given at %s", where, msgfmt.Quote(r.QueryID), msgfmt.Quote(r.GalleryID), first)
		}
		seen[pair{q, g}] = where
		if r.Grade > 0 {
			out[q] = append(out[q], Positive{Index: g, Grade: r.Grade})
		}
	}
	for _, ps := range out {
		sort.Slice(ps, func(a, b int) bool { return ps[a].Index < ps[b].Index })
	}
	return out, nil
}

// unknownIDs reports every ID of n (query ID, gallery ID) pairs that is not
// in the dataset: the first offending entry by its origin, then up to 10
// unknown IDs per side (SPEC §1.3 preview lists).
func unknownIDs(ctx context.Context, n int, pairAt func(int) (origin, q, g string), qi, gi idIndex, what, fragment string) error {
	var badQ, badG []string
	seenQ, seenG := map[string]bool{}, map[string]bool{}
	first := -1
	for k := 0; k < n; k++ {
		if k%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		_, q, g := pairAt(k)
		_, okq := qi.find(q)
		_, okg := gi.find(g)
		if !okq && !seenQ[q] {
			seenQ[q] = true
			badQ = append(badQ, q)
		}
		if !okg && !seenG[g] {
			seenG[g] = true
			badG = append(badG, g)
		}
		if (!okq || !okg) && first < 0 {
			first = k
		}
	}
	if first < 0 {
		return nil
	}
	origin, q, g := pairAt(first)
	if origin == "" {
		origin = fmt.Sprintf("%s %d", what, first)
	}
	side, bad := "query", q
	if _, ok := qi.find(q); ok {
		side, bad = "gallery", g
	}
	msg := fmt.Sprintf("%s: %s: %s ID %s", origin, fragment, side, msgfmt.Quote(bad))
	if len(badQ) > 0 {
		msg += fmt.Sprintf("; unknown query IDs (%d): %s", len(badQ), msgfmt.IDList(badQ))
	}
	if len(badG) > 0 {
		msg += fmt.Sprintf("; unknown gallery IDs (%d): %s", len(badG), msgfmt.IDList(badG))
	}
	return invalid("%s", msg)
}

func resolveExclusions(pairs []Pair, qids, gids []string) ([][]int, int, error) {
	out := make([][]int, len(qids))
	if len(pairs) == 0 {
		return out, 0, nil
	}
	qi, gi := indexIDs(qids), indexIDs(gids)
	if err := unknownIDs(context.Background(), len(pairs), func(n int) (string, string, string) {
		return pairs[n].Origin, pairs[n].QueryID, pairs[n].GalleryID
	}, qi, gi, "exclusion", "Exclusion references an unknown query or gallery ID"); err != nil {
		return nil, 0, err
	}
	for _, p := range pairs {
		q := qi.at(p.QueryID)
		out[q] = append(out[q], gi.at(p.GalleryID))
	}
	total := 0
	for i, ex := range out {
		slices.Sort(ex)
		out[i] = slices.Compact(ex) // duplicate pairs collapse silently
		total += len(out[i])
	}
	return out, total, nil
}

// EligiblePositives returns query q's positives that are not excluded, in
// ascending gallery order.
func EligiblePositives(pos []Positive, excluded []int) []Positive {
	if len(excluded) == 0 {
		return pos
	}
	out := make([]Positive, 0, len(pos))
	k := 0
	for _, p := range pos {
		for k < len(excluded) && excluded[k] < p.Index {
			k++
		}
		if k < len(excluded) && excluded[k] == p.Index {
			continue
		}
		out = append(out, p)
	}
	return out
}

// MissingPositivesMessage is the §2.6 message for the given query IDs; it
// ends with the way out (the flag, and the run-file key).
func MissingPositivesMessage(ids []string) string {
	return "Every query must retain at least one eligible positive relevance after exclusions; missing for " + msgfmt.IDList(ids) +
		" (pass --drop-queries-without-positives to evaluate only the judged queries; in a run file, retrieval: {queries_without_positives: drop})"
}

func (d *Dataset) checkEligiblePositives() error {
	var missing []string
	for q := range d.queryIDs {
		if d.eligibleCount(q) == 0 {
			missing = append(missing, d.queryIDs[q])
		}
	}
	if len(missing) > 0 {
		return invalid("%s", MissingPositivesMessage(missing))
	}
	return nil
}

// NumQueries is n_q.
func (d *Dataset) NumQueries() int { return len(d.queryIDs) }

// NumGallery is n_g.
func (d *Dataset) NumGallery() int { return len(d.galleryIDs) }

// QueryIDs returns a copy of the query IDs.
func (d *Dataset) QueryIDs() []string { return slices.Clone(d.queryIDs) }

// GalleryIDs returns a copy of the gallery IDs.
func (d *Dataset) GalleryIDs() []string { return slices.Clone(d.galleryIDs) }

// QueryIDsShared is QueryIDs without the copy: the dataset's own list,
// which the caller must not modify (append cannot reach it). An
// extraction shard reads a large endpoint's IDs (hashes them, names its
// rows) and a copy per shard process is a cost linear in the endpoint.
func (d *Dataset) QueryIDsShared() []string { return d.queryIDs[:len(d.queryIDs):len(d.queryIDs)] }

// GalleryIDsShared is GalleryIDs without the copy; see QueryIDsShared.
func (d *Dataset) GalleryIDsShared() []string {
	return d.galleryIDs[:len(d.galleryIDs):len(d.galleryIDs)]
}

// Queries returns the query inputs (read-only).
func (d *Dataset) Queries() Items { return d.queries }

// Gallery returns the gallery inputs (read-only).
func (d *Dataset) Gallery() Items { return d.gallery }

// Positives returns a copy of query q's stored positives (before exclusions).
func (d *Dataset) Positives(q int) []Positive {
	if d.labels != nil {
		return d.labels.Positives(q)
	}
	return slices.Clone(d.positives[q])
}

// eligibleCount is the number of query q's eligible positives.
func (d *Dataset) eligibleCount(q int) int {
	if d.labels != nil {
		return d.labels.EligibleCount(q, d.exclusions[q])
	}
	return len(EligiblePositives(d.positives[q], d.exclusions[q]))
}

// Classes is the implicit label-derived relevance, or nil when relevance is
// held as explicit pairs (read-only).
func (d *Dataset) Classes() *Classes { return d.labels }

// RelevanceLabels returns the label of every query and gallery row when the
// relevance is label-derived (SPEC §2.7; ok false otherwise), whether it is
// held implicitly or materialised: the label form that the relevance
// artifact stores (§10.6).
func (d *Dataset) RelevanceLabels() (query, gallery []string, ok bool) {
	if d.labelled == nil {
		return nil, nil, false
	}
	return d.labelled.QueryLabels(), d.labelled.GalleryLabels(), true
}

// Exclusions returns a copy of query q's excluded gallery indices.
func (d *Dataset) Exclusions(q int) []int { return slices.Clone(d.exclusions[q]) }

// Metadata returns a deep copy of the metadata.
func (d *Dataset) Metadata() map[string]any {
	m, _ := copyMetadata(d.metadata)
	return m
}

// WaitIdentity waits until the identity key is known (see
// WithBackgroundIdentity); it is safe to call on a nil dataset.
func (d *Dataset) WaitIdentity() {
	if d != nil {
		_, _ = d.key.get()
	}
}

// IdentityKey is the 64-hex dataset identity key (SPEC §2.9).
// It waits for a content identity that is still being hashed.
func (d *Dataset) IdentityKey() string {
	k, _ := d.key.get()
	return k
}

// EligibleRelevance returns per query the eligible positives (read-only use:
// the slices may be shared with the dataset; callers must not modify them).
func (d *Dataset) EligibleRelevance() [][]Positive {
	out := make([][]Positive, len(d.queryIDs))
	for q := range out {
		out[q] = d.EligibleOf(q)
	}
	return out
}

// EligibleOf is query q's eligible positives (SPEC §4.3), ascending by
// gallery index; label-derived relevance builds the list on demand.
func (d *Dataset) EligibleOf(q int) []Positive {
	return EligiblePositives(d.rawPositives(q), d.exclusions[q])
}

// RawRelevance and RawExclusions expose the internal per-query lists without
// copying, for the scorer. Callers must not modify them. Label-derived
// relevance is materialised by RawRelevance (Σ(class size)² pairs); the
// scorer uses Classes instead.
func (d *Dataset) RawRelevance() [][]Positive {
	if d.labels != nil {
		return d.labels.Materialise()
	}
	return d.positives
}

func (d *Dataset) rawPositives(q int) []Positive {
	if d.labels != nil {
		return d.labels.Positives(q)
	}
	return d.positives[q]
}

// RawExclusions: see RawRelevance.
func (d *Dataset) RawExclusions() [][]int { return d.exclusions }

// ErrNoReverseRelation is wrapped by CheckBidirectional's error.
var ErrNoReverseRelation = errors.New("bidirectional retrieval requires every gallery item to have an eligible reverse relevance relation")

// CheckBidirectional verifies that every gallery item has an eligible
// reverse relation (SPEC §4.8); run it before any extractor.
func (d *Dataset) CheckBidirectional() error {
	if missing := d.ReverseQueriesWithoutPositives(); len(missing) > 0 {
		return &InvalidError{Msg: NoReverseRelationMessage(missing)}
	}
	return nil
}

// reverseEligible reports for every gallery row whether it has an eligible
// reverse relation.
func (d *Dataset) reverseEligible() []bool {
	has := make([]bool, len(d.galleryIDs))
	if c := d.labels; c != nil {
		has = c.ReverseEligible(d.exclusions)
	}
	for q := range d.positives {
		for _, p := range EligiblePositives(d.positives[q], d.exclusions[q]) {
			has[p.Index] = true
		}
	}
	return has
}
