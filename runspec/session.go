package runspec

import (
	"context"
	"fmt"
	"strings"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/formats/files"
	"github.com/vertebrae-eval/vertebrae/internal/digestcache"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Session is a loaded run file: the parsed file, its dataset and the
// files both hold open. The CLI and the Beam module's
// workers load run files through it, so their endpoints are the same bit
// for bit.
type Session struct {
	Spec    *Spec
	Dataset *retrieval.Dataset

	tables  endpointTables
	closers files.Closers
}

// DefaultDigestCache is the digest-cache directory the environment selects
// (VERTEBRAE_DIGEST_CACHE, else the user cache directory; "" when off).
func DefaultDigestCache() string { return digestcache.FromEnv().Dir() }

// Options configure Open.
type Options struct {
	// DigestCache is the directory where facts about unchanged embedding
	// files (their digests, that their values are finite) are kept between
	// runs; "" disables it.
	DigestCache string
}

// Open reads the run file at path and loads its dataset.
func Open(ctx context.Context, path string, opts Options) (*Session, error) {
	spec, err := Load(path)
	if err != nil {
		return nil, err
	}
	return OpenSpec(ctx, spec, opts)
}

// OpenSpec loads the dataset of a parsed run file.
func OpenSpec(ctx context.Context, spec *Spec, opts Options) (*Session, error) {
	s := &Session{Spec: spec}
	var err error
	s.Dataset, s.tables, err = loadDataset(ctx, &spec.Dataset, LoadOptions{Source: spec.Path, Config: spec.Retrieval, DigestCache: opts.DigestCache}, &s.closers)
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// UnknownExtractorError is a request for an extractor the run file does
// not define: a usage error of the caller.
type UnknownExtractorError struct {
	Path, Name string
	Names      []string // the extractors the file defines
}

func (e *UnknownExtractorError) Error() string {
	return fmt.Sprintf("run file %s has no extractor %q (extractors: %s)", e.Path, e.Name, strings.Join(e.Names, ", "))
}

// Lookup finds the run file's extractor called name.
func (s *Session) Lookup(name string) (*Extractor, error) {
	for i := range s.Spec.Extractors {
		if e := &s.Spec.Extractors[i]; e.Name == name {
			return e, nil
		}
	}
	names := make([]string, len(s.Spec.Extractors))
	for i, e := range s.Spec.Extractors {
		names[i] = e.Name
	}
	return nil, &UnknownExtractorError{Path: s.Spec.Path, Name: name, Names: names}
}

// Build builds one of the run file's extractors (SPEC §9.4); onnxLib is the
// ONNX Runtime library for ONNX extractors ("" = the default search). What
// it opens is released by Close.
func (s *Session) Build(ctx context.Context, e *Extractor, onnxLib string) (extract.Extractor, error) {
	return buildExtractor(ctx, s.Spec, e, s.tables, onnxLib, &s.closers)
}

// Entry builds the named extractor as an extract.Entry (branches and
// `cache:` included).
func (s *Session) Entry(ctx context.Context, name, onnxLib string) (extract.Entry, error) {
	e, err := s.Lookup(name)
	if err != nil {
		return extract.Entry{}, err
	}
	x, err := s.Build(ctx, e, onnxLib)
	if err != nil {
		return extract.Entry{}, err
	}
	return e.Entry(x), nil
}

// Entry is the extractor as an extract.Entry, built as x.
func (e *Extractor) Entry(x extract.Extractor) extract.Entry {
	return extract.Entry{Extractor: x, QueryBranch: e.QueryBranch, GalleryBranch: e.GalleryBranch, NoCache: !e.Cache}
}

// Close releases the session's files and stops its persistent workers.
func (s *Session) Close() { s.closers.Close() }
