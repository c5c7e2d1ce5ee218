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
// Durability: an object is one upload, which the object store makes
// visible atomically: a single PUT (S3 objects under 16 MiB, the SDK's
// multipart threshold) or one multipart upload committed by its single
// CompleteMultipartUpload (larger S3 objects; GCS uploads likewise commit
// once at the end). A Put whose context is cancelled, whose reader fails
// or holds the wrong number of bytes is aborted before that commit: the
// previous object stays readable, no partial object ever appears, and an
// aborted multipart upload's parts are deleted. (A process killed during a
// multipart upload leaves invisible parts; a bucket lifecycle rule for
// incomplete multipart uploads removes them.)
package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/s3blob" // s3://
	"gocloud.dev/gcerrors"
	"gocloud.dev/gcp"

	"github.com/vertebrae-eval/vertebrae/store"
)

// Store is an object store over a gocloud bucket, optionally below a
// prefix. It is safe for concurrent use.
type Store struct {
	bucket        *blob.Bucket
	desc          string // scheme://bucket/prefix, for errors (no query)
	abortByCancel bool   // the driver aborts a write only by a cancelled context (gcsblob)
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
	var b *blob.Bucket
	if u.Scheme == "gs" {
		b, err = openGCS(ctx, &bu)
	} else {
		b, err = blob.OpenBucket(ctx, bu.String())
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", desc, err)
	}
	if prefix != "" {
		b = blob.PrefixedBucket(b, prefix+"/")
	}
	return &Store{bucket: b, desc: desc, abortByCancel: u.Scheme == "gs"}, nil
}

// openGCS opens a gs:// bucket. gocloud's default gs:// opener, when it
// finds no credentials, prints a warning to stdout (where the CLI writes
// its JSON) and carries on with empty ones, and probes the GCE metadata
// server even off GCP; here missing credentials are an error, and the
// metadata server is asked only by the Google library's own credential
// search (last, as on GCE it must be). STORAGE_EMULATOR_HOST (a local GCS
// emulator) and anonymous=true need no credentials.
func openGCS(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	q := u.Query()
	opener := &gcsblob.URLOpener{}
	switch {
	case os.Getenv("STORAGE_EMULATOR_HOST") != "":
		opener.Client = gcp.NewAnonymousHTTPClient(gcp.DefaultTransport())
	case q.Get("anonymous") == "true" || q.Get("access_id") == "-":
		// gcsblob makes the unauthenticated client itself.
	default:
		creds, err := gcp.DefaultCredentials(ctx)
		if err != nil {
			return nil, fmt.Errorf("no Google Cloud credentials (set GOOGLE_APPLICATION_CREDENTIALS, run `gcloud auth application-default login`, or run on GCP; anonymous=true for public buckets): %w", err)
		}
		ts := gcp.CredentialsTokenSource(creds)
		client, err := gcp.NewHTTPClient(gcp.DefaultTransport(), ts)
		if err != nil {
			return nil, err
		}
		opener.Client, opener.TokenSource = client, ts
	}
	return opener.OpenBucketURL(ctx, u)
}

// New wraps an open bucket (desc names it in errors). The store owns the
// bucket: Close closes it. Writes are aborted by cancelling their context,
// which is safe for every gocloud driver.
func New(b *blob.Bucket, desc string) *Store {
	return &Store{bucket: b, desc: desc, abortByCancel: true}
}

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

// abortGrace is how long an S3 upload may keep running after the caller's
// context is cancelled: the upload notices at its next read and aborts
// itself (which, for a multipart upload, needs a live context to delete
// the parts); only a request stuck on the network is cut off after this.
const abortGrace = 10 * time.Second

// Put implements store.Store: one upload, committed only when exactly size
// bytes were read and ctx is still live.
//
// The upload reads through a checkingReader, which turns a reader error, a
// wrong size and a cancelled ctx into a read error. How a read error
// aborts differs by driver: s3blob hands the reader to the SDK's upload
// manager, which on a read error sends no PutObject, or aborts the
// multipart upload (with a live context, hence the upload context is not
// the caller's); gcsblob copies into a writer that commits on Close unless
// its context was cancelled first (gocloud's documented way to abort), so
// there the reader cancels the upload context before it reports the error.
func (s *Store) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if err := store.ValidateName(name); err != nil {
		return fmt.Errorf("%s: %w", s.desc, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: put %s: %w", s.desc, name, err)
	}
	uctx, ucancel := context.WithCancel(context.WithoutCancel(ctx))
	defer ucancel()
	cr := &checkingReader{ctx: ctx, r: r, size: size}
	if s.abortByCancel {
		cr.abort = ucancel
		stop := context.AfterFunc(ctx, ucancel)
		defer stop()
	} else {
		stop := context.AfterFunc(ctx, func() { time.AfterFunc(abortGrace, ucancel) })
		defer stop()
	}
	err := s.bucket.Upload(uctx, name, cr, &blob.WriterOptions{ContentType: contentType(name)})
	if cr.err != nil {
		// The reader's own error says what happened; the driver's says only
		// that the upload failed.
		return fmt.Errorf("%s: put %s: %w", s.desc, name, cr.err)
	}
	if err != nil {
		return s.wrap("put", name, err)
	}
	return nil
}

// checkingReader passes r through and fails, instead of ending, when ctx is
// cancelled, r fails, or r does not hold exactly size bytes (size >= 0).
type checkingReader struct {
	ctx   context.Context
	r     io.Reader
	size  int64
	n     int64
	err   error  // the first failure, sticky
	abort func() // called once before the first failure is reported
}

func (c *checkingReader) fail(err error) (int, error) {
	if c.err == nil {
		c.err = err
		if c.abort != nil {
			c.abort()
		}
	}
	return 0, c.err
}

func (c *checkingReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if err := c.ctx.Err(); err != nil {
		return c.fail(err)
	}
	if c.size >= 0 && int64(len(p)) > c.size-c.n+1 {
		p = p[:c.size-c.n+1] // one byte more than announced reveals a long reader
	}
	m, err := c.r.Read(p)
	c.n += int64(m)
	if c.size >= 0 && c.n > c.size {
		return c.fail(fmt.Errorf("reader has more than the %d bytes announced", c.size))
	}
	switch {
	case err == io.EOF:
		if c.size >= 0 && c.n != c.size {
			return c.fail(fmt.Errorf("read %d bytes, expected %d", c.n, c.size))
		}
		if err := c.ctx.Err(); err != nil {
			return c.fail(err)
		}
		return m, io.EOF
	case err != nil:
		return c.fail(err)
	}
	return m, nil
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

// As exposes the driver's types (gocloud's escape hatch, e.g. **s3.Client
// for s3://); see gocloud.dev/blob's Bucket.As.
func (s *Store) As(i any) bool { return s.bucket.As(i) }

// Close implements store.Store.
func (s *Store) Close() error { return s.bucket.Close() }
