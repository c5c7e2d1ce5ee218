package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
	"gocloud.dev/gcp"

	"github.com/vertebrae-eval/vertebrae/store"
)

// Store is an object store over a gocloud bucket, optionally below a
// prefix. It is safe for concurrent use.
type Store struct {
	bucket        *blob.Bucket
	desc          string // scheme://bucket/prefix (no query)
	where         string // desc and the endpoint, for errors
	bucketName    string
	abortByCancel bool        // the driver aborts a write only by a cancelled context (gcsblob)
	bucketSeen    atomic.Bool // the bucket answered a request: a NotFound is the object's
	prefix        string      // the URI's prefix ("" for none): object keys are prefix + "/" + name
	sse           s3blob.Options
	// singleCopyLimit is the largest object copied by one request (S3
	// CopyObject: 5 GiB); larger ones are copied in parts of copyPartBytes.
	singleCopyLimit, copyPartBytes int64
	staleTempAge                   time.Duration // a PutNamed deletes older temporary objects
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
	q := u.Query()
	netw, err := networkFromQuery(q)
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", desc, err)
	}
	var b *blob.Bucket
	var endpoint string
	var sse s3blob.Options
	if u.Scheme == "gs" {
		b, endpoint, err = openGCS(ctx, u.Host, q, netw)
	} else {
		b, endpoint, sse, err = openS3(ctx, u.Host, q, netw)
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", desc, err)
	}
	if prefix != "" {
		b = blob.PrefixedBucket(b, prefix+"/")
	}
	return &Store{bucket: b, desc: desc, where: desc + " at " + endpoint, bucketName: u.Host, abortByCancel: u.Scheme == "gs",
		prefix: prefix, sse: sse, singleCopyLimit: copyLimit(u.Scheme), copyPartBytes: s3CopyPartBytes, staleTempAge: staleTempAge}, nil
}

// openS3 opens an s3:// bucket as gocloud's s3blob URL opener does (the
// same query parameters), with the client's network, retries and logging
// set here: gocloud's opener has no way to set them.
func openS3(ctx context.Context, bucket string, q url.Values, n Network) (*blob.Bucket, string, s3blob.Options, error) {
	var opts s3blob.Options
	var s3opts []func(*s3.Options)
	if q.Has("ssetype") {
		v := q.Get("ssetype")
		q.Del("ssetype")
		found := false
		for _, t := range s3types.ServerSideEncryptionAes256.Values() {
			if strings.EqualFold(string(t), v) {
				opts.EncryptionType, found = t, true
			}
		}
		if !found {
			return nil, "", opts, fmt.Errorf("query parameter ssetype=%q: not a server-side encryption type (AES256, aws:kms, aws:kms:dsse)", v)
		}
	}
	if q.Has("kmskeyid") {
		opts.KMSEncryptionID = q.Get("kmskeyid")
		q.Del("kmskeyid")
	}
	for _, key := range []string{"accelerate", "disable_https", "use_path_style", "s3ForcePathStyle"} {
		if !q.Has(key) {
			continue
		}
		v, err := strconv.ParseBool(q.Get(key))
		if err != nil {
			return nil, "", opts, fmt.Errorf("query parameter %s=%q: want true or false", key, q.Get(key))
		}
		q.Del(key)
		switch key {
		case "accelerate":
			s3opts = append(s3opts, func(o *s3.Options) { o.UseAccelerate = v })
		case "disable_https":
			s3opts = append(s3opts, func(o *s3.Options) { o.EndpointOptions.DisableHTTPS = v })
		default:
			s3opts = append(s3opts, func(o *s3.Options) { o.UsePathStyle = v })
		}
	}
	endpoint := q.Get("endpoint")
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, "", opts, err
	}
	cfg.HTTPClient = &http.Client{Transport: n.transport()}
	base := cfg.Retryer
	cfg.Retryer = func() aws.Retryer {
		var r aws.Retryer = retry.NewStandard()
		if base != nil {
			r = base()
		}
		r = retry.AddWithMaxAttempts(r, n.MaxAttempts)
		return retry.AddWithMaxBackoffDelay(r, n.MaxBackoff)
	}
	cfg.Logger = sdkLogger
	cfg.ClientLogMode = 0
	opts.RequestChecksumCalculation = cfg.RequestChecksumCalculation
	b, err := s3blob.OpenBucket(ctx, s3.NewFromConfig(cfg, s3opts...), bucket, &opts)
	if err != nil {
		return nil, "", opts, err
	}
	if endpoint == "" {
		endpoint = "AWS S3"
		if cfg.Region != "" {
			endpoint += " region " + cfg.Region
		}
	}
	return b, endpoint, opts, nil
}

// openGCS opens a gs:// bucket. gocloud's default gs:// opener, when it
// finds no credentials, prints a warning to stdout (where the CLI writes
// its JSON) and carries on with empty ones, and probes the GCE metadata
// server even off GCP; here missing credentials are an error, and the
// metadata server is asked only by the Google library's own credential
// search (last, as on GCE it must be). STORAGE_EMULATOR_HOST (a local GCS
// emulator) and anonymous=true need no credentials.
func openGCS(ctx context.Context, bucket string, q url.Values, n Network) (*blob.Bucket, string, error) {
	opener := &gcsblob.URLOpener{}
	endpoint := "Google Cloud Storage"
	switch {
	case os.Getenv("STORAGE_EMULATOR_HOST") != "":
		endpoint = os.Getenv("STORAGE_EMULATOR_HOST")
		opener.Client = gcp.NewAnonymousHTTPClient(n.transport())
	case q.Get("anonymous") == "true" || q.Get("access_id") == "-":
		// gcsblob makes the unauthenticated client itself.
	default:
		creds, err := gcp.DefaultCredentials(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("no Google Cloud credentials (set GOOGLE_APPLICATION_CREDENTIALS, run `gcloud auth application-default login`, or run on GCP; anonymous=true for public buckets): %w", err)
		}
		ts := gcp.CredentialsTokenSource(creds)
		client, err := gcp.NewHTTPClient(n.transport(), ts)
		if err != nil {
			return nil, "", err
		}
		opener.Client, opener.TokenSource = client, ts
	}
	u := &url.URL{Scheme: "gs", Host: bucket, RawQuery: q.Encode()}
	b, err := opener.OpenBucketURL(ctx, u)
	return b, endpoint, err
}

// New wraps an open bucket (desc names it in errors). The store owns the
// bucket: Close closes it. Writes are aborted by cancelling their context,
// which is safe for every gocloud driver.
func New(b *blob.Bucket, desc string) *Store {
	return &Store{bucket: b, desc: desc, where: desc, abortByCancel: true, singleCopyLimit: math.MaxInt64, staleTempAge: staleTempAge}
}

func (s *Store) String() string { return s.desc }

// ErrBucketNotFound reports that the store's bucket does not exist (as
// distinct from a missing object, store.ErrNotExist); test with errors.Is.
var ErrBucketNotFound = errors.New("bucket not found")

// wrap names the store, its endpoint, the operation and the object in a
// driver error. A NotFound is a missing object only once the bucket is
// known to exist: S3 answers a HEAD on a missing bucket with a bare 404,
// so the first NotFound is checked by listing the bucket.
func (s *Store) wrap(ctx context.Context, op, name string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		if !s.bucketSeen.Load() && s.bucketMissing(ctx, err) {
			return fmt.Errorf("%s: %s %s: %w: %q (create it, or check the bucket name, region and endpoint)", s.where, op, name, ErrBucketNotFound, s.bucketName)
		}
		return fmt.Errorf("%s: %s: %w (%v)", s.desc, name, store.ErrNotExist, err)
	}
	var it *IdleTimeoutError
	if errors.As(err, &it) {
		return fmt.Errorf("%s: %s %s: the store stopped answering: %w", s.where, op, name, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %s %s: %w", s.desc, op, name, err)
	}
	return fmt.Errorf("%s: %s %s: %w", s.where, op, name, err)
}

// bucketMissing reports whether a NotFound error err means the bucket is
// missing; it remembers a bucket that exists.
func (s *Store) bucketMissing(ctx context.Context, err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "NoSuchBucket" {
		return true
	}
	ok, lerr := s.bucket.IsAccessible(ctx)
	if lerr != nil {
		return false // unknown: report the object's error
	}
	if ok {
		s.bucketSeen.Store(true)
	}
	return !ok
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
//
// Half a second: an interrupted command must exit within a second even
// when the server is stalled; against a live server the abort is sent
// within milliseconds.
const abortGrace = 500 * time.Millisecond

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
	for c := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(c, TempPrefix) {
			return fmt.Errorf("%s: %w", s.desc, &store.InvalidNameError{Name: name, Reason: "component starts with " + TempPrefix + " (reserved for temporary objects)"})
		}
	}
	return s.put(ctx, name, r, size)
}

// put is Put of a valid name.
func (s *Store) put(ctx context.Context, name string, r io.Reader, size int64) error {
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
		return fmt.Errorf("%s: put %s: %w", s.where, name, cr.err)
	}
	if err != nil {
		return s.wrap(ctx, "put", name, err)
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
		return nil, s.wrap(ctx, "get", name, err)
	}
	s.bucketSeen.Store(true)
	return &objectReader{ReadCloser: r, s: s, name: name}, nil
}

// GetRange implements store.Store with one ranged read (an S3 GET with a
// Range header, a GCS ranged read): the reader yields the bytes
// [off, off+n) of the object, fewer when it ends first. A range starting
// at or past the end (off ≥ size, also any range of an empty object)
// reads as empty, not as an error: S3 and GCS refuse such a range (416
// InvalidRange), and on that (or any other failure but NotFound) an
// Attributes request (a HEAD) is made, and only when it confirms that the
// object exists and off ≥ its size is an empty reader returned; otherwise
// the ranged read's error is reported. n == 0
// sends no ranged read (s3blob would ask for one byte, which a server
// refuses past the end), only the HEAD, so a missing object still matches
// store.ErrNotExist. A negative off or n is an error; an off+n beyond the
// largest int64 reads to the end.
func (s *Store) GetRange(ctx context.Context, name string, off, n int64) (io.ReadCloser, error) {
	if err := store.ValidateName(name); err != nil {
		return nil, fmt.Errorf("%s: %w", s.desc, err)
	}
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("%s: get %s: invalid range: offset %d, length %d (both must be ≥ 0)", s.desc, name, off, n)
	}
	if n == 0 {
		if _, err := s.bucket.Attributes(ctx, name); err != nil {
			return nil, s.wrap(ctx, "get", name, err)
		}
		s.bucketSeen.Store(true)
		return http.NoBody, nil
	}
	length := n
	if n > math.MaxInt64-off {
		length = -1 // to the end; off+n-1 would overflow the Range header
	}
	r, err := s.bucket.NewRangeReader(ctx, name, off, length, rangeReadOptions)
	if err != nil {
		if gcerrors.Code(err) != gcerrors.NotFound && ctx.Err() == nil {
			// Past the end? Then the answer is an empty range, whatever
			// the server said about it.
			if a, aerr := s.bucket.Attributes(ctx, name); aerr == nil && off >= a.Size {
				s.bucketSeen.Store(true)
				return http.NoBody, nil
			}
		}
		return nil, s.wrap(ctx, "get", name, err)
	}
	s.bucketSeen.Store(true)
	return &objectReader{ReadCloser: r, s: s, name: name}, nil
}

// rangeReadOptions turn off the AWS SDK's response checksum validation for
// a ranged S3 read: a stored checksum covers the whole object, never an
// arbitrary range, and a server that sends it along with a part of the
// object (gofakes3 does) would fail every ranged read. (S3 itself sends no
// checksum for such a range, so nothing is lost; a caller that reads a
// range verifies it against its own digest.) Other drivers ignore them.
var rangeReadOptions = &blob.ReaderOptions{BeforeRead: func(as func(any) bool) error {
	var in *s3.GetObjectInput
	if as(&in) {
		in.ChecksumMode = ""
	}
	var opts *[]func(*s3.Options)
	if as(&opts) {
		*opts = append(*opts, func(o *s3.Options) {
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		})
	}
	return nil
}}

// Stat implements store.Store.
func (s *Store) Stat(ctx context.Context, name string) (int64, error) {
	if err := store.ValidateName(name); err != nil {
		return 0, fmt.Errorf("%s: %w", s.desc, err)
	}
	a, err := s.bucket.Attributes(ctx, name)
	if err != nil {
		return 0, s.wrap(ctx, "stat", name, err)
	}
	s.bucketSeen.Store(true)
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
				if gcerrors.Code(err) == gcerrors.NotFound {
					err = fmt.Errorf("%w: %q (create it, or check the bucket name, region and endpoint): %v", ErrBucketNotFound, s.bucketName, err)
				}
				yield("", fmt.Errorf("%s: list %q: %w", s.where, prefix, err))
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
		return s.wrap(ctx, "delete", name, err)
	}
	return nil
}

// objectReader names the store, its endpoint and the object in a read
// error (a stall in the middle of a download, for example).
type objectReader struct {
	io.ReadCloser
	s    *Store
	name string
	err  error
}

func (r *objectReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		r.err = r.s.wrap(context.Background(), "read", r.name, err)
		return n, r.err
	}
	return n, err
}

// As exposes the driver's types (gocloud's escape hatch, e.g. **s3.Client
// for s3://); see gocloud.dev/blob's Bucket.As.
func (s *Store) As(i any) bool { return s.bucket.As(i) }

// Close implements store.Store.
func (s *Store) Close() error { return s.bucket.Close() }
