//go:build unix

package blobstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/blobstore"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.ServeS3IfChild()
	os.Exit(m.Run())
}

// A stalled server (a real S3-compatible server process stopped with
// SIGSTOP) fails every operation after the URI's idle_timeout and
// max_attempts, with a message naming the object and the endpoint; the
// store works again once the server resumes.
func TestStalledServerFailsInBoundedTime(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process and waits for timeouts")
	}
	srv := storetest.StartS3Process(t)
	s := openURI(t, srv.URI+"&idle_timeout=1s&timeout=2s&max_attempts=2&max_backoff=100ms")
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound for the test, never reached
	defer cancel()
	if err := s.Put(ctx, "seen", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	large := bytes.Repeat([]byte("0123456789abcdef"), 20<<20/16) // 20 MiB: a multipart upload
	ops := []struct {
		name, key string
		do        func(ctx context.Context) error
	}{
		{"put small", "small.json", func(ctx context.Context) error {
			return s.Put(ctx, "small.json", strings.NewReader("{}"), 2)
		}},
		{"put multipart", "large.bin", func(ctx context.Context) error {
			return s.Put(ctx, "large.bin", bytes.NewReader(large), int64(len(large)))
		}},
		{"get", "seen", func(ctx context.Context) error {
			r, err := s.Get(ctx, "seen")
			if err != nil {
				return err
			}
			defer r.Close()
			_, err = io.ReadAll(r)
			return err
		}},
		{"stat", "seen", func(ctx context.Context) error { _, err := s.Stat(ctx, "seen"); return err }},
		{"list", `""`, func(ctx context.Context) error {
			for _, err := range s.List(ctx, "") {
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"delete", "seen", func(ctx context.Context) error { return s.Delete(ctx, "seen") }},
	}
	srv.Stop()
	for _, op := range ops {
		start := time.Now()
		err := op.do(ctx)
		took := time.Since(start)
		t.Logf("%s on a stalled server: failed after %v: %v", op.name, took.Round(time.Millisecond), err)
		if err == nil {
			t.Errorf("%s succeeded on a stopped server", op.name)
			continue
		}
		// Two attempts of at most 2 s each, one backoff of at most 100 ms,
		// with room for a slow machine; without deadlines it never returns.
		if took > 15*time.Second {
			t.Errorf("%s took %v to fail", op.name, took)
		}
		msg := err.Error()
		for _, want := range []string{op.key, srv.Endpoint} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q does not name %q", op.name, msg, want)
			}
		}
		if errors.Is(err, store.ErrNotExist) {
			t.Errorf("%s: a stall reported as a missing object: %v", op.name, err)
		}
	}
	srv.Continue()
	if err := s.Put(ctx, "after", strings.NewReader("ok"), 2); err != nil {
		t.Fatalf("put after the server resumed: %v", err)
	}
	if n, err := s.Stat(ctx, "after"); err != nil || n != 2 {
		t.Fatalf("stat after the server resumed: %d, %v", n, err)
	}
}

// Cancelling an operation blocked on a stalled server returns within a
// second, with the default (long) timeouts.
func TestStalledServerCancelWithinASecond(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	srv := storetest.StartS3Process(t)
	s := openURI(t, srv.URI)
	defer s.Close()
	bg := context.Background()
	if err := s.Put(bg, "seen", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	large := bytes.Repeat([]byte{7}, 20<<20)
	srv.Stop()
	for _, op := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"put multipart", func(ctx context.Context) error {
			return s.Put(ctx, "large.bin", bytes.NewReader(large), int64(len(large)))
		}},
		{"put small", func(ctx context.Context) error { return s.Put(ctx, "small", strings.NewReader("ab"), 2) }},
		{"get", func(ctx context.Context) error { _, err := s.Get(ctx, "seen"); return err }},
		{"stat", func(ctx context.Context) error { _, err := s.Stat(ctx, "seen"); return err }},
	} {
		ctx, cancel := context.WithCancel(bg)
		done := make(chan error, 1)
		go func() { done <- op.do(ctx) }()
		time.Sleep(300 * time.Millisecond) // blocked on the server by now
		cancel()
		start := time.Now()
		select {
		case err := <-done:
			took := time.Since(start)
			t.Logf("%s: returned %v after cancel: %v", op.name, took.Round(time.Millisecond), err)
			if err == nil {
				t.Errorf("%s succeeded on a stopped server", op.name)
			} else if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: error %v is not context.Canceled", op.name, err)
			}
			if took > time.Second {
				t.Errorf("%s returned %v after cancel, want within 1 s", op.name, took)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: still blocked 20 s after cancel", op.name)
		}
	}
}

// A missing bucket is reported as such, never as a missing object.
func TestBucketNotFound(t *testing.T) {
	uri := storetest.FakeS3(t)
	missing := openURI(t, strings.Replace(uri, "s3://vertebrae-test", "s3://no-such-bucket", 1))
	defer missing.Close()
	ctx := context.Background()
	_, statErr := missing.Stat(ctx, "x")
	_, getErr := missing.Get(ctx, "x")
	var listErr error
	for _, err := range missing.List(ctx, "") {
		listErr = err
	}
	putErr := missing.Put(ctx, "x", strings.NewReader("x"), 1)
	for name, err := range map[string]error{"stat": statErr, "get": getErr, "list": listErr, "put": putErr} {
		if !errors.Is(err, blobstore.ErrBucketNotFound) || errors.Is(err, store.ErrNotExist) {
			t.Errorf("%s on a missing bucket: %v; want ErrBucketNotFound, not ErrNotExist", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), `bucket not found: "no-such-bucket"`) {
			t.Errorf("%s: %q does not name the bucket", name, err)
		}
	}
	// In an existing bucket a missing object stays ErrNotExist.
	s := openURI(t, uri)
	defer s.Close()
	if _, err := s.Stat(ctx, "absent"); !errors.Is(err, store.ErrNotExist) || errors.Is(err, blobstore.ErrBucketNotFound) {
		t.Errorf("missing object: %v, want ErrNotExist", err)
	}
}

func TestNetworkParameters(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ query, want string }{
		{"idle_timeout=0s", "idle_timeout"},
		{"idle_timeout=fast", "idle_timeout"},
		{"timeout=-1s", "timeout"},
		{"timeout=48h", "timeout"},
		{"max_attempts=0", "max_attempts"},
		{"max_attempts=1000", "max_attempts"},
		{"max_backoff=x", "max_backoff"},
	} {
		s, err := blobstore.Open(ctx, "s3://bucket/p?region=us-east-1&"+tc.query)
		if err == nil {
			s.Close()
			t.Errorf("%s: accepted", tc.query)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v does not name %s", tc.query, err, tc.want)
		}
	}
	s, err := blobstore.Open(ctx, "s3://bucket/p?region=us-east-1&idle_timeout=5s&timeout=1m&max_attempts=3&max_backoff=2s")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// The AWS SDK's log lines (its WARN about responses without checksums,
// for example) go to log/slog, which the CLI discards unless VERTEBRAE_LOG
// asks for them; they are never written to stderr directly.
func TestSDKLogsGoToSlog(t *testing.T) {
	uri := storetest.FakeS3(t)
	s := openURI(t, uri)
	defer s.Close()
	var client *s3.Client
	if !s.As(&client) {
		t.Fatal("no *s3.Client")
	}
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(prev)
	client.Options().Logger.Logf(logging.Warn, "Response has no supported checksum. %s", "Not validating response payload.")
	client.Options().Logger.Logf(logging.Debug, "request %d", 7)
	got := buf.String()
	for _, want := range []string{`level=WARN msg="Response has no supported checksum. Not validating response payload." source=aws-sdk`, `level=DEBUG msg="request 7" source=aws-sdk`} {
		if !strings.Contains(got, want) {
			t.Errorf("slog output %q lacks %q", got, want)
		}
	}
}
