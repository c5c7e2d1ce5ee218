package hosted

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxResponseBytes bounds a successful response body, so a misbehaving
// server cannot exhaust memory.
const maxResponseBytes = 256 << 20

// requestBody encodes the provider's request for texts.
func (c *Client) requestBody(texts []string) ([]byte, error) {
	switch c.cfg.Provider {
	case ProviderOllama:
		return json.Marshal(struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}{c.cfg.Model, texts})
	case ProviderTEI:
		return json.Marshal(struct {
			Inputs []string `json:"inputs"`
		}{texts})
	}
	return json.Marshal(struct {
		Model          string   `json:"model"`
		Input          []string `json:"input"`
		EncodingFormat string   `json:"encoding_format"`
		Dimensions     int      `json:"dimensions,omitempty"`
	}{c.cfg.Model, texts, c.cfg.Encoding, c.cfg.Dimensions})
}

// attemptResult classifies one attempt's failure for the retry loop.
type attemptResult struct {
	err        error
	retry      bool
	retryAfter time.Duration
	hasAfter   bool
}

// fetch runs one batch request with retries and returns the validated
// vectors of texts, whose endpoint rows are rows (used in messages).
func (c *Client) fetch(ctx context.Context, texts []string, rows []int) ([][]float32, error) {
	body, err := c.requestBody(texts)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	attempts := c.cfg.MaxRetries + 1
	for attempt := 1; ; attempt++ {
		vecs, res := c.attempt(ctx, body, rows)
		if res.err == nil {
			return vecs, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var se *StatusError
		if errors.As(res.err, &se) {
			se.Attempts = attempt
		}
		if !res.retry {
			return nil, res.err
		}
		if attempt == attempts {
			what := "last error"
			if se != nil {
				what = "last status"
			}
			return nil, fmt.Errorf("giving up after %s, %s: %w", plural(attempt, "attempt"), what, res.err)
		}
		if err := c.sleep(ctx, c.delay(attempt-1, res)); err != nil {
			return nil, err
		}
	}
}

// delay is the wait before retry number retry (0-based): full jitter over
// the capped exponential ceiling, but never less than the server's
// Retry-After (itself capped at 60 s, SPEC §9.4). Retry-After is not capped
// by BackoffMax: retrying sooner than the server asked only earns another
// 429.
func (c *Client) delay(retry int, res attemptResult) time.Duration {
	ceil := c.cfg.BackoffBase
	for i := 0; i < retry && ceil < c.cfg.BackoffMax; i++ {
		ceil *= 2
	}
	ceil = min(ceil, c.cfg.BackoffMax)
	r := min(max(c.rand(), 0), 1)
	d := time.Duration(r * float64(ceil))
	if res.hasAfter {
		d = max(d, min(res.retryAfter, maxRetryAfter))
	}
	return d
}

// attempt sends one request under the per-request timeout.
func (c *Client) attempt(ctx context.Context, body []byte, rows []int) ([][]float32, attemptResult) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	// transient marks transport failures: a timeout of this attempt or a
	// connection error is retried; the caller's cancellation is not.
	transient := func(err error) attemptResult {
		if ctx.Err() != nil {
			return attemptResult{err: ctx.Err()}
		}
		if errors.Is(actx.Err(), context.DeadlineExceeded) {
			return attemptResult{err: fmt.Errorf("request timed out after %s: %w", c.cfg.Timeout, err), retry: true}
		}
		return attemptResult{err: fmt.Errorf("connection error: %w", err), retry: true}
	}

	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, attemptResult{err: fmt.Errorf("build request: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, v := range c.cfg.Headers {
		req.Header.Set(k, v)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, transient(err)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyInError+1))
		if err != nil && ctx.Err() != nil {
			return nil, attemptResult{err: ctx.Err()}
		}
		// Drain a little more so the connection can be reused.
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		res := attemptResult{
			err:   &StatusError{StatusCode: resp.StatusCode, Status: resp.Status, Body: snippet(b, c.key)},
			retry: retryable(resp.StatusCode),
		}
		if res.retry {
			res.retryAfter, res.hasAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		return nil, res
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, transient(err)
	}
	if len(b) > maxResponseBytes {
		return nil, attemptResult{err: fmt.Errorf("response exceeds %d bytes", maxResponseBytes)}
	}
	vecs, err := c.decode(b, rows)
	if err != nil {
		return nil, attemptResult{err: err}
	}
	return vecs, attemptResult{}
}

// parseRetryAfter reads delay-seconds or an HTTP date (RFC 9110 §10.2.3).
func parseRetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// decode parses and validates a successful response for len(rows) texts.
func (c *Client) decode(b []byte, rows []int) ([][]float32, error) {
	n := len(rows)
	var raw [][]float64 // float vectors, in input order
	var vecs [][]float32
	switch c.cfg.Provider {
	case ProviderOpenAI:
		var resp struct {
			Data []struct {
				Index     *int            `json:"index"`
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			return nil, fmt.Errorf("malformed openai response: %w", err)
		}
		if len(resp.Data) != n {
			return nil, mismatchf("returned %d embeddings for %d rows", len(resp.Data), n)
		}
		vecs = make([][]float32, n)
		for i, d := range resp.Data {
			if d.Index == nil {
				return nil, mismatchf("data[%d] has no index", i)
			}
			at := *d.Index
			if at < 0 || at >= n {
				return nil, mismatchf("data[%d].index %d is outside [0, %d)", i, at, n)
			}
			if vecs[at] != nil {
				return nil, mismatchf("index %d appears twice", at)
			}
			v, err := decodeOpenAIEmbedding(d.Embedding, rows[at])
			if err != nil {
				return nil, fmt.Errorf("data[%d]: %w", i, err)
			}
			vecs[at] = v
		}
	case ProviderOllama:
		var resp struct {
			Embeddings [][]float64 `json:"embeddings"`
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			return nil, fmt.Errorf("malformed ollama response: %w", err)
		}
		raw = resp.Embeddings
	case ProviderTEI:
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("malformed tei response: %w", err)
		}
	}
	if vecs == nil {
		if len(raw) != n {
			return nil, mismatchf("returned %d embeddings for %d rows", len(raw), n)
		}
		vecs = make([][]float32, n)
		for i, r := range raw {
			v, err := toFloat32(r, rows[i])
			if err != nil {
				return nil, err
			}
			vecs[i] = v
		}
	}
	return vecs, c.checkWidths(vecs, rows)
}

// checkWidths requires one non-zero width, equal to Dimensions when set.
func (c *Client) checkWidths(vecs [][]float32, rows []int) error {
	w := len(vecs[0])
	for i, v := range vecs {
		if len(v) == 0 {
			return mismatchf("embedding for row %d is empty", rows[i])
		}
		if len(v) != w {
			return mismatchf("embedding for row %d has %d dimensions, row %d has %d", rows[i], len(v), rows[0], w)
		}
	}
	if d := c.cfg.Dimensions; d > 0 && w != d {
		return mismatchf("embeddings have %d dimensions, dimensions is %d", w, d)
	}
	return nil
}

// decodeOpenAIEmbedding accepts either encoding whatever was requested:
// some compatible servers ignore encoding_format.
func decodeOpenAIEmbedding(m json.RawMessage, row int) ([]float32, error) {
	m = bytes.TrimSpace(m)
	if len(m) == 0 || string(m) == "null" {
		return nil, mismatchf("embedding for row %d is missing", row)
	}
	if m[0] != '"' {
		var r []float64
		if err := json.Unmarshal(m, &r); err != nil {
			return nil, fmt.Errorf("malformed openai response: %w", err)
		}
		return toFloat32(r, row)
	}
	var s string
	if err := json.Unmarshal(m, &s); err != nil {
		return nil, fmt.Errorf("malformed openai response: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("malformed openai response: base64 embedding for row %d: %w", row, err)
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("malformed openai response: base64 embedding for row %d has %d bytes, not a multiple of 4", row, len(b))
	}
	v := make([]float32, len(b)/4)
	for j := range v {
		f := math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("embedding for row %d, column %d: must contain only finite numeric values", row, j)
		}
		v[j] = f
	}
	return v, nil
}

// toFloat32 narrows a JSON vector; JSON cannot carry NaN or Inf, but a
// finite binary64 can still overflow float32.
func toFloat32(r []float64, row int) ([]float32, error) {
	v := make([]float32, len(r))
	for j, x := range r {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("embedding for row %d, column %d: must contain only finite numeric values", row, j)
		}
		f := float32(x)
		if math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("embedding for row %d, column %d: value %g cannot be represented in float32", row, j, x)
		}
		v[j] = f
	}
	return v, nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
