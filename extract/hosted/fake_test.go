package hosted

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// vecFor is the deterministic vector the fake servers return for a text.
func vecFor(text string, dim int) []float32 {
	h := sha256.Sum256([]byte(text))
	v := make([]float32, dim)
	for j := range v {
		v[j] = float32(int(h[j%32])-128)/64 + float32(j/32)
	}
	return v
}

// request is what the fake server saw in one request.
type request struct {
	n     int // 1-based arrival order
	texts []string
	body  map[string]any
	auth  string
}

// fake is an embedding server for all three providers, chosen by route.
type fake struct {
	t   *testing.T
	dim int // width when the request sets no dimensions

	// vectors may rewrite the vectors before they are encoded.
	vectors func(q request, vecs [][]float32) [][]float32

	mu sync.Mutex
	// hook may answer a request itself (returning true), e.g. with an
	// error; set it with setHook once the server has been used.
	hook     func(w http.ResponseWriter, r *http.Request, q request) bool
	requests []request
	perText  map[string]int

	inflight, maxInflight atomic.Int32
}

func newFake(t *testing.T, dim int) (*fake, *httptest.Server) {
	f := &fake{t: t, dim: dim, perText: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cur := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxInflight.Load()
		if cur <= m || f.maxInflight.CompareAndSwap(m, cur) {
			break
		}
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	field := "input"
	if r.URL.Path == "/embed" {
		field = "inputs"
	}
	var texts []string
	list, _ := body[field].([]any)
	for _, x := range list {
		s, _ := x.(string)
		texts = append(texts, s)
	}
	f.mu.Lock()
	q := request{n: len(f.requests) + 1, texts: texts, body: body, auth: r.Header.Get("Authorization")}
	f.requests = append(f.requests, q)
	for _, s := range texts {
		f.perText[s]++
	}
	hook := f.hook
	f.mu.Unlock()

	if hook != nil && hook(w, r, q) {
		return
	}
	dim := f.dim
	if d, ok := body["dimensions"].(float64); ok {
		dim = int(d)
	}
	vecs := make([][]float32, len(texts))
	for i, s := range texts {
		vecs[i] = vecFor(s, dim)
	}
	if f.vectors != nil {
		vecs = f.vectors(q, vecs)
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/embeddings":
		type item struct {
			Object    string `json:"object"`
			Index     int    `json:"index"`
			Embedding any    `json:"embedding"`
		}
		// Reverse order: clients must place vectors by index.
		items := make([]item, 0, len(vecs))
		for i := len(vecs) - 1; i >= 0; i-- {
			var e any = vecs[i]
			if body["encoding_format"] == "base64" {
				e = b64(vecs[i])
			}
			items = append(items, item{"embedding", i, e})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": items, "model": body["model"]})
	case "/api/embed":
		json.NewEncoder(w).Encode(map[string]any{"model": body["model"], "embeddings": vecs})
	case "/embed":
		json.NewEncoder(w).Encode(vecs)
	default:
		http.NotFound(w, r)
	}
}

func b64(v []float32) string {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// setHook replaces the hook while handlers may still be running.
func (f *fake) setHook(h func(w http.ResponseWriter, r *http.Request, q request) bool) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fake) textCount(s string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.perText[s]
}

func (f *fake) request(i int) request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i]
}

// sleeps records the waits between retries without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// newTestClient builds a client with instant, recorded sleeps and a fixed
// jitter value.
func newTestClient(t *testing.T, cfg Config, jitter float64) (*Client, *sleeps) {
	t.Helper()
	s := &sleeps{}
	c, err := New(cfg, WithSleep(s.sleep), WithRand(func() float64 { return jitter }))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, s
}
