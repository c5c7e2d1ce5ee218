package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrWrongType is wrapped by every TypeError: a key argument names an
// artifact of another type than the argument needs.
var ErrWrongType = errors.New("wrong artifact type")

// ErrOccupied is wrapped by every OccupiedError: a write would replace a
// committed artifact of another type (or, at an explicit output key, of
// other content).
var ErrOccupied = errors.New("output key is occupied")

// TypeError reports a key that names an artifact of the wrong type (SPEC
// §6.8: `<key> is a <type>, not <expected>`). Without it an endpoint given
// as --exclusions-key would read as "no exclusions" and change the metrics.
type TypeError struct {
	Key  string
	Type string // what the key holds (artifact_type, with the side for endpoints)
	Want string // what the argument needs, in words
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("artifact %s is a %s, not %s", e.Key, e.Type, e.Want)
}

func (e *TypeError) Unwrap() error { return ErrWrongType }

// OccupiedError reports a write refused because its key already holds
// another artifact (SPEC §6.8: `<key> already holds a <type>`).
type OccupiedError struct {
	Key  string
	Type string // the artifact_type found at the key
	Why  string // "" (another type) or what differs
}

func (e *OccupiedError) Error() string {
	msg := fmt.Sprintf("artifact %s already holds a %s", e.Key, e.Type)
	if e.Why != "" {
		msg += " " + e.Why
	}
	return msg + "; choose another key or delete it first"
}

func (e *OccupiedError) Unwrap() error { return ErrOccupied }

// docHeader is what every type check reads of a metadata document.
type docHeader struct {
	ArtifactType string `json:"artifact_type"`
	Side         string `json:"side"`
}

func headerOf(md []byte) docHeader {
	var h docHeader
	_ = json.Unmarshal(md, &h) // an undecodable document has no type
	return h
}

// typeOf is the artifact_type of a metadata document ("" when it has none).
// Documents this package writes are canonical JSON, whose first member is
// artifact_type: that member is read without decoding the rest (a score
// over a large gallery is tens of MB, read again whenever its key is
// written).
func typeOf(md []byte) string {
	if t, ok := canonicalType(md); ok && bytes.HasSuffix(md, []byte("}")) {
		return t
	}
	return headerOf(md).ArtifactType
}

// describe names an artifact for messages: its type, with the side for
// endpoint embeddings ("gallery-side retrieval_embedding").
func describe(md []byte) string {
	h := headerOf(md)
	switch h.ArtifactType {
	case "":
		return "document without an artifact_type"
	case TypeEmbedding, TypeEmbeddingShard, TypeCompressedEmbedding:
		if h.Side != "" {
			return h.Side + "-side " + h.ArtifactType
		}
	}
	return h.ArtifactType
}

// Kinds of key arguments: each names the artifact types it accepts.
var (
	// QueryEndpoint and GalleryEndpoint are the endpoints of score and
	// compress: an embedding, a merged or single shard, or a compressed
	// endpoint, of that side.
	QueryEndpoint   = Expect{Want: "a query-side endpoint embedding", Types: endpointTypes, Side: SideQuery}
	GalleryEndpoint = Expect{Want: "a gallery-side endpoint embedding", Types: endpointTypes, Side: SideGallery}
	// RelevanceArtifact is --relevance-key.
	RelevanceArtifact = Expect{Want: "a " + TypeRelevance, Types: []string{TypeRelevance}}
	// ExclusionsArtifact is --exclusions-key: a separate exclusions
	// artifact or a relevance artifact (whose exclusions are used).
	ExclusionsArtifact = Expect{Want: "a " + TypeExclusions + " or " + TypeRelevance, Types: []string{TypeExclusions, TypeRelevance}}
	// ScoreArtifact is from-artifacts --score-key.
	ScoreArtifact = Expect{Want: "a " + TypeEvaluation, Types: []string{TypeEvaluation}}
)

var endpointTypes = []string{TypeEmbedding, TypeEmbeddingShard, TypeCompressedEmbedding}

// Expect is what a key argument must name.
type Expect struct {
	Want  string   // in words, for TypeError
	Types []string // accepted artifact_type values
	Side  string   // required side for endpoints, or ""
}

// check returns a TypeError unless md is a document of an accepted type.
func (x Expect) check(key string, md []byte) error {
	h := headerOf(md)
	for _, t := range x.Types {
		if h.ArtifactType == t && (x.Side == "" || h.Side == x.Side) {
			return nil
		}
	}
	return &TypeError{Key: key, Type: describe(md), Want: x.Want}
}

// CheckType verifies key's metadata document and that it is of a type x
// accepts. Commands run it on every key argument before any work.
func (s *Store) CheckType(ctx context.Context, key string, x Expect) error {
	md, _, err := s.ReadMetadata(ctx, key)
	if err != nil {
		return err
	}
	return x.check(key, md)
}

// WriteOption changes how a write commits.
type WriteOption func(*writeOptions)

type writeOptions struct{ explicit bool }

// ExplicitKey marks a write at a key the user chose (an --output-key):
// besides the type rule every write follows, it refuses other content of
// the same type; an identical rewrite stays allowed, so shard commands
// stay idempotent.
func ExplicitKey() WriteOption { return func(o *writeOptions) { o.explicit = true } }

// CheckOutput tells whether a write of an artifact of type typ may commit
// at key, without writing: the key is free, or holds an artifact of the
// same type (a cache refresh or an idempotent rewrite). A key whose
// manifest exists but whose metadata cannot be read is refused at an
// explicit key (it may be anything) and replaced elsewhere (a repair).
// Commands run it before computing anything, so a refusal costs nothing.
func (s *Store) CheckOutput(ctx context.Context, key, typ string, opts ...WriteOption) error {
	_, err := s.occupant(ctx, key, typ, writeOpts(opts).explicit)
	return err
}

// occupant returns the manifest committed at key (nil when the key is
// free) after checking that an artifact of type typ may replace it.
func (s *Store) occupant(ctx context.Context, key, typ string, explicit bool) (*Manifest, error) {
	m, err := s.Manifest(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		if explicit {
			return nil, err
		}
		return nil, nil // a damaged key at a derived name is repaired
	}
	got, md, err := s.metadataType(ctx, key, m)
	if err != nil {
		if explicit {
			return nil, &OccupiedError{Key: key, Type: "damaged artifact", Why: fmt.Sprintf("(%v)", err)}
		}
		return m, nil
	}
	if got != typ {
		if md == nil { // a large document: its type alone describes it
			return nil, &OccupiedError{Key: key, Type: got}
		}
		return nil, &OccupiedError{Key: key, Type: describe(md)}
	}
	return m, nil
}

// metadataHead is how much of a metadata document metadataType keeps when
// the document is larger.
const metadataHead = 64 << 10

// metadataType is the artifact_type of key's metadata document (manifest
// m), verified whole as ReadMetadata verifies it; the document itself is
// returned only when it is at most metadataHead bytes or does not start
// with its artifact_type as a canonical document does. A score over a
// large gallery (hundreds of MB) is thus checked without being held.
func (s *Store) metadataType(ctx context.Context, key string, m *Manifest) (string, []byte, error) {
	var typ string
	var md []byte
	err := s.verified(ctx, key, m.Metadata.component(), func(r io.Reader) error {
		head := make([]byte, metadataHead+1)
		n, err := io.ReadFull(r, head)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			md = head[:n]
			return nil
		}
		if err != nil {
			return err
		}
		t, ok := canonicalType(head)
		if !ok {
			rest, err := io.ReadAll(r)
			md = append(head, rest...)
			return err
		}
		typ = t
		_, err = io.Copy(io.Discard, r) // verify the rest
		return err
	})
	if err != nil {
		return "", nil, err
	}
	if md != nil {
		typ = typeOf(md)
	}
	return typ, md, nil
}

// canonicalType is the artifact_type a canonical document names first
// (`{"artifact_type":"…",` or a document of that member alone), read in
// place from its head.
func canonicalType(head []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(head, []byte(`{"artifact_type":"`))
	if !ok {
		return "", false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || end+1 >= len(rest) || bytes.IndexByte(rest[:end], '\\') >= 0 || (rest[end+1] != ',' && rest[end+1] != '}') {
		return "", false
	}
	return string(rest[:end]), true
}

// guardCommit is the last check before a manifest is committed: the type
// rule, and for explicit keys that the new generation equals the committed
// one when there is one.
// On a refusal the data files this write added (named in next, not in the
// committed generation) are removed, so a refused write leaves nothing.
func (s *Store) guardCommit(ctx context.Context, key, typ string, next *Manifest, o writeOptions) error {
	prev, err := s.occupant(ctx, key, typ, o.explicit)
	if err == nil && prev != nil && o.explicit {
		var a, b []byte
		if a, err = prev.Encode(); err == nil {
			b, err = next.Encode()
		}
		if err != nil {
			return &Error{Key: key, Msg: "encode manifest", Err: err}
		}
		if !bytes.Equal(a, b) {
			err = &OccupiedError{Key: key, Type: typ, Why: "with other content"}
		}
	}
	if err != nil {
		keep := map[string]bool{}
		if prev != nil {
			for _, f := range prev.Files() {
				keep[f] = true
			}
		}
		for _, f := range next.Files() {
			if !keep[f] {
				_ = s.st.Delete(ctx, key+"/"+f)
			}
		}
	}
	return err
}

func writeOpts(opts []WriteOption) writeOptions {
	var o writeOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
