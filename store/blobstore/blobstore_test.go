package blobstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"gocloud.dev/blob/memblob"

	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/blobstore"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

func openURI(t *testing.T, uri string) *blobstore.Store {
	t.Helper()
	s, err := blobstore.Open(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every subtest gets its own in-process fake server and bucket.
func TestConformanceFakeS3(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openURI(t, storetest.FakeS3(t)) })
}

// The same suite below a prefix: names stay relative to it.
func TestConformanceFakeS3Prefix(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		uri, err := storetest.WithSubPrefix(storetest.FakeS3(t), "cache/v2")
		if err != nil {
			t.Fatal(err)
		}
		return openURI(t, uri)
	})
}

// fakeGCS starts an in-process GCS emulator (fake-gcs-server) on 127.0.0.1
// and points the Google storage library at it (STORAGE_EMULATOR_HOST).
func fakeGCS(t *testing.T) string {
	t.Helper()
	// The emulator serves downloads only on its "public host", so it must
	// know its own address before it starts.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http", Host: "127.0.0.1", Port: uint16(port),
		PublicHost: fmt.Sprintf("127.0.0.1:%d", port), Writer: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "vertebrae-test"})
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL(), "http://"))
	return "gs://vertebrae-test"
}

// gs:// end to end against the emulator: gcsblob's writer commits on Close,
// so the aborts here rest on cancelling the write's context.
func TestConformanceFakeGCS(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		uri, err := storetest.WithSubPrefix(fakeGCS(t), "cache")
		if err != nil {
			t.Fatal(err)
		}
		return openURI(t, uri)
	})
}

// fakeADC writes application-default credentials that parse but are never
// used (no request is made), so opening gs:// needs no credential search
// and no metadata server.
func fakeADC(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "adc.json")
	os.WriteFile(p, []byte(`{"type":"authorized_user","client_id":"id","client_secret":"SECRETgcsSECRET","refresh_token":"tok"}`), 0o600)
	return p
}

func TestOpenGCSCredentials(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	ctx := context.Background()
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	_, err := blobstore.Open(ctx, "gs://bucket/p")
	if err == nil || !strings.Contains(err.Error(), "no Google Cloud credentials") {
		t.Fatalf("Open without credentials: %v", err)
	}
	// anonymous=true needs none.
	s, err := blobstore.Open(ctx, "gs://bucket/p?anonymous=true")
	if err != nil {
		t.Fatalf("anonymous: %v", err)
	}
	s.Close()
	// With credentials, opening prints nothing (gocloud's default opener
	// would print warnings to stdout, where the CLI writes JSON).
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", fakeADC(t))
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	s, err = blobstore.Open(ctx, "gs://bucket/p")
	os.Stdout = stdout
	w.Close()
	printed, _ := io.ReadAll(r)
	if err != nil {
		t.Fatalf("Open with credentials: %v", err)
	}
	s.Close()
	if len(printed) != 0 {
		t.Fatalf("Open printed %q", printed)
	}
	if _, err := blobstore.Open(ctx, "gs://bucket?no_such=1"); err == nil || !strings.Contains(err.Error(), "no_such") {
		t.Fatalf("unknown gs:// parameter: %v", err)
	}
}

// New over another driver aborts by cancelling the write's context, the
// path gs:// takes (no GCS here; gocloud's memblob honours the same rule).
func TestConformanceCancelAbort(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return blobstore.New(memblob.OpenBucket(nil), "mem-bucket") })
}

// The suite against a real S3-compatible server (versitygw in CI).
func TestConformanceRealS3(t *testing.T) {
	base := storetest.S3URIForTest(t)
	i := 0
	storetest.Run(t, func(t *testing.T) store.Store {
		i++
		uri, err := storetest.WithSubPrefix(base, "sub"+string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		return openURI(t, uri)
	})
}

// servers are the S3 servers the behaviour tests run on: the in-process
// fake, and the real one when the environment names it.
var servers = []struct {
	name string
	uri  func(testing.TB) string
}{
	{"fake", storetest.FakeS3},
	{"real", storetest.S3URIForTest},
}

func TestPrefixIsolation(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) { testPrefixIsolation(t, srv.uri(t)) })
	}
}

func testPrefixIsolation(t *testing.T, base string) {
	ctx := context.Background()
	uriA, _ := storetest.WithSubPrefix(base, "team-a/cache")
	uriB, _ := storetest.WithSubPrefix(base, "team-a/cache2")
	a, b, root := openURI(t, uriA), openURI(t, uriB), openURI(t, base)
	defer a.Close()
	defer b.Close()
	defer root.Close()
	if err := a.Put(ctx, "k/manifest.json", strings.NewReader("A"), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "k/manifest.json", strings.NewReader("B"), 1); err != nil {
		t.Fatal(err)
	}
	names := func(s store.Store) []string {
		var got []string
		for n, err := range s.List(ctx, "") {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, n)
		}
		return got
	}
	if got := names(a); !slices.Equal(got, []string{"k/manifest.json"}) {
		t.Fatalf("prefixed List = %q", got)
	}
	// "team-a/cache" must not list "team-a/cache2/...": the prefix is a
	// directory, not a string prefix.
	if got := names(root); !slices.Equal(got, []string{"team-a/cache/k/manifest.json", "team-a/cache2/k/manifest.json"}) {
		t.Fatalf("bucket List = %q", got)
	}
	rc, err := root.Get(ctx, "team-a/cache2/k/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "B" {
		t.Fatalf("object under the second prefix = %q", got)
	}
	// Trailing and doubled slashes in the URI path mean the same prefix.
	c := openURI(t, strings.Replace(base, "?", "/team-a/cache/?", 1))
	defer c.Close()
	if n, err := c.Stat(ctx, "k/manifest.json"); err != nil || n != 1 {
		t.Fatalf("Stat through a trailing-slash prefix = %d, %v", n, err)
	}
}

// countingReader counts the bytes the store pulled from it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Failures past the SDK's multipart threshold (8 MiB parts) go through the
// multipart path, whose abort must also leave nothing behind.
func TestAbortMultipart(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) { testAbortMultipart(t, srv.uri(t)) })
	}
}

func testAbortMultipart(t *testing.T, uri string) {
	s := openURI(t, uri)
	defer s.Close()
	ctx := context.Background()
	if err := s.Put(ctx, "big", strings.NewReader("old"), 3); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("source died")
	const size = 20 << 20
	cr := &countingReader{r: io.MultiReader(storetest.NewGenerator(1, 18<<20), errAfter{boom})}
	err := s.Put(ctx, "big", cr, size)
	if !errors.Is(err, boom) {
		t.Fatalf("Put error = %v, want the reader's error", err)
	}
	if cr.n.Load() < 16<<20 {
		t.Fatalf("only %d bytes were read: the failure did not happen past the first parts", cr.n.Load())
	}
	wantOld(t, s, "big", "old")

	// Short and cancelled multipart uploads.
	err = s.Put(ctx, "big", storetest.NewGenerator(2, 17<<20), size)
	if err == nil {
		t.Fatal("short multipart Put succeeded")
	}
	wantOld(t, s, "big", "old")
	cctx, cancel := context.WithCancel(ctx)
	cr = &countingReader{r: storetest.NewGenerator(3, size)}
	err = s.Put(cctx, "big", &cancelAt{r: cr, at: 17 << 20, cancel: cancel, n: &cr.n}, size)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled multipart Put error = %v", err)
	}
	wantOld(t, s, "big", "old")
	noMultipartUploads(t, s)
}

// noMultipartUploads fails if the bucket holds unfinished multipart uploads
// (parts an aborted Put failed to delete).
func noMultipartUploads(t *testing.T, s *blobstore.Store) {
	t.Helper()
	var client *s3.Client
	if !s.As(&client) {
		t.Fatal("the store does not expose its *s3.Client")
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(s.String(), "s3://"), "/")
	out, err := client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: &prefix})
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	for _, u := range out.Uploads {
		t.Errorf("unfinished multipart upload left behind: key %s", *u.Key)
	}
}

type errAfter struct{ err error }

func (e errAfter) Read([]byte) (int, error) { return 0, e.err }

type cancelAt struct {
	r      io.Reader
	at     int64
	cancel func()
	n      *atomic.Int64
}

func (c *cancelAt) Read(p []byte) (int, error) {
	if c.n.Load() >= c.at {
		c.cancel()
	}
	return c.r.Read(p)
}

func wantOld(t *testing.T, s store.Store, name, old string) {
	t.Helper()
	rc, err := s.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != old {
		t.Fatalf("after a failed Put %s has %d bytes, want the old %q", name, len(b), old)
	}
	var all []string
	for n, err := range s.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, n)
	}
	if !slices.Equal(all, []string{name}) {
		t.Fatalf("List = %q", all)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ uri, want, secret string }{
		{"s3://AKIAEXAMPLE:wJalrXUtnFEMIsecret@bucket/p", "credentials in the URI are not accepted", "wJalrXUtnFEMIsecret"},
		{"gs://user:hunter2secret@bucket", "credentials in the URI are not accepted", "hunter2secret"},
		{"s3:///prefix", "no bucket name", ""},
		{"s3://bucket/a/../b", `".." component`, ""},
		{"s3://bucket/p#frag", "fragment", ""},
		{"s3://bucket?no_such_param=1", "no_such_param", ""},
		{"s3://bucket?use_path_style=maybe", "use_path_style", ""},
		{"ftp://bucket", "Unsupported artifact store URI", ""},
	} {
		s, err := blobstore.Open(ctx, tc.uri)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", tc.uri)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) error %q does not say %q", tc.uri, err, tc.want)
		}
		if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
			t.Errorf("Open(%q) error leaks the secret: %q", tc.uri, err)
		}
	}
	var ue *store.UnsupportedURIError
	if _, err := blobstore.Open(ctx, "ftp://x"); !errors.As(err, &ue) {
		t.Errorf("ftp:// error %v is not an *UnsupportedURIError", err)
	}
}

// The secret key never appears in an error, whatever fails.
func TestErrorsHoldNoCredentials(t *testing.T) {
	const secret = "SECRETs3cr3tSECRETdoNotLeak"
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIATESTKEY")
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	uri := storetest.FakeS3(t)
	ctx := context.Background()
	missing := openURI(t, strings.Replace(uri, "s3://vertebrae-test", "s3://no-such-bucket", 1))
	defer missing.Close()
	var errs []error
	errs = append(errs, missing.Put(ctx, "x", strings.NewReader("x"), 1))
	_, err := missing.Get(ctx, "x")
	errs = append(errs, err)
	_, err = missing.Stat(ctx, "x")
	errs = append(errs, err)
	for _, err := range missing.List(ctx, "") {
		errs = append(errs, err)
	}
	s := openURI(t, uri)
	defer s.Close()
	_, err = s.Get(ctx, "absent")
	errs = append(errs, err)
	errs = append(errs, s.Put(ctx, "x", strings.NewReader("short"), 10))
	for i, err := range errs {
		if err == nil {
			t.Errorf("operation %d on a missing bucket succeeded", i)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error leaks the secret key: %v", err)
		}
	}
	if !errors.Is(errs[len(errs)-2], store.ErrNotExist) {
		t.Errorf("missing object: %v, want ErrNotExist", errs[len(errs)-2])
	}
}

func TestRejectsInvalidNames(t *testing.T) {
	s := openURI(t, storetest.FakeS3(t))
	defer s.Close()
	ctx := context.Background()
	for _, name := range []string{"", "/abs", "a//b", "a/../b", `a\b`, "a\nb", "trailing/"} {
		var ine *store.InvalidNameError
		if err := s.Put(ctx, name, bytes.NewReader(nil), 0); !errors.As(err, &ine) {
			t.Errorf("Put(%q) error = %v, want *store.InvalidNameError", name, err)
		}
		if _, err := s.Get(ctx, name); !errors.As(err, &ine) {
			t.Errorf("Get(%q) error = %v, want *store.InvalidNameError", name, err)
		}
		if _, err := s.Stat(ctx, name); !errors.As(err, &ine) {
			t.Errorf("Stat(%q) error = %v, want *store.InvalidNameError", name, err)
		}
		if err := s.Delete(ctx, name); !errors.As(err, &ine) {
			t.Errorf("Delete(%q) error = %v, want *store.InvalidNameError", name, err)
		}
	}
	for n, err := range s.List(ctx, "") {
		t.Fatalf("rejected names left %q, %v", n, err)
	}
}
