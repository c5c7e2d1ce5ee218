package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/location"
)

// The environment contract for tests against a real S3-compatible server
// (.ci/run starts versitygw on 127.0.0.1 and sets all of them):
//
//	VERTEBRAE_TEST_S3_URI   s3://bucket[/prefix]?endpoint=http://127.0.0.1:PORT&use_path_style=true&region=us-east-1
//	AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION   the server's credentials
//	VERTEBRAE_REQUIRE_S3=1  such tests fail, not skip, when the server is missing
const (
	EnvS3URI     = "VERTEBRAE_TEST_S3_URI"
	EnvRequireS3 = "VERTEBRAE_REQUIRE_S3"
)

// S3URIForTest returns a store URI on the real S3-compatible server named
// by VERTEBRAE_TEST_S3_URI, below a prefix unique to this test (so tests
// and repeated runs never see each other's objects); the objects are
// deleted when the test ends. Without the variable, or when the server does
// not answer, the test is skipped with instructions, or fails when
// VERTEBRAE_REQUIRE_S3=1 (CI).
func S3URIForTest(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvS3URI)
	required := os.Getenv(EnvRequireS3) == "1"
	unavailable := func(why string) {
		t.Helper()
		msg := why + "; to run this test against a real S3-compatible server set " + EnvS3URI +
			"=s3://bucket/prefix?endpoint=http://127.0.0.1:PORT&use_path_style=true&region=us-east-1 and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (bash .ci/run starts versitygw and sets them)"
		if required {
			t.Fatal(msg + " [" + EnvRequireS3 + "=1: failing, not skipping]")
		}
		t.Skip(msg)
	}
	if base == "" {
		unavailable(EnvS3URI + " is not set")
	}
	uri, err := WithSubPrefix(base, uniquePrefix(t.Name()))
	if err != nil {
		unavailable(EnvS3URI + ": " + err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := location.Open(ctx, uri)
	if err != nil {
		unavailable("cannot open " + EnvS3URI + ": " + err.Error())
	}
	// A probe: a missing object must come back as ErrNotExist, which needs
	// a live server, a bucket and valid credentials.
	if _, err := s.Stat(ctx, "probe-does-not-exist"); !errors.Is(err, store.ErrNotExist) {
		s.Close()
		unavailable("the server at " + EnvS3URI + " does not answer as expected: " + errString(err))
	}
	t.Cleanup(func() {
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for n, err := range s.List(ctx, "") {
			if err != nil {
				t.Logf("cleaning up %s: %v", uri, err)
				return
			}
			if err := s.Delete(ctx, n); err != nil {
				t.Logf("cleaning up %s: %v", uri, err)
				return
			}
		}
	})
	return uri
}

func errString(err error) string {
	if err == nil {
		return "a missing object was reported present"
	}
	return err.Error()
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// uniquePrefix is a readable, collision-free prefix for one test.
func uniquePrefix(testName string) string {
	var b [6]byte
	rand.Read(b[:])
	n := unsafeChars.ReplaceAllString(testName, "_")
	if len(n) > 60 {
		n = n[:60]
	}
	return "t-" + n + "-" + hex.EncodeToString(b[:])
}

// WithSubPrefix appends sub to the path (the prefix) of an s3:// or gs://
// URI, keeping its query: WithSubPrefix("s3://b/p?region=x", "q") is
// "s3://b/p/q?region=x".
func WithSubPrefix(uri, sub string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", errors.New("not a URL")
	}
	if u.Scheme != "s3" && u.Scheme != "gs" {
		return "", errors.New("not an s3:// or gs:// URI")
	}
	if u.Host == "" {
		return "", errors.New("no bucket")
	}
	p := strings.Trim(u.Path, "/")
	if p != "" {
		p += "/"
	}
	u.Path = "/" + p + strings.Trim(sub, "/")
	u.RawPath = ""
	return u.String(), nil
}

// FakeS3 starts an in-process S3 server (gofakes3, in memory) on 127.0.0.1
// for the length of the test and returns the URI of an empty bucket on it,
// with the query parameters s3blob needs to reach it. When no AWS
// credentials are in the environment it sets fake ones with t.Setenv (the
// fake does not check signatures), so the test must not be parallel.
func FakeS3(t testing.TB) string {
	t.Helper()
	backend := s3mem.New()
	faker := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	srv := httptest.NewServer(faker.Server()) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	const bucket = "vertebrae-test"
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatalf("fake S3: create bucket: %v", err)
	}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		t.Setenv("AWS_ACCESS_KEY_ID", "fake-access-key")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-key")
	}
	// Never ask an instance metadata service for anything.
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	q := url.Values{}
	q.Set("endpoint", srv.URL)
	q.Set("use_path_style", "true")
	q.Set("region", "us-east-1")
	return "s3://" + bucket + "?" + q.Encode()
}
