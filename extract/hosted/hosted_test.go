package hosted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("text %03d", i)
	}
	return out
}

func checkRows(t *testing.T, m *matrix.Dense, in []string, dim int) {
	t.Helper()
	if m.Rows() != len(in) || m.Cols() != dim || m.DType() != matrix.Float32 {
		t.Fatalf("got %dx%d %s, want %dx%d float32", m.Rows(), m.Cols(), m.DType(), len(in), dim)
	}
	data := m.Float32Data()
	for i, s := range in {
		if got, want := data[i*dim:(i+1)*dim], vecFor(s, dim); !reflect.DeepEqual(got, want) {
			t.Fatalf("row %d = %v, want %v", i, got, want)
		}
	}
}

func baseURL(provider string, srv string) string {
	if provider == ProviderOpenAI {
		return srv + "/v1"
	}
	return srv
}

func TestProvidersHappyPath(t *testing.T) {
	cases := []struct {
		provider, encoding string
		wantKeys           []string
	}{
		{ProviderOpenAI, "", []string{"encoding_format", "input", "model"}},
		{ProviderOpenAI, EncodingBase64, []string{"encoding_format", "input", "model"}},
		{ProviderOllama, "", []string{"input", "model"}},
		{ProviderTEI, "", []string{"inputs"}},
	}
	for _, tc := range cases {
		t.Run(tc.provider+"/"+tc.encoding, func(t *testing.T) {
			f, srv := newFake(t, 6)
			c, _ := newTestClient(t, Config{
				Provider: tc.provider, BaseURL: baseURL(tc.provider, srv.URL), Model: "m",
				Encoding: tc.encoding, BatchSize: 2, Concurrency: 2,
			}, 0)
			in := texts(5)
			m, err := c.Embed(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, m, in, 6)
			if f.count() != 3 {
				t.Fatalf("requests = %d, want 3", f.count())
			}
			q := f.request(0)
			var keys []string
			for k := range q.body {
				keys = append(keys, k)
			}
			if len(keys) != len(tc.wantKeys) {
				t.Fatalf("request keys %v, want %v", keys, tc.wantKeys)
			}
			for _, k := range tc.wantKeys {
				if _, ok := q.body[k]; !ok {
					t.Fatalf("request keys %v, want %v", keys, tc.wantKeys)
				}
			}
			if tc.provider == ProviderOpenAI {
				want := tc.encoding
				if want == "" {
					want = EncodingFloat
				}
				if q.body["encoding_format"] != want {
					t.Fatalf("encoding_format = %v, want %s", q.body["encoding_format"], want)
				}
			}
			if q.auth != "" {
				t.Fatalf("Authorization sent without api_key_env: %q", q.auth)
			}
		})
	}
}

func TestOpenAIDimensionsSent(t *testing.T) {
	f, srv := newFake(t, 16)
	c, _ := newTestClient(t, Config{Provider: ProviderOpenAI, BaseURL: srv.URL + "/v1", Model: "m", Dimensions: 4}, 0)
	in := texts(3)
	m, err := c.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, m, in, 4)
	if d := f.request(0).body["dimensions"]; d != float64(4) {
		t.Fatalf("dimensions sent = %v, want 4", d)
	}
}

func TestEmptyInputAndInvalidUTF8(t *testing.T) {
	f, srv := newFake(t, 4)
	c, _ := newTestClient(t, Config{Provider: ProviderTEI, BaseURL: srv.URL, Model: "m", Dimensions: 4}, 0)
	m, err := c.Embed(context.Background(), nil)
	if err != nil || m.Rows() != 0 || m.Cols() != 4 {
		t.Fatalf("empty input: %v, %v", m, err)
	}
	_, err = c.Embed(context.Background(), []string{"ok", "bad \xff"})
	if err == nil || !strings.Contains(err.Error(), "row 1 is not valid UTF-8") {
		t.Fatalf("err = %v", err)
	}
	if f.count() != 0 {
		t.Fatalf("requests = %d, want 0", f.count())
	}
}

func TestRetryAfter(t *testing.T) {
	cases := []struct {
		name, header string
		min, max     time.Duration
	}{
		{"seconds", "2", 2 * time.Second, 2 * time.Second},
		{"capped", "3600", maxRetryAfter, maxRetryAfter},
		{"http-date", time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat), 8 * time.Second, 10 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := newFake(t, 3)
			f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
				if q.n == 1 {
					w.Header().Set("Retry-After", tc.header)
					http.Error(w, "slow down", http.StatusTooManyRequests)
					return true
				}
				return false
			}
			// Jitter 0: the wait is the Retry-After value alone.
			c, s := newTestClient(t, Config{Provider: ProviderOllama, BaseURL: srv.URL, Model: "m"}, 0)
			in := texts(2)
			m, err := c.Embed(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, m, in, 3)
			w := s.waits()
			if f.count() != 2 || len(w) != 1 {
				t.Fatalf("requests = %d, waits = %v; want 2 requests, 1 wait", f.count(), w)
			}
			if w[0] < tc.min || w[0] > tc.max {
				t.Fatalf("wait = %s, want in [%s, %s]", w[0], tc.min, tc.max)
			}
		})
	}
}

func TestRetryAfterVersusBackoff(t *testing.T) {
	c, _ := newTestClient(t, Config{Provider: ProviderTEI, BaseURL: "http://x", Model: "m",
		BackoffBase: time.Second, BackoffMax: 8 * time.Second}, 0.5)
	// The larger of the jittered backoff and Retry-After wins.
	if d := c.delay(2, attemptResult{retryAfter: time.Second, hasAfter: true}); d != 2*time.Second {
		t.Fatalf("delay = %s, want 2s (backoff)", d)
	}
	if d := c.delay(0, attemptResult{retryAfter: 5 * time.Second, hasAfter: true}); d != 5*time.Second {
		t.Fatalf("delay = %s, want 5s (Retry-After)", d)
	}
	// The exponential ceiling is capped by BackoffMax.
	if d := c.delay(40, attemptResult{}); d != 4*time.Second {
		t.Fatalf("delay = %s, want 4s", d)
	}
}

func TestServerErrorsThenSuccess(t *testing.T) {
	f, srv := newFake(t, 3)
	f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
		switch q.n {
		case 1:
			http.Error(w, "boom", http.StatusInternalServerError)
		case 2:
			http.Error(w, "bad gateway", http.StatusBadGateway)
		default:
			return false
		}
		return true
	}
	c, s := newTestClient(t, Config{Provider: ProviderOpenAI, BaseURL: srv.URL + "/v1", Model: "m",
		BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second}, 0.5)
	in := texts(2)
	m, err := c.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, m, in, 3)
	if want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}; !reflect.DeepEqual(s.waits(), want) {
		t.Fatalf("waits = %v, want %v", s.waits(), want)
	}
	if f.count() != 3 {
		t.Fatalf("requests = %d, want 3", f.count())
	}
}

func TestTimeoutThenSuccess(t *testing.T) {
	f, srv := newFake(t, 3)
	f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
		if q.n == 1 {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return true
		}
		return false
	}
	c, s := newTestClient(t, Config{Provider: ProviderTEI, BaseURL: srv.URL, Model: "m", Timeout: 50 * time.Millisecond}, 0)
	in := texts(2)
	start := time.Now()
	m, err := c.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, m, in, 3)
	if f.count() != 2 || len(s.waits()) != 1 {
		t.Fatalf("requests = %d, waits = %v", f.count(), s.waits())
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("took %s; the per-request timeout was not applied", el)
	}
}

func TestRetriesExhausted(t *testing.T) {
	f, srv := newFake(t, 3)
	f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
		return true
	}
	c, s := newTestClient(t, Config{Provider: ProviderOllama, BaseURL: srv.URL, Model: "m", MaxRetries: 2}, 0)
	_, err := c.Embed(context.Background(), texts(2))
	if err == nil {
		t.Fatal("no error")
	}
	for _, frag := range []string{"giving up after 3 attempts", "503", "overloaded", "ollama", "/api/embed", "rows [0, 2)"} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error %q lacks %q", err, frag)
		}
	}
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 503 || se.Attempts != 3 {
		t.Fatalf("StatusError = %+v", se)
	}
	if f.count() != 3 || len(s.waits()) != 2 {
		t.Fatalf("requests = %d, waits = %v", f.count(), s.waits())
	}
}

func TestTimeoutsExhausted(t *testing.T) {
	f, srv := newFake(t, 3)
	f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
		<-r.Context().Done()
		return true
	}
	c, _ := newTestClient(t, Config{Provider: ProviderTEI, BaseURL: srv.URL, Model: "m",
		Timeout: 30 * time.Millisecond, MaxRetries: 1}, 0)
	_, err := c.Embed(context.Background(), texts(1))
	if err == nil || !strings.Contains(err.Error(), "giving up after 2 attempts, last error: request timed out after 30ms") {
		t.Fatalf("err = %v", err)
	}
	if f.count() != 2 {
		t.Fatalf("requests = %d", f.count())
	}
}

func TestClientErrorFailsAtOnce(t *testing.T) {
	for _, code := range []int{http.StatusBadRequest, http.StatusNotImplemented} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			f, srv := newFake(t, 3)
			f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
				http.Error(w, "bad input: "+strings.Repeat("x", 2000), code)
				return true
			}
			c, s := newTestClient(t, Config{Provider: ProviderOpenAI, BaseURL: srv.URL + "/v1", Model: "m"}, 0)
			_, err := c.Embed(context.Background(), texts(3))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, fmt.Sprint(code)) || !strings.Contains(msg, "bad input: xxx") || !strings.Contains(msg, "...(truncated)") {
				t.Fatalf("err = %q", msg)
			}
			if n := strings.Count(msg, "x"); n > maxBodyInError {
				t.Fatalf("body not truncated: %d x's", n)
			}
			if f.count() != 1 || len(s.waits()) != 0 {
				t.Fatalf("retried: requests = %d, waits = %v", f.count(), s.waits())
			}
			var se *StatusError
			if !errors.As(err, &se) || se.Attempts != 1 {
				t.Fatalf("StatusError = %+v", se)
			}
		})
	}
}

func TestMalformedJSON(t *testing.T) {
	for _, p := range []string{ProviderOpenAI, ProviderOllama, ProviderTEI} {
		t.Run(p, func(t *testing.T) {
			f, srv := newFake(t, 3)
			f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
				if q.n == 2 {
					w.Write([]byte(`{"data": [`))
					return true
				}
				return false
			}
			c, _ := newTestClient(t, Config{Provider: p, BaseURL: baseURL(p, srv.URL), Model: "m", BatchSize: 2, Concurrency: 1}, 0)
			_, err := c.Embed(context.Background(), texts(4))
			if err == nil {
				t.Fatal("no error")
			}
			for _, frag := range []string{"malformed " + p + " response", route(p), "rows [2, 4)"} {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("error %q lacks %q", err, frag)
				}
			}
			if f.count() != 2 {
				t.Fatalf("requests = %d (malformed responses are not retried)", f.count())
			}
		})
	}
}

func TestResponseValidation(t *testing.T) {
	cases := []struct {
		name     string
		provider string
		encoding string
		dims     int
		vectors  func(q request, v [][]float32) [][]float32
		want     string
	}{
		{"count", ProviderTEI, "", 0, func(q request, v [][]float32) [][]float32 { return v[:len(v)-1] },
			"returned 2 embeddings for 3 rows"},
		{"count-openai", ProviderOpenAI, "", 0, func(q request, v [][]float32) [][]float32 { return append(v, v[0]) },
			"returned 4 embeddings for 3 rows"},
		{"width-in-batch", ProviderOllama, "", 0, func(q request, v [][]float32) [][]float32 {
			v[2] = v[2][:2]
			return v
		}, "embedding for row 2 has 2 dimensions, row 0 has 3"},
		{"width-vs-dimensions", ProviderTEI, "", 5, nil, "embeddings have 3 dimensions, dimensions is 5"},
		{"empty", ProviderTEI, "", 0, func(q request, v [][]float32) [][]float32 {
			v[1] = []float32{}
			return v
		}, "embedding for row 1 is empty"},
		{"nan-base64", ProviderOpenAI, EncodingBase64, 0, func(q request, v [][]float32) [][]float32 {
			v[1][2] = float32(math.NaN())
			return v
		}, "embedding for row 1, column 2: must contain only finite numeric values"},
		{"inf-base64", ProviderOpenAI, EncodingBase64, 0, func(q request, v [][]float32) [][]float32 {
			v[0][0] = float32(math.Inf(-1))
			return v
		}, "embedding for row 0, column 0: must contain only finite numeric values"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := newFake(t, 3)
			f.vectors = tc.vectors
			if tc.dims > 0 {
				f.dim = 3 // TEI ignores dimensions: the server keeps its width
			}
			c, s := newTestClient(t, Config{Provider: tc.provider, BaseURL: baseURL(tc.provider, srv.URL), Model: "m",
				Encoding: tc.encoding, Dimensions: tc.dims}, 0)
			_, err := c.Embed(context.Background(), texts(3))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if !strings.HasPrefix(tc.name, "nan") && !strings.HasPrefix(tc.name, "inf") && !errors.Is(err, errMismatch) {
				t.Fatalf("err = %v does not wrap the mismatch error", err)
			}
			if f.count() != 1 || len(s.waits()) != 0 {
				t.Fatalf("validation failures must not be retried: %d requests", f.count())
			}
		})
	}
}

func TestOpenAIIndexValidation(t *testing.T) {
	cases := map[string]struct {
		body, want string
	}{
		"duplicate": {`{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`, "index 0 appears twice"},
		"range":     {`{"data":[{"index":0,"embedding":[1]},{"index":2,"embedding":[2]}]}`, "data[1].index 2 is outside [0, 2)"},
		"missing":   {`{"data":[{"index":0,"embedding":[1]},{"embedding":[2]}]}`, "data[1] has no index"},
		"overflow":  {`{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1e39]}]}`, "cannot be represented in float32"},
		"base64":    {`{"data":[{"index":0,"embedding":"AAAAAAA="},{"index":1,"embedding":[2]}]}`, "not a multiple of 4"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, srv := newFake(t, 1)
			f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
				w.Write([]byte(tc.body))
				return true
			}
			c, _ := newTestClient(t, Config{Provider: ProviderOpenAI, BaseURL: srv.URL + "/v1", Model: "m"}, 0)
			_, err := c.Embed(context.Background(), texts(2))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestWidthAcrossBatches(t *testing.T) {
	f, srv := newFake(t, 3)
	f.vectors = func(q request, v [][]float32) [][]float32 {
		if q.n == 2 {
			for i := range v {
				v[i] = append(v[i], 0)
			}
		}
		return v
	}
	dir := t.TempDir()
	c, _ := newTestClient(t, Config{Provider: ProviderTEI, BaseURL: srv.URL, Model: "m", BatchSize: 2, Concurrency: 1, CacheDir: dir, CacheIdentity: "m@test"}, 0)
	_, err := c.Embed(context.Background(), texts(4))
	if err == nil || !strings.Contains(err.Error(), "embeddings have 4 dimensions, rows [0, 2) have 3") || !strings.Contains(err.Error(), "rows [2, 4)") {
		t.Fatalf("err = %v", err)
	}
	// The first batch was valid and is cached; the second is not.
	if n := len(cacheFiles(t, dir)); n != 2 {
		t.Fatalf("cache files = %d, want 2", n)
	}
}

func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAPIKey(t *testing.T) {
	const secret = "sk-test-SECRET-0123456789"
	t.Setenv("VERTEBRAE_TEST_KEY", secret+"\n")
	f, srv := newFake(t, 3)
	f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
		if q.texts[0] == "echo" {
			// A careless server echoing the request headers.
			http.Error(w, "denied for "+r.Header.Get("Authorization"), http.StatusForbidden)
			return true
		}
		return false
	}
	dir := t.TempDir()
	c, _ := newTestClient(t, Config{Provider: ProviderOpenAI, BaseURL: srv.URL + "/v1", Model: "m",
		APIKeyEnv: "VERTEBRAE_TEST_KEY", CacheDir: dir, CacheIdentity: "m@test", Headers: map[string]string{"x-team": "eval"}}, 0)
	in := texts(2)
	m, err := c.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, m, in, 3)
	if got := f.request(0).auth; got != "Bearer "+secret {
		t.Fatalf("Authorization = %q", got)
	}

	_, err = c.Embed(context.Background(), []string{"echo"})
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Fatalf("err = %v", err)
	}
	var se *StatusError
	if !errors.As(err, &se) || strings.Contains(se.Body, secret) {
		t.Fatalf("StatusError body = %+v", se)
	}

	rec, err := json.Marshal(c.Recipe())
	if err != nil || strings.Contains(string(rec), secret) || strings.Contains(string(rec), "VERTEBRAE_TEST_KEY") {
		t.Fatalf("recipe %s, %v", rec, err)
	}
	for _, p := range cacheFiles(t, dir) {
		b, err := os.ReadFile(p)
		if err != nil || strings.Contains(string(b), secret) {
			t.Fatalf("cache file %s holds the key (%v)", p, err)
		}
	}

	_, err = New(Config{Provider: ProviderOpenAI, BaseURL: srv.URL, Model: "m", APIKeyEnv: "VERTEBRAE_TEST_UNSET_KEY"})
	if err == nil || !strings.Contains(err.Error(), `"VERTEBRAE_TEST_UNSET_KEY" is not set`) {
		t.Fatalf("missing key: %v", err)
	}
	t.Setenv("VERTEBRAE_TEST_EMPTY", " ")
	_, err = New(Config{Provider: ProviderOpenAI, BaseURL: srv.URL, Model: "m", APIKeyEnv: "VERTEBRAE_TEST_EMPTY"})
	if err == nil || !strings.Contains(err.Error(), `"VERTEBRAE_TEST_EMPTY" is empty`) {
		t.Fatalf("empty key: %v", err)
	}
}

func TestNothingCachedFromFailures(t *testing.T) {
	f, srv := newFake(t, 3)
	f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
		if q.n <= 3 {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	f.vectors = func(q request, v [][]float32) [][]float32 { return v[1:] }
	dir := t.TempDir()
	c, _ := newTestClient(t, Config{Provider: ProviderOllama, BaseURL: srv.URL, Model: "m", CacheDir: dir, CacheIdentity: "m@test", MaxRetries: 1}, 0)
	if _, err := c.Embed(context.Background(), texts(2)); err == nil {
		t.Fatal("exhausted retries: no error")
	}
	if _, err := c.Embed(context.Background(), texts(2)); err == nil || !strings.Contains(err.Error(), "returned 1 embeddings for 2 rows") {
		t.Fatalf("wrong count: %v", err)
	}
	if files := cacheFiles(t, dir); len(files) != 0 {
		t.Fatalf("cached after failures: %v", files)
	}
}

func TestResumeFromCache(t *testing.T) {
	f, srv := newFake(t, 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
		if q.n == 3 {
			// The run is interrupted while the third batch is in flight.
			cancel()
			<-r.Context().Done()
			return true
		}
		return false
	}
	dir := t.TempDir()
	cfg := Config{Provider: ProviderOpenAI, BaseURL: srv.URL + "/v1", Model: "m", BatchSize: 2, Concurrency: 1, CacheDir: dir, CacheIdentity: "m@test"}
	c, _ := newTestClient(t, cfg, 0)
	in := texts(8)
	_, err := c.Embed(ctx, in)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted after 2 of 4 batches") {
		t.Fatalf("err = %v", err)
	}
	if n := len(cacheFiles(t, dir)); n != 4 {
		t.Fatalf("cache files after interruption = %d, want 4", n)
	}
	f.setHook(nil)
	before := f.count()
	m, err := c.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, m, in, 5)
	if got := f.count() - before; got != 2 {
		t.Fatalf("second run made %d requests, want 2", got)
	}
	for i, s := range in {
		want := 1
		if i == 4 || i == 5 {
			want = 2 // sent in the interrupted request, then again
		}
		if got := f.textCount(s); got != want {
			t.Errorf("text %d requested %d times, want %d", i, got, want)
		}
	}

	// A fully cached run needs no server at all; base_url is not part of
	// the cache key.
	cfg.BaseURL = "http://127.0.0.1:1/v1"
	cfg.BatchSize = 3
	c2, _ := newTestClient(t, cfg, 0)
	m2, err := c2.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, m2, in, 5)
}

func TestCorruptCacheEntry(t *testing.T) {
	f, srv := newFake(t, 4)
	dir := t.TempDir()
	c, _ := newTestClient(t, Config{Provider: ProviderTEI, BaseURL: srv.URL, Model: "m", CacheDir: dir, CacheIdentity: "m@test"}, 0)
	in := texts(3)
	if _, err := c.Embed(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	key, _ := c.cacheKey(in[1])
	path := c.cache.path(key)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[10] ^= 0xff // checksum mismatch
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := c.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, m, in, 4)
	if f.count() != 2 || !reflect.DeepEqual(f.request(1).texts, []string{in[1]}) {
		t.Fatalf("second run requests: %d, last %v", f.count(), f.request(f.count()-1).texts)
	}
	if v := c.cache.load(key, 0); !reflect.DeepEqual(v, vecFor(in[1], 4)) {
		t.Fatalf("corrupt entry not rewritten: %v", v)
	}
	// Truncated and foreign files are misses too.
	for _, junk := range [][]byte{b[:7], []byte("not a vector file")} {
		if err := os.WriteFile(path, junk, 0o644); err != nil {
			t.Fatal(err)
		}
		if v := c.cache.load(key, 0); v != nil {
			t.Fatalf("junk %q loaded as %v", junk, v)
		}
	}
	// A width other than the requested dimensions is a miss.
	if err := c.cache.store(key, vecFor(in[1], 4)); err != nil {
		t.Fatal(err)
	}
	if v := c.cache.load(key, 8); v != nil {
		t.Fatalf("width 4 loaded for dimensions 8")
	}
}

func TestConcurrencyBoundAndOrder(t *testing.T) {
	f, srv := newFake(t, 4)
	f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
		// Later batches answer sooner, so completion order is reversed.
		var i int
		fmt.Sscanf(q.texts[0], "text %d", &i)
		select {
		case <-time.After(time.Duration(40-i) * time.Millisecond):
		case <-r.Context().Done():
		}
		return false
	}
	c, _ := newTestClient(t, Config{Provider: ProviderOpenAI, BaseURL: srv.URL + "/v1", Model: "m", BatchSize: 3, Concurrency: 3}, 0)
	in := texts(36)
	m1, err := c.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, m1, in, 4)
	if got := f.maxInflight.Load(); got > 3 || got < 2 {
		t.Fatalf("max concurrent requests = %d, want 2..3", got)
	}
	m2, err := c.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m1.Float32Data(), m2.Float32Data()) {
		t.Fatal("outputs differ between runs")
	}
	if f.count() != 24 {
		t.Fatalf("requests = %d, want 24", f.count())
	}
}

func TestCancellationIsPrompt(t *testing.T) {
	f, srv := newFake(t, 4)
	f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
		<-r.Context().Done()
		return true
	}
	c, _ := newTestClient(t, Config{Provider: ProviderOllama, BaseURL: srv.URL, Model: "m", BatchSize: 1, Concurrency: 2}, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Embed(ctx, texts(10))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "interrupted after 0 of 10 batches") {
		t.Fatalf("err = %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("cancellation took %s", el)
	}
	if n := f.count(); n > 2 {
		t.Fatalf("requests after cancellation: %d", n)
	}

	// Cancellation during a backoff wait stops at once, with the real sleep.
	f.setHook(func(w http.ResponseWriter, r *http.Request, q request) bool {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return true
	})
	c2, err := New(Config{Provider: ProviderOllama, BaseURL: srv.URL, Model: "m", BackoffBase: time.Hour, BackoffMax: time.Hour},
		WithRand(func() float64 { return 0.5 }))
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	start = time.Now()
	if _, err := c2.Embed(ctx2, texts(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("cancellation during backoff took %s", el)
	}
}

func TestFirstFailureStopsOthers(t *testing.T) {
	f, srv := newFake(t, 2)
	f.hook = func(w http.ResponseWriter, r *http.Request, q request) bool {
		if q.texts[0] == "text 000" {
			http.Error(w, "no", http.StatusUnprocessableEntity)
			return true
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-r.Context().Done():
		}
		return false
	}
	c, _ := newTestClient(t, Config{Provider: ProviderTEI, BaseURL: srv.URL, Model: "m", BatchSize: 1, Concurrency: 2}, 0)
	_, err := c.Embed(context.Background(), texts(50))
	if err == nil || !strings.Contains(err.Error(), "HTTP 422") || !strings.Contains(err.Error(), "rows [0, 1)") {
		t.Fatalf("err = %v", err)
	}
	if n := f.count(); n > 4 {
		t.Fatalf("%d requests after the first failure", n)
	}
}

func TestConfigValidation(t *testing.T) {
	ok := Config{Provider: ProviderOpenAI, BaseURL: "http://h/v1", Model: "m"}
	cases := []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Provider = "" }, "provider is required"},
		{func(c *Config) { c.Provider = "cohere" }, `unknown provider "cohere"`},
		{func(c *Config) { c.BaseURL = "" }, "base_url is required"},
		{func(c *Config) { c.BaseURL = "ftp://h" }, "http or https"},
		{func(c *Config) { c.BaseURL = "http://user:pw@h/v1" }, "must not contain credentials"},
		{func(c *Config) { c.BaseURL = "http://h/v1?key=abc" }, "query or fragment"},
		{func(c *Config) { c.Model = " " }, "model is required"},
		{func(c *Config) { c.Dimensions = -1 }, "dimensions must be >= 1"},
		{func(c *Config) { c.Encoding = "int8" }, "encoding must be"},
		{func(c *Config) { c.Provider, c.Encoding = ProviderOllama, EncodingBase64 }, "only supported by the openai provider"},
		{func(c *Config) { c.BatchSize = -1 }, "batch_size must be >= 1"},
		{func(c *Config) { c.Concurrency = -2 }, "max_concurrency must be >= 1"},
		{func(c *Config) { c.MaxRetries = -3 }, "max_retries must be >= 0"},
		{func(c *Config) { c.Timeout = -time.Second }, "request_timeout must be positive"},
		{func(c *Config) { c.BackoffBase = time.Minute }, "initial_backoff (1m0s) must not exceed max_backoff (30s)"},
		{func(c *Config) { c.Headers = map[string]string{"authorization": "Bearer x"} }, "use api_key_env"},
		{func(c *Config) { c.Headers = map[string]string{"bad name": "v"} }, "invalid header name"},
		{func(c *Config) { c.Headers = map[string]string{"X-A": "v\r\nX-B: w"} }, "line break"},
	}
	for _, tc := range cases {
		cfg := ok
		tc.mut(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", cfg, err, tc.want)
		}
	}
	c, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Provider: ProviderOpenAI, BaseURL: "http://h/v1", Model: "m", Encoding: EncodingFloat,
		BatchSize: 64, Concurrency: 4, Timeout: time.Minute, MaxRetries: 4, BackoffBase: time.Second, BackoffMax: 30 * time.Second}
	if !reflect.DeepEqual(c.cfg, want) {
		t.Fatalf("defaults = %+v", c.cfg)
	}
	cfg := ok
	cfg.MaxRetries = NoRetries
	if c, err := New(cfg); err != nil || c.cfg.MaxRetries != 0 {
		t.Fatalf("NoRetries: %v", err)
	}
}

func TestRecipe(t *testing.T) {
	c, err := New(Config{Provider: ProviderOpenAI, BaseURL: "http://h:8000/v1/", Model: "text-embedding-3-small",
		Dimensions: 256, Encoding: EncodingBase64, BatchSize: 32, Headers: map[string]string{"x-b": "1", "X-A": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"provider": "openai", "base_url": "http://h:8000/v1", "model": "text-embedding-3-small",
		"dimensions": 256, "encoding": "base64", "batch_size": 32, "headers": []any{"X-A", "X-B"},
		"cache_identity": nil, "cache_safe": false,
	}
	if got := c.Recipe(); !reflect.DeepEqual(got, want) {
		t.Fatalf("recipe = %v", got)
	}
	c, err = New(Config{Provider: ProviderTEI, BaseURL: "http://h", Model: "bge"})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]any{"provider": "tei", "base_url": "http://h", "model": "bge", "dimensions": nil, "encoding": "float", "batch_size": 64,
		"cache_identity": nil, "cache_safe": false}
	if got := c.Recipe(); !reflect.DeepEqual(got, want) {
		t.Fatalf("recipe = %v", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		h    string
		d    time.Duration
		isOK bool
	}{
		{"", 0, false},
		{"7", 7 * time.Second, true},
		{"-1", 0, false},
		{"99999999999999999", maxRetryAfter, true},
		{now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"soon", 0, false},
	}
	for _, tc := range cases {
		d, ok := parseRetryAfter(tc.h, now)
		if d != tc.d || ok != tc.isOK {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s, %v", tc.h, d, ok, tc.d, tc.isOK)
		}
	}
}

// SPEC §9.5: the per-text vector cache is reuse across runs, so it needs
// a cache_identity, which is part of every key: a new identity (a new
// model deployment) never sees the old identity's vectors.
func TestCacheNeedsIdentity(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(Config{Provider: ProviderTEI, BaseURL: "http://h", Model: "m", CacheDir: dir}); err == nil ||
		!strings.Contains(err.Error(), "cache_identity") {
		t.Fatalf("cache without identity: %v", err)
	}
	f, srv := newFake(t, 3)
	for i, id := range []string{"m@1", "m@2", "m@1"} {
		c, _ := newTestClient(t, Config{Provider: ProviderTEI, BaseURL: srv.URL, Model: "m", CacheDir: dir, CacheIdentity: id}, 0)
		if _, err := c.Embed(context.Background(), texts(2)); err != nil {
			t.Fatal(err)
		}
		// m@1 writes 2 files, m@2 two more, m@1 again hits its own.
		if n, want := len(cacheFiles(t, dir)), []int{2, 4, 4}[i]; n != want {
			t.Errorf("after identity %s: %d cache files, want %d", id, n, want)
		}
		if n, want := f.count(), []int{1, 2, 2}[i]; n != want {
			t.Errorf("after identity %s: %d requests, want %d", id, n, want)
		}
		if r := c.Recipe(); r["cache_identity"] != id || r["cache_safe"] != true {
			t.Errorf("recipe %v", r)
		}
	}
}
