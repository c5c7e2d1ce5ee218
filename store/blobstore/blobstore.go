// Package blobstore is the object-store backend for s3:// and gs:// URIs
// (SPEC §10.5), through gocloud.dev/blob with its s3blob and gcsblob
// drivers.
//
// URIs are gocloud's: s3://bucket/prefix?query and gs://bucket/prefix?query.
// The path is a prefix under which every object name lives (so many stores
// can share a bucket); the query goes to the driver unchanged, which is how
// an S3-compatible server is reached:
//
//	s3://bucket/cache?endpoint=http://127.0.0.1:7070&use_path_style=true&region=us-east-1
//
// (s3blob also knows disable_https, profile, anonymous, fips, dualstack,
// request_checksum_calculation, response_checksum_validation, ssetype,
// kmskeyid, ...; unknown parameters are an error). Credentials come from
// the SDKs' usual environment (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY,
// AWS_PROFILE, instance roles; GOOGLE_APPLICATION_CREDENTIALS or the
// metadata server), never from the URI: a URI with user information is
// refused, and no credential is ever logged or put into an error.
//
// Durability: an object is one upload (a single PUT, or for objects larger
// than the SDK's part size one multipart upload completed by a single
// request), which the object store makes visible atomically. A Put whose
// context is cancelled, whose reader fails or is short is aborted before
// that commit: the previous object stays readable and no partial object
// ever appears (an aborted multipart upload is cleaned up by the SDK; a
// bucket lifecycle rule for incomplete multipart uploads catches what a
// killed process leaves).
package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"path"
	"strings"
	"sync"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/gcsblob" // gs://
	_ "gocloud.dev/blob/s3blob"  // s3://
	"gocloud.dev/gcerrors"

	"github.com/vertebrae-eval/vertebrae/store"
)

// copyBufSize is the size of one Write to the driver.
const copyBufSize = 1 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// Store is an object store over a gocloud bucket, optionally below a
// prefix. It is safe for concurrent use.
type Store struct {
	bucket *blob.Bucket
	desc   string // scheme://bucket/prefix, for errors (no query)
}

var _ store.Store = (*Store)(nil)

// Schemes lists the URI schemes Open handles.
var Schemes = []string{"s3", "gs"}

// Open opens an s3:// or gs:// URI. Opening does no network I/O; a wrong
// bucket or missing credentials show up on the first operation.
func Open(ctx context.Context, uri string) (*Store, error) {
	u, err := url.Parse(uri)
	if err != nil {
		// url's error quotes the URI; it holds no credential we accept, but
		// a user may have put one there by mistake, so do not echo it.
		return nil, errors.New("object store URI does not parse as a URL")
	}
	if u.Scheme != "s3" && u.Scheme != "gs" {
		return nil, &store.UnsupportedURIError{URI: u.Redacted()}
	}
	if u.User != nil {
		return nil, fmt.Errorf("object store URI %s://…@%s: credentials in the URI are not accepted; they come from the SDK environment (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, GOOGLE_APPLICATION_CREDENTIALS)", u.Scheme, u.Host)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("object store URI %s://: no bucket name", u.Scheme)
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("object store URI %s://%s: a '#' fragment is not allowed", u.Scheme, u.Host)
	}
	prefix := strings.Trim(u.Path, "/")
	desc := u.Scheme + "://" + u.Host
	if prefix != "" {
		if err := store.ValidateName(prefix); err != nil {
			return nil, fmt.Errorf("object store URI %s: prefix: %w", desc, err)
		}
		desc += "/" + prefix
	}
	bu := url.URL{Scheme: u.Scheme, Host: u.Host, RawQuery: u.RawQuery}
	b, err := blob.OpenBucket(ctx, bu.String())
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", desc, err)
	}
	if prefix != "" {
		b = blob.PrefixedBucket(b, prefix+"/")
	}
	return &Store{bucket: b, desc: desc}, nil
}

// New wraps an open bucket (desc names it in errors). The store owns the
// bucket: Close closes it.
func New(b *blob.Bucket, desc string) *Store { return &Store{bucket: b, desc: desc} }

func (s *Store) String() string { return s.desc }

func (s *Store) wrap(op, name string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("%s: %s: %w (%v)", s.desc, name, store.ErrNotExist, err)
	}
	return fmt.Errorf("%s: %s %s: %w", s.desc, op, name, err)
}

// contentType is what an object is served as; set explicitly so gocloud
// does not buffer the head of each object to sniff it.
func contentType(name string) string {
	if path.Ext(name) == ".json" {
		return "application/json"
	}
	return "application/octet-stream"
}

// Put implements store.Store: one upload, committed by the writer's Close
// only when exactly size bytes were read and ctx is still live; otherwise
// the upload's context is cancelled before Close, which is gocloud's way
// to abort a write.
func (s *Store) Put(ctx context.Context, name string, r io.Reader, size int64) (err error) {
	if err := store.ValidateName(name); err != nil {
		return fmt.Errorf("%s: %w", s.desc, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: put %s: %w", s.desc, name, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.bucket.NewWriter(wctx, name, &blob.WriterOptions{ContentType: contentType(name)})
	if err != nil {
		return s.wrap("put", name, err)
	}
	n, err := copyCtx(ctx, w, r, size)
	if err == nil && size >= 0 && n != size {
		if n > size {
			err = fmt.Errorf("reader has more than the %d bytes announced", size)
		} else {
			err = fmt.Errorf("read %d bytes, expected %d", n, size)
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		_ = w.Close() // aborted: reports the cancellation, commits nothing
		return fmt.Errorf("%s: put %s: %w", s.desc, name, err)
	}
	if err := w.Close(); err != nil {
		return s.wrap("put", name, err)
	}
	return nil
}

// copyCtx copies src to dst through one pooled buffer, checking ctx
// between buffers and reading at most size+1 bytes when size >= 0.
func copyCtx(ctx context.Context, dst io.Writer, src io.Reader, size int64) (int64, error) {
	remaining := int64(-1)
	if size >= 0 {
		remaining = size + 1
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var n int64
	for remaining != 0 {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		b := buf
		if remaining > 0 && remaining < int64(len(b)) {
			b = b[:remaining]
		}
		m, rerr := io.ReadFull(src, b)
		if m > 0 {
			if _, werr := dst.Write(b[:m]); werr != nil {
				return n, werr
			}
			n += int64(m)
			if remaining > 0 {
				remaining -= int64(m)
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return n, rerr
		}
	}
	return n, ctx.Err()
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := store.ValidateName(name); err != nil {
		return nil, fmt.Errorf("%s: %w", s.desc, err)
	}
	r, err := s.bucket.NewReader(ctx, name, nil)
	if err != nil {
		return nil, s.wrap("get", name, err)
	}
	return r, nil
}

// Stat implements store.Store.
func (s *Store) Stat(ctx context.Context, name string) (int64, error) {
	if err := store.ValidateName(name); err != nil {
		return 0, fmt.Errorf("%s: %w", s.desc, err)
	}
	a, err := s.bucket.Attributes(ctx, name)
	if err != nil {
		return 0, s.wrap("stat", name, err)
	}
	return a.Size, nil
}

// List implements store.Store. S3 and GCS list in byte order of the key
// (UTF-8 binary order); a server that does not is reported, not silently
// passed on, because callers rely on the order.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
		prev := ""
		first := true
		for {
			obj, err := it.Next(ctx)
			if err == io.EOF {
				return
			}
			if err != nil {
				yield("", fmt.Errorf("%s: list %q: %w", s.desc, prefix, err))
				return
			}
			if obj.IsDir {
				continue
			}
			if !first && obj.Key <= prev {
				yield("", fmt.Errorf("%s: list %q: the server listed %q after %q, not in lexicographic order", s.desc, prefix, obj.Key, prev))
				return
			}
			first, prev = false, obj.Key
			if !yield(obj.Key, nil) {
				return
			}
		}
	}
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := store.ValidateName(name); err != nil {
		return fmt.Errorf("%s: %w", s.desc, err)
	}
	if err := s.bucket.Delete(ctx, name); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return s.wrap("delete", name, err)
	}
	return nil
}

// Close implements store.Store.
func (s *Store) Close() error { return s.bucket.Close() }
