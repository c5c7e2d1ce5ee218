package command

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Type is the extractor_type reported for command extractors.
const Type = "command"

// Defaults of the run-file options (SPEC §9.4). The Go API treats a zero
// Config.Timeout as "no timeout", so the run-file layer applies
// DefaultTimeout itself.
const (
	DefaultBatchSize = 64
	DefaultTimeout   = 600 * time.Second
)

// Output formats accepted by Config.Output.
const (
	OutputAuto  = "auto"  // .npy when stdout starts with the npy magic, else JSON Lines
	OutputJSONL = "jsonl" // JSON Lines only
	OutputNPY   = "npy"   // a .npy stream only
)

// DefaultBranch is the VERTEBRAE_BRANCH value in same-modality mode.
const DefaultBranch = "default"

var (
	// ErrMalformed is wrapped by errors about unparseable or inconsistent stdout.
	ErrMalformed = errors.New("malformed output")
	// ErrTimeout is wrapped by errors about a batch exceeding Config.Timeout.
	ErrTimeout = errors.New("timed out")
)

// Config describes a command extractor.
type Config struct {
	Name string   // extractor name; non-blank
	Argv []string // program and arguments, run without a shell
	Dir  string   // working directory; "" = the current one
	Env  []string // extra KEY=VALUE entries, added to the inherited environment

	// Output is "jsonl", "npy", or "" / "auto" to detect the format from the
	// first bytes of stdout (SPEC §9.4).
	Output string
	// Timeout bounds each batch's process; 0 means no timeout.
	Timeout time.Duration
	// BatchSize caps the rows sent to one process; 0 means DefaultBatchSize.
	// Encode splits larger calls into several processes.
	BatchSize int

	// Modality is the endpoint modality served ("text", "image",
	// "embeddings" or a custom token). "" infers it per batch from the
	// items' set fields and reports the extractor as "multimodal".
	Modality string
	// Branches, when non-empty, maps branch names to modalities and makes
	// the extractor a branch encoder (EncodeBranch).
	Branches map[string]string
	// BatchDependent declares that a row's embedding depends on the other
	// rows of its batch (run-file streaming_safe: false).
	BatchDependent bool
	// CacheIdentity, when non-blank, names the model behind the program and
	// makes its outputs cache-safe (SPEC §9.5).
	CacheIdentity string
	// Persistent starts the program once per branch and keeps it for every
	// batch (run-file `persistent: true`, SPEC §9.4) instead of once per
	// batch; see the package documentation for the request/reply protocol.
	// Timeout then bounds each batch's round trip (the first one includes
	// the program's start-up) and the exit after Close. Batches for one
	// branch are serialised on its process. Output must be "" / "auto" or
	// "jsonl": replies are JSON lines. Call Close when done.
	Persistent bool
}

// Item is one endpoint row. Only the fields that are set are sent; which one
// becomes "value" follows the modality (see Config.Modality).
type Item struct {
	ID     string
	Text   string
	Path   string    // image path; sent as an absolute path
	Vector []float64 // for the embeddings modality
}

// Extractor runs a Config. It is safe for concurrent use: every batch gets
// its own process, or, when persistent, batches take turns on their branch's
// process.
type Extractor struct {
	cfg       Config
	output    string
	batchSize int

	mu      sync.Mutex         // guards workers
	workers map[string]*worker // persistent mode: the live process per branch
}

// New validates cfg and returns an extractor. cfg's slices and map are
// copied, so later changes by the caller do not alter the recipe.
func New(cfg Config) (*Extractor, error) {
	if strings.TrimSpace(cfg.Name) == "" {
		return nil, errors.New("command extractor: name must not be blank")
	}
	fail := func(format string, args ...any) (*Extractor, error) {
		return nil, fmt.Errorf("command extractor %q: %s", cfg.Name, fmt.Sprintf(format, args...))
	}
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return fail("command must name a program")
	}
	for _, a := range cfg.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fail("command argument %q contains a NUL byte", a)
		}
	}
	for _, kv := range cfg.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
			// The value may be a secret: name only the key part.
			return fail("env entry %q is not KEY=VALUE", k)
		}
	}
	output := cfg.Output
	switch output {
	case "":
		output = OutputAuto
	case OutputAuto, OutputJSONL, OutputNPY:
	default:
		return fail("unknown output format %q (want %q, %q or %q)", output, OutputJSONL, OutputNPY, OutputAuto)
	}
	if cfg.Persistent && output == OutputNPY {
		return fail("output %q cannot be used with persistent: a persistent worker answers with JSON lines", OutputNPY)
	}
	if cfg.Timeout < 0 {
		return fail("timeout must not be negative; got %v", cfg.Timeout)
	}
	batchSize := cfg.BatchSize
	switch {
	case batchSize == 0:
		batchSize = DefaultBatchSize
	case batchSize < 0:
		return fail("batch_size must be >= 1; got %d", batchSize)
	}
	if cfg.Modality != strings.TrimSpace(cfg.Modality) {
		return fail("modality %q has surrounding spaces", cfg.Modality)
	}
	for b, m := range cfg.Branches {
		if strings.TrimSpace(b) == "" || strings.TrimSpace(m) == "" {
			return fail("branches need non-blank names and modalities; got %q: %q", b, m)
		}
	}
	cfg.Argv = slices.Clone(cfg.Argv)
	cfg.Env = slices.Clone(cfg.Env)
	cfg.Branches = maps.Clone(cfg.Branches)
	return &Extractor{cfg: cfg, output: output, batchSize: batchSize}, nil
}

// Name returns the extractor name.
func (e *Extractor) Name() string { return e.cfg.Name }

// Type returns "command".
func (e *Extractor) Type() string { return Type }

// Modality returns the configured modality, or "multimodal" when it is
// inferred from the items.
func (e *Extractor) Modality() string {
	if e.cfg.Modality == "" {
		return "multimodal"
	}
	return e.cfg.Modality
}

// Branches returns a copy of the branch → modality map (nil in same-modality
// mode).
func (e *Extractor) Branches() map[string]string { return maps.Clone(e.cfg.Branches) }

// StreamingSafe reports whether outputs are independent of batch composition.
func (e *Extractor) StreamingSafe() bool { return !e.cfg.BatchDependent }

// Persistent reports whether one process serves every batch of a branch.
func (e *Extractor) Persistent() bool { return e.cfg.Persistent }

// BatchSize returns the effective number of rows per process (per request
// when persistent).
func (e *Extractor) BatchSize() int { return e.batchSize }

// Recipe describes the extractor for identity hashing (SPEC §9.5). Env values
// are left out because they may hold secrets; only the variable names appear.
// The timeout is left out because it does not change outputs, and so is
// Persistent: it changes how rows reach the program (one long-lived process
// instead of one per batch), never the embeddings, so switching it keeps the
// cache identity and the cached endpoints.
func (e *Extractor) Recipe() map[string]any {
	argv := make([]any, len(e.cfg.Argv))
	for i, a := range e.cfg.Argv {
		argv[i] = a
	}
	names := make([]string, 0, len(e.cfg.Env))
	for _, kv := range e.cfg.Env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	envNames := make([]any, len(names))
	for i, n := range names {
		envNames[i] = n
	}
	var branches any
	if len(e.cfg.Branches) > 0 {
		m := make(map[string]any, len(e.cfg.Branches))
		for b, mod := range e.cfg.Branches {
			m[b] = mod
		}
		branches = m
	}
	var cacheIdentity any
	cacheSafe := strings.TrimSpace(e.cfg.CacheIdentity) != ""
	if cacheSafe {
		cacheIdentity = e.cfg.CacheIdentity
	}
	return map[string]any{
		"name":            e.cfg.Name,
		"extractor_type":  Type,
		"argv":            argv,
		"dir":             nullable(e.cfg.Dir),
		"env_names":       envNames,
		"output":          e.output,
		"batch_size":      e.batchSize,
		"modality":        nullable(e.cfg.Modality),
		"branches":        branches,
		"streaming_safe":  !e.cfg.BatchDependent,
		"cache_identity":  cacheIdentity,
		"path_identities": nil, // the program's files are opaque to us
		"cache_safe":      cacheSafe,
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Encode embeds items, the endpoint rows [start, start+len(items)) of side
// ("query" or "gallery"), in same-modality mode. Rows are sent to the program
// in batches of at most BatchSize, one process per batch (or one request per
// batch to the branch's persistent process). JSON Lines output
// yields a float64 matrix (JSON numbers are binary64); .npy output keeps its
// element type. An empty items slice yields a 0×0 matrix without running
// anything.
func (e *Extractor) Encode(ctx context.Context, side string, start int, items []Item) (*matrix.Dense, error) {
	if len(e.cfg.Branches) > 0 {
		return nil, fmt.Errorf("command extractor %q has branches; encode through EncodeBranch", e.cfg.Name)
	}
	return e.encode(ctx, DefaultBranch, e.cfg.Modality, side, start, 1, items)
}

// EncodeBranch is Encode for a branch encoder: the branch's modality is used
// and VERTEBRAE_BRANCH names the branch.
func (e *Extractor) EncodeBranch(ctx context.Context, branch, side string, start int, items []Item) (*matrix.Dense, error) {
	if len(e.cfg.Branches) == 0 {
		return nil, fmt.Errorf("command extractor %q does not support branches", e.cfg.Name)
	}
	modality, ok := e.cfg.Branches[branch]
	if !ok {
		return nil, fmt.Errorf("command extractor %q has no branch %q", e.cfg.Name, branch)
	}
	return e.encode(ctx, branch, modality, side, start, 1, items)
}

// encode embeds items, endpoint rows start, start+stride, …: a modulo
// shard's gathered batch (extract.Batch) has stride N, so the program is
// sent each row's true endpoint index.
func (e *Extractor) encode(ctx context.Context, branch, modality, side string, start, stride int, items []Item) (*matrix.Dense, error) {
	if side != "query" && side != "gallery" {
		return nil, fmt.Errorf("command extractor %q: side must be \"query\" or \"gallery\"; got %q", e.cfg.Name, side)
	}
	if start < 0 {
		return nil, fmt.Errorf("command extractor %q: negative start row %d", e.cfg.Name, start)
	}
	stride = max(1, stride)
	if len(items) == 0 {
		return matrix.NewDense64(0, 0, nil)
	}
	parts := make([]*matrix.Dense, 0, (len(items)+e.batchSize-1)/e.batchSize)
	for lo := 0; lo < len(items); lo += e.batchSize {
		hi := min(lo+e.batchSize, len(items))
		b := batch{side: side, branch: branch, modality: modality, start: start + lo*stride, stride: stride, items: items[lo:hi]}
		run := e.run
		if e.cfg.Persistent {
			run = e.runPersistent
		}
		m, err := run(ctx, b)
		if err != nil {
			return nil, err
		}
		parts = append(parts, m)
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	m, err := concat(parts)
	if err != nil {
		all := batch{side: side, start: start, stride: stride, items: items}
		return nil, fmt.Errorf("command extractor %q: %s rows %s: %w", e.cfg.Name, side, all.span(), err)
	}
	return m, nil
}

// concat stacks batch outputs, which must agree in width and element type.
func concat(parts []*matrix.Dense) (*matrix.Dense, error) {
	first := parts[0]
	rows := 0
	for i, p := range parts {
		if p.Cols() != first.Cols() || p.DType() != first.DType() {
			return nil, fmt.Errorf("changed embedding format between batches: batch 0 gave %d %s columns, batch %d gave %d %s columns",
				first.Cols(), first.DType(), i, p.Cols(), p.DType())
		}
		rows += p.Rows()
	}
	cols := first.Cols()
	switch first.DType() {
	case matrix.Float16:
		data := make([]uint16, 0, rows*cols)
		for _, p := range parts {
			data = append(data, p.Float16Bits()...)
		}
		return matrix.NewDense16(rows, cols, data)
	case matrix.Float32:
		data := make([]float32, 0, rows*cols)
		for _, p := range parts {
			data = append(data, p.Float32Data()...)
		}
		return matrix.NewDense32(rows, cols, data)
	default:
		data := make([]float64, 0, rows*cols)
		for _, p := range parts {
			data = append(data, p.Float64Data()...)
		}
		return matrix.NewDense64(rows, cols, data)
	}
}
