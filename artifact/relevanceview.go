package artifact

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// ReadRelevanceView is ReadRelevance for a worker that holds only some
// gallery rows (a gallery shard): the same checks and the same recomputed
// fingerprints, but the document is streamed and only the IDs of the held
// rows are kept. Doc.GalleryIDs has one entry per gallery row, empty for
// the rows not held; label-derived relevance keeps one class id per row and
// Doc.RelevanceLabels only the query labels. Memory is O(queries + pairs +
// held rows) plus 16 bytes per gallery row, instead of the whole document
// and every ID string.
//
// Whatever the stream does not take as written by this package (a document
// that fails a check, or one whose keys are not in canonical order) is read
// whole by ReadRelevance, so errors and results are exactly ReadRelevance's.
func (s *Store) ReadRelevanceView(ctx context.Context, key string, held func(g int) bool) (*Protocol, error) {
	return s.readRelevanceView(ctx, key, viewOptions{held: held, keepIDs: true})
}

// viewOptions say what a streamed relevance view keeps and verifies.
type viewOptions struct {
	// held selects the gallery rows whose IDs are kept (nil: every row).
	held func(g int) bool
	// keepIDs false keeps no gallery ID at all: Doc.GalleryIDs is nil and
	// Protocol.GalleryName finds one when a message needs it.
	keepIDs bool
	// trusted skips what needs every gallery ID hashed: the recomputed
	// relevance fingerprint and the gallery ids_sha256 (SPEC §11.3: a
	// gallery shard leaves those checks to finalize, which reads the whole
	// list once). The document's bytes are still verified chunk by chunk.
	trusted bool
}

// idLookup names gallery rows of a relevance artifact for messages of a
// worker that keeps no ID: the first row named selects streams the
// document once, keeping the IDs of every row named selects (a shard's
// rows: a message lists up to ten of them), and later ones read those;
// any other row is looked up on its own.
func (s *Store) idLookup(ctx context.Context, key string, named func(g int) bool) func(g int) string {
	var once sync.Once
	var ids []string
	return func(g int) string {
		if named != nil && named(g) {
			once.Do(func() {
				if v, err := s.readRelevanceView(ctx, key, viewOptions{held: named, keepIDs: true, trusted: true}); err == nil {
					ids = v.Doc.GalleryIDs
				}
			})
			if g >= 0 && g < len(ids) {
				return ids[g]
			}
		}
		return s.galleryID(ctx, key, g)
	}
}

// galleryID is the ID of gallery row g of a relevance artifact, streamed
// once more for a message that names it; a failed read names the row.
func (s *Store) galleryID(ctx context.Context, key string, g int) string {
	v, err := s.readRelevanceView(ctx, key, viewOptions{held: func(i int) bool { return i == g }, keepIDs: true, trusted: true})
	if err != nil || g < 0 || g >= len(v.Doc.GalleryIDs) {
		return fmt.Sprintf("<gallery row %d>", g)
	}
	return v.Doc.GalleryIDs[g]
}

func (s *Store) readRelevanceView(ctx context.Context, key string, o viewOptions) (*Protocol, error) {
	p, err := s.streamRelevance(ctx, key, o)
	if err == nil {
		return p, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	return s.ReadRelevance(ctx, key)
}

// errStream sends a document to the whole-document reader.
var errStream = errors.New("relevance view: not streamable")

// streamRelevance reads a relevance artifact in one pass; any error (a
// document it does not stream, a failed check) is left to ReadRelevance to
// report.
func (s *Store) streamRelevance(ctx context.Context, key string, o viewOptions) (*Protocol, error) {
	m, err := s.Manifest(ctx, key)
	if err != nil {
		return nil, err
	}
	var p *Protocol
	err = s.verified(ctx, key, m.Metadata.component(), func(r io.Reader) error {
		var err error
		p, err = decodeRelevanceView(ctx, key, r, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// relevanceStream is the state of one streamed relevance document.
type relevanceStream struct {
	ctx     context.Context
	sc      *jsonScanner
	opts    viewOptions
	fields  map[string]json.RawMessage
	dataset *string
	fp      *retrieval.RelevanceHasher
	ids     []string // held IDs, by row
	idList  *canonjson.StringsHasher
	ng      int
	classes *retrieval.ClassesBuilder
	qLabels []string
	labels  bool
	seenIDs bool // gallery_ids read
}

func decodeRelevanceView(ctx context.Context, key string, r io.Reader, o viewOptions) (*Protocol, error) {
	st := &relevanceStream{ctx: ctx, sc: newJSONScanner(r), opts: o, fields: map[string]json.RawMessage{}}
	if err := st.document(); err != nil {
		return nil, err
	}
	if !st.seenIDs {
		return nil, errStream
	}
	// Every other field is decoded as ReadJSON decodes the whole document.
	obj, err := json.Marshal(st.fields)
	if err != nil {
		return nil, errStream
	}
	doc := &Relevance{}
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if err := dec.Decode(doc); err != nil {
		return nil, errStream
	}
	doc.GalleryIDs = st.ids
	if st.labels {
		doc.RelevanceLabels = &RelevanceLabels{Query: st.qLabels}
	}
	nq, ng := len(doc.QueryIDs), st.ng
	if doc.ArtifactType != TypeRelevance || doc.DatasetIdentityKey != *st.dataset || nq != doc.NQueries || ng != doc.NGallery || nq == 0 || ng == 0 ||
		(doc.Relevance == nil) == (doc.RelevanceLabels == nil) {
		return nil, errStream
	}
	p := &Protocol{Key: key, Doc: doc, view: true, trusted: o.trusted}
	if !o.trusted {
		if p.galleryIDsSHA256, err = st.idList.Sum(); err != nil {
			return nil, errStream
		}
	}
	bad := func(string, ...any) error { return errStream }
	var rf string
	if st.labels {
		if len(st.qLabels) != nq || st.classes == nil {
			return nil, errStream
		}
		if p.Classes, err = st.classes.Classes(st.qLabels); err != nil {
			return nil, errStream
		}
		if len(p.Classes.Gallery) != ng {
			return nil, errStream
		}
		if !o.trusted {
			rf, err = st.fp.Labels(doc.QueryIDs, st.qLabels)
		}
	} else {
		triples, perr := p.pairs(nq, ng, !o.trusted, bad)
		if perr != nil {
			return nil, errStream
		}
		if !o.trusted {
			rf, err = st.fp.Pairs(doc.QueryIDs, triples)
		}
	}
	if !o.trusted && (err != nil || rf != doc.ProtocolFingerprint) {
		return nil, errStream
	}
	if p.Exclusions, err = exclusionLists(key, doc.Exclusions, nq, ng); err != nil {
		return nil, errStream
	}
	return p, nil
}

// document walks the top-level object: the gallery IDs and gallery labels
// stream into the hashes, every other field is kept as raw JSON.
func (st *relevanceStream) document() error {
	sc := st.sc
	if c, err := sc.next(); err != nil || c != '{' {
		return errStream
	}
	return sc.members(func(k string) error {
		if _, dup := st.fields[k]; dup {
			return errStream
		}
		switch k {
		case "gallery_ids":
			if st.dataset == nil || st.seenIDs {
				return errStream // the fingerprint's text starts with the dataset key
			}
			st.seenIDs = true
			if st.opts.trusted {
				return st.countIDs()
			}
			st.fp = retrieval.NewRelevanceHasher(*st.dataset)
			st.idList = canonjson.NewStringsHasher()
			var kept []heldID
			// Runs of plain IDs (canonical text = the ID in quotes) reach
			// both hashes as one canonical text each, not ID by ID.
			var run []byte
			nrun := 0
			flush := func() {
				st.fp.GalleryIDsCanonical(run, nrun)
				st.idList.AddCanonical(run, nrun)
				run, nrun = run[:0], 0
			}
			if err := sc.strings(func(id []byte) error {
				g := st.ng
				if g%4096 == 0 {
					if err := st.ctx.Err(); err != nil {
						return err
					}
				}
				st.ng++
				if canonjson.PlainString(id) {
					if nrun > 0 {
						run = append(run, ',')
					}
					run = append(append(append(run, '"'), id...), '"')
					if nrun++; len(run) >= 64<<10 {
						flush()
					}
				} else {
					flush()
					st.fp.GalleryID(id)
					st.idList.Add(id)
				}
				if st.opts.keepIDs && (st.opts.held == nil || st.opts.held(g)) {
					kept = append(kept, heldID{g, string(id)})
				}
				return nil
			}); err != nil {
				return err
			}
			flush()
			st.keep(kept)
			return nil
		case "relevance_labels":
			if !st.seenIDs || st.labels {
				return errStream
			}
			st.labels = true
			if c, err := sc.next(); err != nil || c != '{' {
				return errStream
			}
			seen := map[string]bool{}
			return sc.members(func(k string) error {
				if seen[k] {
					return errStream
				}
				seen[k] = true
				switch k {
				case "gallery":
					st.classes = retrieval.NewClassesBuilder(st.ng)
					n := 0
					err := sc.strings(func(l []byte) error {
						n++
						if st.fp != nil {
							st.fp.GalleryLabel(l)
						}
						return st.classes.Gallery(l)
					})
					if err != nil || n != st.ng {
						return errStream
					}
					return nil
				case "query":
					if !seen["gallery"] {
						return errStream
					}
					raw, err := sc.raw()
					if err != nil || json.Unmarshal(raw, &st.qLabels) != nil || st.qLabels == nil {
						return errStream
					}
					return nil
				default:
					_, err := sc.raw()
					return err
				}
			})
		default:
			raw, err := sc.raw()
			if err != nil {
				return err
			}
			if k == "dataset_identity_key" {
				var d string
				if json.Unmarshal(raw, &d) != nil {
					return errStream
				}
				st.dataset = &d
			}
			st.fields[k] = raw
			return nil
		}
	})
}

// countIDs reads gallery_ids without hashing them (a trusted view),
// keeping the held rows' IDs.
func (st *relevanceStream) countIDs() error {
	held, keep := st.opts.held, st.opts.keepIDs
	if !keep {
		n, err := st.sc.countStrings(st.ctx)
		st.ng = n
		return err
	}
	var kept []heldID
	err := st.sc.strings(func(id []byte) error {
		g := st.ng
		if g%(1<<16) == 0 {
			if err := st.ctx.Err(); err != nil {
				return err
			}
		}
		st.ng++
		if keep && (held == nil || held(g)) {
			kept = append(kept, heldID{g, string(id)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.keep(kept)
	return nil
}

// keep sets the view's gallery IDs: one entry per row, empty for the rows
// not held; none at all for a view that keeps no ID.
func (st *relevanceStream) keep(kept []heldID) {
	if !st.opts.keepIDs {
		return
	}
	st.ids = make([]string, st.ng)
	for _, k := range kept {
		st.ids[k.g] = k.id
	}
}

// heldID is the ID of a held gallery row.
type heldID struct {
	g  int
	id string
}

// jsonScanner reads JSON text from a stream without holding it: strings
// and raw values are copied out one at a time.
type jsonScanner struct {
	r   *bufio.Reader
	buf []byte
}

func newJSONScanner(r io.Reader) *jsonScanner {
	return &jsonScanner{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next byte that is not JSON whitespace.
func (s *jsonScanner) next() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, nil
	}
}

// seq walks the elements of an array or object whose opening bracket has
// been read, up to the closing byte: elem gets each element's first byte
// (read) and reads the rest.
func (s *jsonScanner) seq(closing byte, elem func(c byte) error) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c == closing {
		return nil
	}
	for {
		if err := elem(c); err != nil {
			return err
		}
		if c, err = s.next(); err != nil {
			return err
		}
		switch c {
		case closing:
			return nil
		case ',':
			if c, err = s.next(); err != nil {
				return err
			}
		default:
			return errStream
		}
	}
}

// members calls f for every member of an object whose '{' has been read,
// with the scanner positioned at the member's value.
func (s *jsonScanner) members(f func(key string) error) error {
	return s.seq('}', func(c byte) error {
		if c != '"' {
			return errStream
		}
		k, err := s.str()
		if err != nil {
			return err
		}
		if c, err = s.next(); err != nil || c != ':' {
			return errStream
		}
		return f(k)
	})
}

// strings calls f for every element of an array of strings, with its
// decoded bytes (valid during the call).
func (s *jsonScanner) strings(f func([]byte) error) error {
	c, err := s.next()
	if err != nil || c != '[' {
		return errStream
	}
	return s.seq(']', func(c byte) error {
		if c != '"' {
			return errStream
		}
		v, err := s.strBytes()
		if err != nil {
			return err
		}
		return f(v)
	})
}

// countStrings reads an array of strings without decoding them and
// returns how many it holds: a tight scan of the buffered bytes for the
// quotes, backslashes and separators (10^7 IDs in about 30 ms, not the
// 130 ms of decoding them one by one). Anything but strings separated by
// commas and JSON whitespace is errStream.
func (s *jsonScanner) countStrings(ctx context.Context) (int, error) {
	c, err := s.next()
	if err != nil || c != '[' {
		return 0, errStream
	}
	const (
		value   = iota // before an element (or the closing bracket, first)
		inside         // within a string
		escaped        // within a string, after a backslash
		after          // after an element: a comma or the closing bracket
	)
	state, n, first := value, 0, true
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if _, err := s.r.Peek(1); err != nil {
			return 0, errStream
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		i := 0
	scan:
		for i < len(buf) {
			switch state {
			case inside:
				j := indexQuoteOrBackslash(buf[i:])
				if j < 0 {
					i = len(buf)
					break scan
				}
				i += j
				if buf[i] == '"' {
					state = after
					n++
				} else {
					state = escaped
				}
				i++
			case escaped:
				state = inside
				i++
			default:
				b := buf[i]
				i++
				switch {
				case b == ' ' || b == '\t' || b == '\n' || b == '\r':
				case state == value && b == '"':
					state, first = inside, false
				case b == ']' && (state == after || first):
					if _, err := s.r.Discard(i); err != nil {
						return 0, errStream
					}
					return n, nil
				case state == after && b == ',':
					state = value
				default:
					return 0, errStream
				}
			}
		}
		if _, err := s.r.Discard(i); err != nil {
			return 0, errStream
		}
	}
}

// indexQuoteOrBackslash is the index of the first quote or backslash in b, or -1.
func indexQuoteOrBackslash(b []byte) int {
	q := bytes.IndexByte(b, '"')
	if q < 0 {
		q = len(b)
	}
	if e := bytes.IndexByte(b[:q], '\\'); e >= 0 {
		return e
	}
	if q == len(b) {
		return -1
	}
	return q
}

// str reads a string whose opening quote has been read, decoding it as
// encoding/json does (escapes; invalid UTF-8 becomes U+FFFD).
func (s *jsonScanner) str() (string, error) {
	b, err := s.strBytes()
	return string(b), err
}

// strBytes is str returning the decoded bytes, valid until the next read.
func (s *jsonScanner) strBytes() ([]byte, error) {
	chunk, err := s.r.ReadSlice('"')
	// The common case: the whole string in the reader's buffer, nothing
	// escaped, all ASCII. Its bytes are returned in place (valid until the
	// next read), not copied.
	if err == nil && canonjson.PlainString(chunk[:len(chunk)-1]) {
		return chunk[:len(chunk)-1], nil
	}
	s.buf = append(s.buf[:0], chunk...)
	plain := true
	for first := true; ; first = false {
		if !first {
			chunk, err = s.r.ReadSlice('"')
			s.buf = append(s.buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return nil, err
		}
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for i := len(s.buf) - 2; i >= 0 && s.buf[i] == '\\'; i-- {
			n++
		}
		if n > 0 {
			plain = false
		}
		if n%2 == 0 {
			break
		}
	}
	body := s.buf[:len(s.buf)-1]
	if plain {
		for _, b := range body {
			if b < 0x20 || b == '\\' || b >= utf8.RuneSelf {
				plain = false
				break
			}
		}
	}
	if plain || utf8.Valid(body) && !hasEscapeOrControl(body) {
		return body, nil
	}
	quoted := make([]byte, 0, len(body)+2)
	quoted = append(append(append(quoted, '"'), body...), '"')
	var v string
	if err := json.Unmarshal(quoted, &v); err != nil {
		return nil, errStream
	}
	return []byte(v), nil
}

func hasEscapeOrControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '\\' {
			return true
		}
	}
	return false
}

// raw returns the text of the next value (checked by encoding/json).
func (s *jsonScanner) raw() (json.RawMessage, error) {
	c, err := s.next()
	if err != nil {
		return nil, err
	}
	out := []byte{c}
	switch c {
	case '"':
		v, err := s.rawString(out)
		return v, err
	case '{', '[':
		depth := 1
		for depth > 0 {
			b, err := s.r.ReadByte()
			if err != nil {
				return nil, err
			}
			out = append(out, b)
			switch b {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			case '"':
				if out, err = s.rawString(out); err != nil {
					return nil, err
				}
			}
		}
	default: // a number or a literal: up to the next delimiter
		for {
			b, err := s.r.ReadByte()
			if err != nil {
				return nil, err
			}
			if b == ',' || b == '}' || b == ']' || b == ' ' || b == '\t' || b == '\n' || b == '\r' {
				if err := s.r.UnreadByte(); err != nil {
					return nil, err
				}
				break
			}
			out = append(out, b)
		}
	}
	if !json.Valid(out) {
		return nil, errStream
	}
	return out, nil
}

// rawString appends the rest of a string (its opening quote is in out).
func (s *jsonScanner) rawString(out []byte) ([]byte, error) {
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			return nil, err
		}
		out = append(out, b)
		switch b {
		case '\\':
			e, err := s.r.ReadByte()
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		case '"':
			return out, nil
		}
	}
}
