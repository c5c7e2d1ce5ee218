package artifact

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/internal/chunkdigest"
	"github.com/vertebrae-eval/vertebrae/store"
)

// Store reads and writes verified artifacts in an object store.
type Store struct {
	st store.Store
}

// New returns the artifact layer over st.
func New(st store.Store) *Store { return &Store{st: st} }

// Objects returns the underlying object store.
func (s *Store) Objects() store.Store { return s.st }

// Manifest loads and strictly decodes key's manifest. A key without a
// manifest does not exist (ErrNotFound).
func (s *Store) Manifest(ctx context.Context, key string) (*Manifest, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	data, err := s.getAll(ctx, key+"/"+ManifestName, 1<<20)
	if errors.Is(err, store.ErrNotExist) {
		return nil, &Error{Key: key, Msg: "does not exist (no manifest)", Err: ErrNotFound}
	}
	if err != nil {
		return nil, &Error{Key: key, Msg: "read manifest", Err: err}
	}
	return DecodeManifest(key, data)
}

// Exists reports whether key has a manifest (it does not verify the data).
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	_, err := s.st.Stat(ctx, key+"/"+ManifestName)
	if errors.Is(err, store.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (s *Store) getAll(ctx context.Context, name string, limit int64) ([]byte, error) {
	rc, err := s.st.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return data, nil
}

// encodeMetadata renders a metadata document as canonical JSON; a value
// that is not JSON-compatible fails before anything is written (§10.5).
func encodeMetadata(key string, metadata any) ([]byte, error) {
	b, err := canonjson.Marshal(metadata)
	if err != nil {
		return nil, &Error{Key: key, Msg: "metadata is not JSON-compatible", Err: err}
	}
	return b, nil
}

// WriteJSON commits a JSON-only artifact (kind "json") at key.
// It never replaces an artifact of another type, and with ExplicitKey
// nothing but identical content (SPEC §6.8); a refusal writes nothing.
func (s *Store) WriteJSON(ctx context.Context, key string, metadata any, opts ...WriteOption) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	md, err := encodeMetadata(key, metadata)
	if err != nil {
		return err
	}
	entry, sidecar := metadataEntry(md)
	m := &Manifest{SchemaVersion: SchemaVersion, Kind: KindJSON, Metadata: entry}
	if err := s.guardCommit(ctx, key, typeOf(md), m, writeOpts(opts)); err != nil {
		return err
	}
	if err := s.putMetadata(ctx, key, entry, md, sidecar); err != nil {
		return err
	}
	return s.commit(ctx, key, m)
}

// writeJSONStream is WriteJSON for a document too large to hold as text (a
// score with a row per gallery row in the reverse direction): doc, whose
// artifact_type is typ, is encoded by canonjson.Encode straight into the
// store, its chunks hashed on the way, never held whole. The bytes are
// WriteJSON's.
func (s *Store) writeJSONStream(ctx context.Context, key, typ string, doc any, opts ...WriteOption) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	o := writeOpts(opts)
	if _, err := s.occupant(ctx, key, typ, o.explicit); err != nil {
		return err // before encoding: a refused key costs nothing
	}
	encode := func(w io.Writer) error {
		if err := canonjson.Encode(w, doc); err != nil {
			return fmt.Errorf("metadata is not JSON-compatible: %w", err)
		}
		return nil
	}
	var entry FileEntry
	name := func(d chunkdigest.Digest) string {
		sum := d.Hex()
		entry = FileEntry{Filename: "metadata-" + sum + ".json", MediaType: "application/json", SizeBytes: d.Size, SHA256: sum, Chunks: chunksFor(sum)}
		return entry.Filename
	}
	d, err := s.putStreamed(ctx, key, "metadata", encode, name)
	if err != nil {
		return err
	}
	if err := s.putSidecar(ctx, key, entry.Chunks, d.Sidecar); err != nil {
		return err
	}
	m := &Manifest{SchemaVersion: SchemaVersion, Kind: KindJSON, Metadata: entry}
	if err := s.guardCommit(ctx, key, typ, m, o); err != nil {
		return err
	}
	return s.commit(ctx, key, m)
}

// metadataEntry describes a metadata document and returns its sidecar.
func metadataEntry(md []byte) (FileEntry, []byte) {
	d := chunkdigest.Of(md)
	sum := d.Hex()
	return FileEntry{Filename: "metadata-" + sum + ".json", MediaType: "application/json", SizeBytes: int64(len(md)),
		SHA256: sum, Chunks: chunksFor(sum)}, d.Sidecar
}

func (s *Store) putMetadata(ctx context.Context, key string, e FileEntry, md, sidecar []byte) error {
	if err := s.st.Put(ctx, key+"/"+e.Filename, bytes.NewReader(md), int64(len(md))); err != nil {
		return &Error{Key: key, Msg: "write " + e.Filename, Err: err}
	}
	return s.putSidecar(ctx, key, e.Chunks, sidecar)
}

// putSidecar writes a data file's chunk digests, after the file and
// before the manifest that names both.
func (s *Store) putSidecar(ctx context.Context, key string, c Chunks, sidecar []byte) error {
	if err := s.st.Put(ctx, key+"/"+c.Filename, bytes.NewReader(sidecar), int64(len(sidecar))); err != nil {
		return &Error{Key: key, Msg: "write " + c.Filename, Err: err}
	}
	return nil
}

// commit writes the manifest: the single atomic Put that makes a generation
// visible.
func (s *Store) commit(ctx context.Context, key string, m *Manifest) error {
	b, err := m.Encode()
	if err != nil {
		return &Error{Key: key, Msg: "encode manifest", Err: err}
	}
	if err := s.st.Put(ctx, key+"/"+ManifestName, bytes.NewReader(b), int64(len(b))); err != nil {
		return &Error{Key: key, Msg: "write manifest", Err: err}
	}
	return nil
}

// ReadMetadata verifies and returns key's metadata document bytes.
func (s *Store) ReadMetadata(ctx context.Context, key string) ([]byte, *Manifest, error) {
	m, err := s.Manifest(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	var data []byte
	err = s.verified(ctx, key, m.Metadata.component(), func(r io.Reader) error {
		var err error
		data, err = io.ReadAll(r)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return data, m, nil
}

// ReadJSON verifies key's metadata document and decodes it into dst
// (numbers as json.Number when dst is a map or any).
func (s *Store) ReadJSON(ctx context.Context, key string, dst any) (*Manifest, error) {
	data, m, err := s.ReadMetadata(ctx, key)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return nil, &Error{Key: key, Msg: "metadata document cannot be decoded", Err: fmt.Errorf("%w: %v", ErrInvalidMetadata, err)}
	}
	return m, nil
}

// countingHash counts and hashes what passes through it.
type countingHash struct {
	ctx context.Context
	r   io.Reader
	h   hash.Hash
	n   int64
}

// verifyBlock bounds one read (and its hashing) of a verified object, so a
// consumer reading a whole array at once notices a cancelled context
// within a few milliseconds.
const verifyBlock = 4 << 20

func (c *countingHash) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > verifyBlock {
		p = p[:verifyBlock]
	}
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}

// verified streams data file c of key through consume while checking its
// size (truncated / size mismatch) and digest (checksum mismatch). A
// chunked file (schema 3) hands consume only verified chunks, read ahead
// and hashed in parallel; a whole-file digest (schema 2) is known only at
// the end. Either way the integrity verdict wins over a decoding error of
// consume: damaged bytes are reported as damage, not as the parse error
// they happen to cause.
func (s *Store) verified(ctx context.Context, key string, c component, consume func(io.Reader) error) error {
	if err := s.checkSize(ctx, key, c); err != nil {
		return err
	}
	var sc chunkdigest.Sidecar
	if c.chunks.Filename != "" {
		var err error
		if sc, err = s.sidecar(ctx, key, c); err != nil {
			return err
		}
	}
	rc, err := s.st.Get(ctx, key+"/"+c.name)
	if err != nil {
		return s.readErr(key, c.name, err)
	}
	defer rc.Close()
	if c.chunks.Filename != "" {
		vr := &integrity{r: chunkdigest.NewReader(ctx, rc, sc, 0, chunkdigest.Count(c.size))}
		defer vr.r.Close()
		cerr := consume(vr)
		if vr.err == nil && cerr == nil {
			_, cerr = io.Copy(io.Discard, vr) // the bytes consume left must verify too
		}
		if vr.err != nil {
			return s.integrityErr(ctx, key, c.name, vr.err)
		}
		return decodeErr(key, c.name, cerr)
	}
	ch := &countingHash{ctx: ctx, r: rc, h: sha256.New()}
	cerr := consume(ch)
	if _, err := io.Copy(io.Discard, ch); err != nil && cerr == nil {
		cerr = err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case ch.n < c.size:
		return keyErr(key, ErrTruncated, fmt.Sprintf("%s is truncated: read %d bytes, manifest says %d", c.name, ch.n, c.size))
	case ch.n > c.size:
		return keyErr(key, ErrSizeMismatch, fmt.Sprintf("%s: size mismatch: read %d bytes, manifest says %d", c.name, ch.n, c.size))
	}
	if h := hex.EncodeToString(ch.h.Sum(nil)); h != c.sum {
		return keyErr(key, ErrChecksum, fmt.Sprintf("%s: checksum mismatch: SHA-256 %s, manifest says %s", c.name, h, c.sum))
	}
	return decodeErr(key, c.name, cerr)
}

func decodeErr(key, name string, err error) error {
	if err == nil {
		return nil
	}
	var ae *Error
	if errors.As(err, &ae) {
		return err
	}
	return &Error{Key: key, Msg: "decode " + name, Err: err}
}

// checkSize compares a data file's stored size with the manifest's.
func (s *Store) checkSize(ctx context.Context, key string, c component) error {
	got, err := s.st.Stat(ctx, key+"/"+c.name)
	if err != nil {
		return s.readErr(key, c.name, err)
	}
	switch {
	case got < c.size:
		return keyErr(key, ErrTruncated, fmt.Sprintf("%s is truncated: %d bytes, manifest says %d", c.name, got, c.size))
	case got > c.size:
		return keyErr(key, ErrSizeMismatch, fmt.Sprintf("%s: size mismatch: %d bytes, manifest says %d", c.name, got, c.size))
	}
	return nil
}

func (s *Store) readErr(key, name string, err error) error {
	if errors.Is(err, store.ErrNotExist) {
		return &Error{Key: key, Msg: fmt.Sprintf("manifest names %s, which is missing", name), Err: ErrNotFound}
	}
	return &Error{Key: key, Msg: "read " + name, Err: err}
}

// sidecar reads and verifies data file c's chunk digests: their length
// follows from the size, their SHA-256 is the file's digest.
func (s *Store) sidecar(ctx context.Context, key string, c component) (chunkdigest.Sidecar, error) {
	want := chunkdigest.SidecarBytes(c.size)
	rc, err := s.st.Get(ctx, key+"/"+c.chunks.Filename)
	if err != nil {
		return chunkdigest.Sidecar{}, s.readErr(key, c.chunks.Filename, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, want+1))
	if err != nil {
		return chunkdigest.Sidecar{}, &Error{Key: key, Msg: "read " + c.chunks.Filename, Err: err}
	}
	if int64(len(b)) > want {
		return chunkdigest.Sidecar{}, keyErr(key, ErrSizeMismatch, fmt.Sprintf("%s: size mismatch: more than %d bytes for a %d-byte %s", c.chunks.Filename, want, c.size, c.name))
	}
	if int64(len(b)) < want {
		return chunkdigest.Sidecar{}, keyErr(key, ErrTruncated, fmt.Sprintf("%s is truncated: %d bytes, a %d-byte %s has %d chunk digests (%d bytes)", c.chunks.Filename, len(b), c.size, c.name, chunkdigest.Count(c.size), want))
	}
	sc, err := chunkdigest.ParseSidecar(b, c.size, c.sum)
	if err != nil {
		return chunkdigest.Sidecar{}, keyErr(key, ErrChecksum, fmt.Sprintf("%s (the chunk digests of %s): %v", c.chunks.Filename, c.name, err))
	}
	return sc, nil
}

// integrity records the first integrity error of a chunk reader, so it can
// win over the decoding error it causes in consume.
type integrity struct {
	r   *chunkdigest.Reader
	err error
}

func (v *integrity) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	if err != nil && err != io.EOF && v.err == nil {
		v.err = err
	}
	return n, err
}

// integrityErr names what a chunk reader found wrong in data file name.
func (s *Store) integrityErr(ctx context.Context, key, name string, err error) error {
	var me *chunkdigest.MismatchError
	var te *chunkdigest.TruncatedError
	var oe *chunkdigest.OverrunError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &me):
		return keyErr(key, ErrChecksum, fmt.Sprintf("%s: %v", name, me))
	case errors.As(err, &te):
		return keyErr(key, ErrTruncated, fmt.Sprintf("%s is truncated: read %d bytes, manifest says %d", name, te.Read, te.Want))
	case errors.As(err, &oe):
		return keyErr(key, ErrSizeMismatch, fmt.Sprintf("%s: size mismatch: read more than %d bytes, manifest says %d", name, oe.Want, oe.Want))
	}
	return &Error{Key: key, Msg: "read " + name, Err: err}
}
