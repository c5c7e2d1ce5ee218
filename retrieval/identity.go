package retrieval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/internal/chunkdigest"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Identity is a dataset identity policy (SPEC §2.9). The zero value is
// rejected by the dataset constructors.
type Identity struct {
	mode       string
	datasetID  string
	revision   string
	manifest   string // canonical hash of the manifest
	nonce      string
	parentKey  string
	operation  string
	recipeHash string
	err        error // deferred construction error, reported at step (9)
}

// Declared identifies a dataset by a caller-chosen ID and revision.
func Declared(datasetID, revision string) Identity {
	return Identity{mode: "declared", datasetID: datasetID, revision: revision}
}

// FromManifest identifies a dataset by ID and the canonical hash of a
// manifest value.
func FromManifest(datasetID string, manifest any) Identity {
	h, err := canonjson.Hash(manifest)
	return Identity{mode: "manifest", datasetID: datasetID, manifest: h, err: err}
}

// FromContent derives the identity from a hash of the dataset's content.
func FromContent() Identity { return Identity{mode: "content"} }

// Ephemeral is an identity that never equals another one.
func Ephemeral() Identity {
	var b [16]byte
	_, err := rand.Read(b[:])
	return Identity{mode: "ephemeral", nonce: hex.EncodeToString(b[:]), err: err}
}

// Derived identifies a dataset derived from another by an operation.
func Derived(parentKey, operation string, recipe map[string]any) Identity {
	h, err := canonjson.Hash(recipe)
	return Identity{mode: "derived", parentKey: parentKey, operation: operation, recipeHash: h, err: err}
}

// Mode is the identity mode name ("" for the zero value).
func (id Identity) Mode() string { return id.mode }

func (id Identity) payload() map[string]any {
	p := map[string]any{"schema_version": 2, "mode": id.mode}
	switch id.mode {
	case "declared":
		p["dataset_id"], p["revision"] = id.datasetID, id.revision
	case "manifest":
		p["dataset_id"], p["manifest_sha256"] = id.datasetID, id.manifest
	case "ephemeral":
		p["nonce"] = id.nonce
	case "derived":
		p["parent_key"], p["operation"], p["recipe_hash"] = id.parentKey, id.operation, id.recipeHash
	}
	return p
}

// deferrable reports whether resolving the identity of d can be left to
// run in the background: a content identity over dense or sparse embedding
// endpoints, whose hashing cannot fail once d is validated (every value is
// encodable: IDs, digests, finite grades, checked metadata).
func (id Identity) deferrable(d *Dataset) bool {
	if id.err != nil || id.mode != "content" || d.idsOnly {
		return false
	}
	for _, it := range []Items{d.queries, d.gallery} {
		e, ok := it.(EmbeddingItems)
		if !ok {
			return false
		}
		switch e.m.(type) {
		case *matrix.Dense, *matrix.CSR:
		default:
			return false
		}
	}
	return true
}

func (id Identity) resolve(ctx context.Context, d *Dataset) (string, error) {
	if id.err != nil {
		return "", invalid("dataset identity: %v", id.err)
	}
	p := id.payload()
	switch id.mode {
	case "declared":
		if id.datasetID == "" || id.revision == "" {
			return "", invalid("declared dataset identity needs a non-empty dataset_id and revision")
		}
	case "manifest":
		if id.datasetID == "" {
			return "", invalid("manifest dataset identity needs a non-empty dataset_id")
		}
	case "content":
		snap, err := d.contentSnapshot(ctx)
		if err != nil {
			return "", err
		}
		h, err := canonjson.HashContext(ctx, snap)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", ctxErr
		}
		if err != nil {
			return "", invalid("content identity unavailable: %v", err)
		}
		p["content_sha256"] = h
	}
	key, err := canonjson.Hash(p)
	if err != nil {
		return "", invalid("dataset identity: %v", err)
	}
	return key, nil
}

func (d *Dataset) contentSnapshot(ctx context.Context) (map[string]any, error) {
	// The two digests are independent: the gallery's is computed on another
	// goroutine, and a leave-one-out dataset (one collection as both
	// endpoints) hashes its rows once.
	if d.idsOnly {
		// SPEC §6.3: the IDs-only digests; the values identify the result
		// (its recipe), not the task.
		return d.snapshot(map[string]any{"kind": "ids", "count": d.queries.Len()},
			map[string]any{"kind": "ids", "count": d.gallery.Len()}), nil
	}
	var gd map[string]any
	var gerr error
	done := make(chan struct{})
	if sameEmbeddings(d.queries, d.gallery) {
		close(done)
	} else {
		go func() { gd, gerr = endpointDigest(ctx, d.gallery); close(done) }()
	}
	qd, err := endpointDigest(ctx, d.queries)
	<-done
	if err != nil {
		return nil, err
	}
	if sameEmbeddings(d.queries, d.gallery) {
		gd = qd
	} else if gerr != nil {
		return nil, gerr
	}
	return d.snapshot(qd, gd), nil
}

// snapshot is the content snapshot of SPEC §2.9 with the given endpoint
// digests.
func (d *Dataset) snapshot(qd, gd map[string]any) map[string]any {
	return map[string]any{
		"query_ids":        canonjson.Strings(d.queryIDs),
		"gallery_ids":      canonjson.Strings(d.galleryIDs),
		"queries":          qd,
		"gallery":          gd,
		"relevance":        d.snapshotRelevance(),
		"exclusions":       d.exclusionPairs(),
		"query_modality":   d.queries.Modality(),
		"gallery_modality": d.gallery.Modality(),
		"metadata":         d.metadata,
	}
}

// TaskDigests are the canonical hashes of the components of the evaluated
// task (SPEC §6.6 metadata.task_digests): query_ids, gallery_ids, relevance
// (the §2.9 snapshot form: triples, or the label form), exclusions and
// retrieval_config (its protocol fields). Two reports whose dataset
// identities or protocol fingerprints differ name the components that do.
func (d *Dataset) TaskDigests(cfg Config) (map[string]string, error) {
	parts := map[string]any{
		"query_ids":        canonjson.Strings(d.queryIDs),
		"gallery_ids":      canonjson.Strings(d.galleryIDs),
		"relevance":        d.snapshotRelevance(),
		"exclusions":       d.exclusionPairs(),
		"retrieval_config": cfg.ProtocolFields(),
	}
	out := make(map[string]string, len(parts))
	for k, v := range parts {
		h, err := canonjson.Hash(v)
		if err != nil {
			return nil, fmt.Errorf("task digest %s: %w", k, err)
		}
		out[k] = h
	}
	return out, nil
}

func stringsAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// snapshotRelevance is the content snapshot's relevance (SPEC §2.9): the
// label form {"query_labels", "gallery_labels"} of label-derived relevance
// (§2.7: one label per row, never the pairs), otherwise the sorted triples.
func (d *Dataset) snapshotRelevance() any {
	if c := d.labelled; c != nil {
		return map[string]any{"query_labels": c.labelArray(c.Query), "gallery_labels": c.labelArray(c.Gallery)}
	}
	return d.relevanceTriples()
}

// relevanceTriples lists the stored positives of explicit relevance as
// [qi, gi, grade], sorted.
func (d *Dataset) relevanceTriples() []any {
	var out []any
	for q, ps := range d.positives {
		for _, p := range ps {
			out = append(out, []any{q, p.Index, p.Grade})
		}
	}
	if out == nil {
		out = []any{}
	}
	return out
}

func (d *Dataset) exclusionPairs() []any {
	out := []any{}
	for q, ex := range d.exclusions {
		for _, g := range ex {
			out = append(out, []any{q, g})
		}
	}
	return out
}

// sameEmbeddings reports whether both endpoints are the very same embedding
// matrix.
func sameEmbeddings(a, b Items) bool {
	ea, ok1 := a.(EmbeddingItems)
	eb, ok2 := b.(EmbeddingItems)
	if !ok1 || !ok2 {
		return false
	}
	switch m := ea.m.(type) { // pointer identity; other types are never shared
	case *matrix.Dense:
		n, ok := eb.m.(*matrix.Dense)
		return ok && m == n
	case *matrix.CSR:
		n, ok := eb.m.(*matrix.CSR)
		return ok && m == n
	}
	return false
}

// endpointDigest implements the endpoint digests of SPEC §2.9.
func endpointDigest(ctx context.Context, it Items) (map[string]any, error) {
	e, ok := it.(EmbeddingItems)
	if !ok {
		if cd, ok := it.(interface {
			ContentDigest() (map[string]any, error)
		}); ok {
			return cd.ContentDigest()
		}
		return nil, invalid("content identity unavailable for %s inputs", it.Modality())
	}
	if e.digest != nil {
		return e.digest.get(), nil
	}
	var err error // only ctx's: hash writers never fail
	digest := func(write func(io.Writer) error) string {
		if err != nil {
			return ""
		}
		h := chunkdigest.NewHasher() // SPEC §10.5's chunked SHA-256, on every core
		if err = write(ctxHash{ctx, h}); err != nil {
			return ""
		}
		return h.Digest().Hex()
	}
	var out map[string]any
	switch m := e.m.(type) {
	case *matrix.Dense:
		out = map[string]any{"kind": "dense", "dtype": m.DType().String(),
			"shape": []any{m.Rows(), m.Cols()}, "sha256": digest(m.WriteLE)}
	case *matrix.CSR:
		out = map[string]any{"kind": "csr", "dtype": m.DType().String(), "shape": []any{m.Rows(), m.Cols()},
			"data_sha256": digest(m.WriteDataLE), "indices_sha256": digest(m.WriteIndicesLE),
			"indptr_sha256": digest(m.WriteIndptrLE)}
	}
	if err != nil {
		return nil, err
	}
	if out != nil {
		return out, nil
	}
	return nil, invalid("content identity unavailable for matrix type %T", e.m)
}

// copyMetadata deep-copies a metadata object, enforcing SPEC §2.8.
func copyMetadata(m map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		c, err := copyJSONValue(v)
		if err != nil {
			return nil, invalid("Retrieval metadata must be deterministically JSON-serializable: key %q: %v", k, err)
		}
		out[k] = c
	}
	return out, nil
}

func copyJSONValue(v any) (any, error) {
	switch t := v.(type) {
	case nil, bool, string:
		return t, nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("non-finite number %v", t)
		}
		return t, nil
	case float32:
		return copyJSONValue(float64(t))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return t, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			c, err := copyJSONValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case []string:
		return stringsAny(t), nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			c, err := copyJSONValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported value of type %T", v)
}

// Summary is the dataset summary of SPEC §2.11, in its field order.
type Summary struct {
	Modality        string `json:"modality"`
	QueryModality   string `json:"query_modality"`
	GalleryModality string `json:"gallery_modality"`
	NQueries        int    `json:"n_queries"`
	NGallery        int    `json:"n_gallery"`
	NRelevancePairs int    `json:"n_relevance_pairs"`
	NExclusions     int    `json:"n_exclusions"`
	// NDroppedQueries counts the queries removed for having no eligible
	// positive (queries_without_positives: drop, SPEC §3.1); omitted when 0.
	NDroppedQueries int `json:"n_dropped_queries,omitempty"`
	// NDroppedReverseQueries counts the gallery items skipped as reverse
	// queries for having no eligible reverse relation (bidirectional with
	// queries_without_positives: drop); omitted when 0. Dataset.Summary
	// leaves it 0: the run sets it, as only it knows the direction.
	NDroppedReverseQueries int            `json:"n_dropped_reverse_queries,omitempty"`
	Identity               map[string]any `json:"identity"`
	Metadata               map[string]any `json:"metadata"`
}

// Summary returns the dataset summary.
func (d *Dataset) Summary() Summary {
	pairs := 0
	for q := range d.queryIDs {
		pairs += d.eligibleCount(q)
	}
	ident := map[string]any{"schema_version": 2, "mode": d.identity.mode, "key": d.IdentityKey()}
	switch d.identity.mode {
	case "declared":
		ident["dataset_id"], ident["revision"] = d.identity.datasetID, d.identity.revision
	case "manifest":
		ident["dataset_id"], ident["manifest_sha256"] = d.identity.datasetID, d.identity.manifest
	}
	return Summary{
		Modality: "retrieval", QueryModality: d.queries.Modality(), GalleryModality: d.gallery.Modality(),
		NQueries: len(d.queryIDs), NGallery: len(d.galleryIDs), NRelevancePairs: pairs,
		NExclusions: d.nExclusions, NDroppedQueries: len(d.dropped), Identity: ident, Metadata: d.Metadata(),
	}
}

// RelevanceFingerprint is the relevance fingerprint of SPEC §10.3: of the
// label form for label-derived relevance, of the triples otherwise.
func (d *Dataset) RelevanceFingerprint() (string, error) {
	p, err := d.relevanceFingerprintPayload()
	if err != nil {
		return "", err
	}
	return canonjson.Hash(p)
}

// relevanceFingerprintPayload is the value RelevanceFingerprint hashes.
func (d *Dataset) relevanceFingerprintPayload() (map[string]any, error) {
	key, err := d.key.get()
	if err != nil {
		return nil, err
	}
	if d.labelled != nil {
		return labelFingerprintPayload(key, d.queryIDs, d.galleryIDs, d.labelled)
	}
	return relevanceFingerprintPayload(key, d.queryIDs, d.galleryIDs, d.relevanceTriples()), nil
}

// ProtocolFingerprint is the protocol fingerprint of SPEC §10.3 for cfg.
func (d *Dataset) ProtocolFingerprint(cfg Config) (string, error) {
	rf, err := d.RelevanceFingerprint()
	if err != nil {
		return "", err
	}
	return ProtocolFingerprintOf(rf, d.exclusionPairs(), cfg)
}

// RelevanceFingerprintOf computes the relevance fingerprint of SPEC §10.3
// of explicit relevance from its parts; relevance lists [query index,
// gallery index, grade] triples sorted by indices. Artifact readers
// recompute it with this same function, so a stored fingerprint verifies
// exactly when the local one would.
func RelevanceFingerprintOf(datasetKey string, queryIDs, galleryIDs []string, relevance []any) (string, error) {
	return canonjson.Hash(relevanceFingerprintPayload(datasetKey, queryIDs, galleryIDs, relevance))
}

func relevanceFingerprintPayload(datasetKey string, queryIDs, galleryIDs []string, relevance []any) map[string]any {
	if relevance == nil {
		relevance = []any{}
	}
	return map[string]any{
		"identity_schema":      2,
		"kind":                 "retrieval_relevance",
		"dataset_identity_key": datasetKey,
		"query_ids":            canonjson.Strings(queryIDs),
		"gallery_ids":          canonjson.Strings(galleryIDs),
		"relevance":            relevance,
	}
}

// LabelRelevanceFingerprintOf computes the relevance fingerprint of SPEC
// §10.3 of label-derived relevance: the label form, H({"identity_schema":
// 2, "kind": "retrieval_relevance_labels", "dataset_identity_key",
// "query_ids", "gallery_ids", "query_labels", "gallery_labels"}), the labels
// in row order, streamed into the hash (O(queries + gallery) text, whatever
// the number of pairs). c must carry its label strings (ClassesFromLabels).
// Datasets and artifact readers both compute it here.
func LabelRelevanceFingerprintOf(datasetKey string, queryIDs, galleryIDs []string, c *Classes) (string, error) {
	p, err := labelFingerprintPayload(datasetKey, queryIDs, galleryIDs, c)
	if err != nil {
		return "", err
	}
	return canonjson.Hash(p)
}

func labelFingerprintPayload(datasetKey string, queryIDs, galleryIDs []string, c *Classes) (map[string]any, error) {
	if c == nil || !c.HasLabels() {
		return nil, fmt.Errorf("label relevance fingerprint: the classes carry no label strings")
	}
	if len(c.Query) != len(queryIDs) || len(c.Gallery) != len(galleryIDs) {
		return nil, fmt.Errorf("label relevance fingerprint: %d query and %d gallery labels for %d and %d IDs", len(c.Query), len(c.Gallery), len(queryIDs), len(galleryIDs))
	}
	return map[string]any{
		"identity_schema":      2,
		"kind":                 "retrieval_relevance_labels",
		"dataset_identity_key": datasetKey,
		"query_ids":            canonjson.Strings(queryIDs),
		"gallery_ids":          canonjson.Strings(galleryIDs),
		"query_labels":         c.labelArray(c.Query),
		"gallery_labels":       c.labelArray(c.Gallery),
	}, nil
}

// ProtocolFingerprintOf computes the protocol fingerprint of SPEC §10.3 from
// a relevance fingerprint, the sorted [query index, gallery index] exclusion
// pairs and the configuration (its ProtocolFields).
func ProtocolFingerprintOf(relevanceFingerprint string, exclusions []any, cfg Config) (string, error) {
	return canonjson.Hash(map[string]any{
		"identity_schema":                2,
		"relevance_protocol_fingerprint": relevanceFingerprint,
		"exclusions":                     exclusions,
		"retrieval_config":               cfg.ProtocolFields(),
	})
}

// ExclusionPairs lists the exclusions as sorted [query index, gallery index]
// pairs.
func (d *Dataset) ExclusionPairs() []any { return d.exclusionPairs() }
