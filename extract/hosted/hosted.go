package hosted

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"
)

// Providers.
const (
	ProviderOpenAI = "openai" // OpenAI and OpenAI-compatible servers
	ProviderOllama = "ollama"
	ProviderTEI    = "tei" // Text Embeddings Inference native route
)

// Encodings of the openai provider's response vectors.
const (
	EncodingFloat  = "float"
	EncodingBase64 = "base64" // little-endian float32, exact and smaller
)

// ExtractorType is the extractor_type hosted adapters report (SPEC §9.4).
const ExtractorType = "hosted_embeddings"

// NoRetries as Config.MaxRetries disables retries (0 means the default).
const NoRetries = -1

// Defaults from SPEC §9.4.
const (
	defaultBatchSize   = 64
	defaultConcurrency = 4
	defaultMaxRetries  = 4
	defaultBackoffBase = time.Second
	defaultBackoffMax  = 30 * time.Second
	defaultTimeout     = 60 * time.Second

	// maxRetryAfter caps a server's Retry-After (SPEC §9.4).
	maxRetryAfter = 60 * time.Second
)

// Config configures a Client. Zero values select the defaults; field
// comments give the run-file option each field corresponds to.
type Config struct {
	// Provider is "openai", "ollama" or "tei" (the run-file type).
	Provider string
	// BaseURL is the API root without the route: "http://host:8000/v1"
	// (openai), "http://host:11434" (ollama), "http://host:8080" (tei).
	// User info, query strings and fragments are rejected because the URL
	// enters the recipe. base_url, required.
	BaseURL string
	// Model names the model. It is sent to openai and ollama; for tei it
	// only identifies the outputs (recipe and cache key). model, required.
	Model string
	// Dimensions, when > 0, is sent as "dimensions" to openai and checked
	// as the width of every returned vector for every provider. 0 means
	// not sent and not checked. dimensions.
	Dimensions int
	// APIKeyEnv names the environment variable holding the API key, read
	// once by New and sent as Authorization: Bearer. "" sends no key.
	// api_key_env.
	APIKeyEnv string
	// Headers are extra, non-secret request headers. Authorization is
	// rejected: keys go through APIKeyEnv so they never reach a recipe.
	// headers.
	Headers map[string]string
	// Encoding is "float" (default) or "base64"; openai only.
	Encoding string
	// BatchSize is the number of texts per request; default 64. batch_size.
	BatchSize int
	// Concurrency bounds the requests in flight; default 4. max_concurrency.
	Concurrency int
	// Timeout bounds each request attempt, body included; default 60 s.
	// request_timeout.
	Timeout time.Duration
	// MaxRetries is the number of retries after the first attempt; 0 means
	// the default (4) and NoRetries disables retries. max_retries.
	MaxRetries int
	// BackoffBase and BackoffMax shape the backoff: retry r waits a uniform
	// random duration in [0, min(BackoffMax, BackoffBase·2^r)); defaults
	// 1 s and 30 s. initial_backoff, max_backoff.
	BackoffBase, BackoffMax time.Duration
	// CacheIdentity names the outputs beyond provider, URL and model (e.g.
	// "e5-base@2026-01"): the caller's promise that equal identities give
	// equal vectors. Without it the outputs have no identity (a server may
	// swap the model behind one URL), so nothing is reused across runs
	// (SPEC §9.5). cache_identity.
	CacheIdentity string
	// CacheDir holds the per-text vector cache; "" disables it. It needs
	// a non-blank CacheIdentity, which enters every cache key.
	CacheDir string
	// HTTPClient sends the requests; nil uses a client whose connection
	// pool fits Concurrency. Tests use it to count or intercept requests.
	HTTPClient *http.Client
}

// Option adjusts a Client beyond its Config; the options exist so tests
// can make retries deterministic and instant.
type Option func(*Client)

// WithRand replaces the jitter source, which must return values in [0, 1)
// and be safe for concurrent use.
func WithRand(f func() float64) Option {
	return func(c *Client) { c.rand = f }
}

// WithSleep replaces the wait between retries. f must return promptly with
// a non-nil error when ctx is done.
func WithSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) { c.sleep = f }
}

// Client embeds texts through one hosted API. It is safe for concurrent use.
type Client struct {
	cfg      Config // defaults applied
	base     string // BaseURL without trailing slashes
	endpoint string
	key      string
	http     *http.Client
	cache    *cache // nil when disabled
	rand     func() float64
	sleep    func(context.Context, time.Duration) error
}

// New validates cfg, applies the defaults, reads the API key and prepares
// the cache directory.
func New(cfg Config, opts ...Option) (*Client, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	// A private copy: the caller may reuse its map while requests run.
	cfg.Headers = maps.Clone(cfg.Headers)
	c := &Client{
		cfg:   cfg,
		base:  strings.TrimRight(cfg.BaseURL, "/"),
		rand:  rand.Float64,
		sleep: sleepCtx,
		http:  cfg.HTTPClient,
	}
	c.endpoint = c.base + route(cfg.Provider)
	if cfg.APIKeyEnv != "" {
		v, ok := os.LookupEnv(cfg.APIKeyEnv)
		if !ok {
			return nil, fmt.Errorf("hosted: api_key_env: environment variable %q is not set", cfg.APIKeyEnv)
		}
		// Trailing newlines are common when keys are read from files.
		v = strings.TrimSpace(v)
		if v == "" {
			return nil, fmt.Errorf("hosted: api_key_env: environment variable %q is empty", cfg.APIKeyEnv)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("hosted: api_key_env: environment variable %q holds an invalid header value", cfg.APIKeyEnv)
		}
		c.key = v
	}
	if c.http == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, cfg.Concurrency)
		// No client-wide timeout: each attempt carries its own deadline.
		c.http = &http.Client{Transport: tr}
	}
	if cfg.CacheDir != "" {
		if strings.TrimSpace(cfg.CacheIdentity) == "" {
			return nil, fmt.Errorf("hosted: a vector cache (%s) needs a cache_identity: without one a changed model behind the same URL would be served stale vectors", cfg.CacheDir)
		}
		// Creating the directory now surfaces an unwritable location before
		// any request is paid for.
		if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("hosted: cache directory %s: %w", cfg.CacheDir, err)
		}
		c.cache = &cache{dir: cfg.CacheDir}
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

func route(provider string) string {
	switch provider {
	case ProviderOllama:
		return "/api/embed"
	case ProviderTEI:
		return "/embed"
	}
	return "/embeddings"
}

// normalize applies the defaults and validates the result.
func (cfg *Config) normalize() error {
	switch cfg.Provider {
	case ProviderOpenAI, ProviderOllama, ProviderTEI:
	case "":
		return errors.New("hosted: provider is required (openai, ollama or tei)")
	default:
		return fmt.Errorf("hosted: unknown provider %q (want openai, ollama or tei)", cfg.Provider)
	}
	if err := checkBaseURL(cfg.BaseURL); err != nil {
		return err
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return errors.New("hosted: model is required")
	}
	if cfg.Dimensions < 0 {
		return fmt.Errorf("hosted: dimensions must be >= 1 when set, got %d", cfg.Dimensions)
	}
	switch cfg.Encoding {
	case "":
		cfg.Encoding = EncodingFloat
	case EncodingFloat:
	case EncodingBase64:
		if cfg.Provider != ProviderOpenAI {
			return fmt.Errorf("hosted: encoding %q is only supported by the openai provider", cfg.Encoding)
		}
	default:
		return fmt.Errorf("hosted: encoding must be %q or %q, got %q", EncodingFloat, EncodingBase64, cfg.Encoding)
	}
	for name, v := range cfg.Headers {
		if !validHeaderName(name) {
			return fmt.Errorf("hosted: headers: invalid header name %q", name)
		}
		if http.CanonicalHeaderKey(name) == "Authorization" {
			return errors.New("hosted: headers: Authorization is not allowed; use api_key_env")
		}
		// The value is not echoed: a misplaced secret must not leak here.
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("hosted: headers: value of %q contains a line break or NUL", name)
		}
	}
	var err error
	if cfg.BatchSize, err = positiveOr("batch_size", cfg.BatchSize, defaultBatchSize); err != nil {
		return err
	}
	if cfg.Concurrency, err = positiveOr("max_concurrency", cfg.Concurrency, defaultConcurrency); err != nil {
		return err
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = defaultMaxRetries
	case cfg.MaxRetries == NoRetries:
		cfg.MaxRetries = 0
	case cfg.MaxRetries < 0:
		return fmt.Errorf("hosted: max_retries must be >= 0, got %d", cfg.MaxRetries)
	}
	if cfg.Timeout, err = durationOr("request_timeout", cfg.Timeout, defaultTimeout); err != nil {
		return err
	}
	if cfg.BackoffBase, err = durationOr("initial_backoff", cfg.BackoffBase, defaultBackoffBase); err != nil {
		return err
	}
	if cfg.BackoffMax, err = durationOr("max_backoff", cfg.BackoffMax, defaultBackoffMax); err != nil {
		return err
	}
	if cfg.BackoffBase > cfg.BackoffMax {
		return fmt.Errorf("hosted: initial_backoff (%s) must not exceed max_backoff (%s)", cfg.BackoffBase, cfg.BackoffMax)
	}
	return nil
}

func checkBaseURL(s string) error {
	if s == "" {
		return errors.New("hosted: base_url is required")
	}
	u, err := url.Parse(s)
	if err != nil {
		// url errors quote the input, which may hold credentials.
		return errors.New("hosted: base_url is not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("hosted: base_url must use http or https")
	}
	if u.Host == "" {
		return errors.New("hosted: base_url has no host")
	}
	if u.User != nil {
		return errors.New("hosted: base_url must not contain credentials; use api_key_env")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return errors.New("hosted: base_url must not contain a query or fragment")
	}
	return nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		// RFC 9110 token characters.
		if r > 0x7e || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

func positiveOr(name string, v, def int) (int, error) {
	switch {
	case v == 0:
		return def, nil
	case v < 0:
		return 0, fmt.Errorf("hosted: %s must be >= 1, got %d", name, v)
	}
	return v, nil
}

func durationOr(name string, v, def time.Duration) (time.Duration, error) {
	switch {
	case v == 0:
		return def, nil
	case v < 0:
		return 0, fmt.Errorf("hosted: %s must be positive, got %s", name, v)
	}
	return v, nil
}

// Recipe returns the output-affecting options for the extractor recipe
// (SPEC §9.5): provider, base_url, model, dimensions (null when not set),
// encoding, batch_size and, when set, the sorted names of the extra headers.
// It never contains the key, the key's variable or header values.
func (c *Client) Recipe() map[string]any {
	var dims any
	if c.cfg.Dimensions > 0 {
		dims = c.cfg.Dimensions
	}
	r := map[string]any{
		"provider":   c.cfg.Provider,
		"base_url":   c.base,
		"model":      c.cfg.Model,
		"dimensions": dims,
		"encoding":   c.cfg.Encoding,
		"batch_size": c.cfg.BatchSize,
	}
	// cache_identity and cache_safe make the recipe speak for itself
	// (SPEC §9.5): only an explicit identity makes hosted outputs cacheable.
	if id := strings.TrimSpace(c.cfg.CacheIdentity); id != "" {
		r["cache_identity"], r["cache_safe"] = c.cfg.CacheIdentity, true
	} else {
		r["cache_identity"], r["cache_safe"] = nil, false
	}
	if len(c.cfg.Headers) > 0 {
		names := make([]string, 0, len(c.cfg.Headers))
		for k := range c.cfg.Headers {
			names = append(names, http.CanonicalHeaderKey(k))
		}
		sort.Strings(names)
		list := make([]any, len(names))
		for i, n := range names {
			list[i] = n
		}
		r["headers"] = list
	}
	return r
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
