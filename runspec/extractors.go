package runspec

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Extractor types of the run file (SPEC §9.4).
const (
	TypePrecomputed     = "precomputed"
	TypeOpenAI          = "openai"
	TypeOllama          = "ollama"
	TypeTEI             = "tei"
	TypeCommand         = "command"
	TypeONNXDualEncoder = "onnx_dual_encoder"
	TypeONNXText        = "onnx_text"
	TypeONNXImage       = "onnx_image"
)

// Extractor is one `extractors` entry. Options holds every key except the
// entry-level ones (name, type, query_branch, gallery_branch, cache), already
// checked against the type's option set of SPEC §9.4 and converted to
// JSON-like values: string, bool, int64, float64, []any, map[string]any. Path
// options are resolved against the run file's directory. Options given as
// null are left out (the adapter default applies).
type Extractor struct {
	Name          string
	Type          string
	QueryBranch   string // set together with GalleryBranch, or neither
	GalleryBranch string
	// Cache is false when the entry says `cache: false` (cache status
	// "disabled", SPEC §9.5).
	Cache       bool
	Options     map[string]any
	OptionLines map[string]int // option → line of its key
	Line        int            // line of the entry
	path        string         // run file, for Errorf
}

// Branched reports whether the entry runs in branch mode.
func (e *Extractor) Branched() bool { return e.QueryBranch != "" }

// Errorf returns an error positioned at option key (at the entry when the key
// is absent), so adapters can report bad option values as "<path>:<line>".
func (e *Extractor) Errorf(key, format string, args ...any) error {
	line, ok := e.OptionLines[key]
	if !ok {
		line = e.Line
	}
	return &Error{Path: e.path, Line: line, Msg: fmt.Sprintf("extractor %s: ", e.Name) + fmt.Sprintf(format, args...)}
}

// Str returns a string option, or "" when absent.
func (e *Extractor) Str(key string) string {
	s, _ := e.Options[key].(string)
	return s
}

// Int returns an integer option, or def when absent.
func (e *Extractor) Int(key string, def int) int {
	if n, ok := asInt(e.Options[key]); ok {
		return n
	}
	return def
}

// Bool returns a bool option, or def when absent.
func (e *Extractor) Bool(key string, def bool) bool {
	if b, ok := e.Options[key].(bool); ok {
		return b
	}
	return def
}

// Strings returns a list-of-strings option (command), or nil when absent.
func (e *Extractor) Strings(key string) []string {
	list, _ := e.Options[key].([]any)
	if list == nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// StringMap returns a string-to-string option (env, headers, branches), or
// nil when absent.
func (e *Extractor) StringMap(key string) map[string]string {
	m, _ := e.Options[key].(map[string]any)
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, _ := v.(string)
		out[k] = s
	}
	return out
}

// TextPrefix returns the text_prefix option (SPEC §9.4): the strings
// prepended to every query and every gallery text before encoding; both ""
// when absent. Pass them to extract.WithTextPrefix.
func (e *Extractor) TextPrefix() (query, gallery string) {
	m, _ := e.Options["text_prefix"].(map[string]any)
	query, _ = m["query"].(string)
	gallery, _ = m["gallery"].(string)
	return query, gallery
}

// Duration returns a duration option, or def when absent (see ParseDuration).
func (e *Extractor) Duration(key string, def time.Duration) time.Duration {
	v, ok := e.Options[key]
	if !ok {
		return def
	}
	d, err := ParseDuration(v)
	if err != nil {
		return def
	}
	return d
}

// ParseDuration reads a duration option: a number of seconds (fractions
// allowed) or a Go duration string such as "500ms" or "1m30s". It must be
// positive.
func ParseDuration(v any) (time.Duration, error) {
	var d time.Duration
	switch t := v.(type) {
	case string:
		var err error
		if d, err = time.ParseDuration(t); err != nil {
			return 0, fmt.Errorf("must be a number of seconds or a duration such as \"30s\"; got %q", t)
		}
	case int64, float64:
		var secs float64
		if i, ok := t.(int64); ok {
			secs = float64(i)
		} else {
			secs = t.(float64)
		}
		if math.IsNaN(secs) || secs*1e9 >= math.MaxInt64 || secs*1e9 <= math.MinInt64 {
			return 0, fmt.Errorf("is out of range; got %v", secs)
		}
		d = time.Duration(math.Round(secs * 1e9))
	default:
		return 0, fmt.Errorf("must be a number of seconds or a duration string; got %T", v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive; got %v", d)
	}
	return d, nil
}

// optKind is how an option value is checked (and, for paths, resolved).
type optKind int

const (
	optString      optKind = iota // non-blank string
	optPath                       // non-blank string, resolved against the run file's directory
	optLibrary                    // like optPath, but a bare file name is left to the dynamic loader
	optURL                        // http or https URL
	optPosInt                     // integer >= 1
	optNonNegInt                  // integer >= 0
	optBool                       //
	optDuration                   // see ParseDuration
	optArgv                       // non-empty list of strings, first non-blank
	optStringMap                  // mapping of string to string
	optModality                   // modality token
	optModalityMap                // mapping of branch name to modality token
	optEnum                       // one of enum
	optTextPrefix                 // mapping with keys query and/or gallery, string values (may be empty)
)

type optSpec struct {
	kind optKind
	enum []string
}

// typeSpec is the option set of one extractor type.
type typeSpec struct {
	opts     map[string]optSpec
	required []string
	// branches: nil = no branches; otherwise the fixed branch names
	// (the command type declares its own through the branches option).
	branches []string
}

var (
	posInt     = optSpec{kind: optPosInt}
	nonNegInt  = optSpec{kind: optNonNegInt}
	str        = optSpec{kind: optString}
	pathOpt    = optSpec{kind: optPath}
	duration   = optSpec{kind: optDuration}
	padding    = optSpec{kind: optEnum, enum: []string{"max_length", "longest"}}
	pooling    = optSpec{kind: optEnum, enum: []string{"cls", "mean"}}
	provider   = optSpec{kind: optEnum, enum: []string{"cpu", "cuda"}}
	library    = optSpec{kind: optLibrary}
	textPrefix = optSpec{kind: optTextPrefix}
	hostedOpts = map[string]optSpec{
		"base_url": {kind: optURL}, "model": str, "dimensions": posInt, "api_key_env": str,
		"batch_size": posInt, "max_concurrency": posInt, "max_retries": nonNegInt,
		"initial_backoff": duration, "max_backoff": duration, "request_timeout": duration,
		"headers": {kind: optStringMap}, "cache_identity": str, "text_prefix": textPrefix,
	}
	onnxCommon = map[string]optSpec{
		"model_dir": pathOpt, "batch_size": posInt, "intra_op_threads": nonNegInt,
		"execution_provider": provider, "onnxruntime_library": library, "cache_identity": str,
		"pooling": pooling, "normalize": {kind: optBool},
	}
)

func with(base map[string]optSpec, extra map[string]optSpec) map[string]optSpec {
	out := make(map[string]optSpec, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

var typeSpecs = map[string]typeSpec{
	TypePrecomputed: {opts: map[string]optSpec{
		"queries": pathOpt, "gallery": pathOpt, "queries_tensor": str, "gallery_tensor": str,
	}},
	TypeOpenAI: {opts: hostedOpts, required: []string{"base_url", "model"}},
	TypeOllama: {opts: hostedOpts, required: []string{"base_url", "model"}},
	TypeTEI:    {opts: hostedOpts, required: []string{"base_url"}},
	TypeCommand: {opts: map[string]optSpec{
		"command": {kind: optArgv}, "env": {kind: optStringMap}, "dir": pathOpt,
		"modality": {kind: optModality}, "branches": {kind: optModalityMap},
		"batch_size": posInt, "streaming_safe": {kind: optBool}, "timeout": duration,
		"cache_identity": str, "persistent": {kind: optBool}, "text_prefix": textPrefix,
	}, required: []string{"command"}},
	TypeONNXDualEncoder: {opts: with(onnxCommon, map[string]optSpec{
		"text_model": pathOpt, "vision_model": pathOpt, "text_output": str, "image_output": str,
		"max_length": posInt, "padding": padding, "text_prefix": textPrefix,
	}), required: []string{"model_dir"}, branches: []string{"image_branch", "text_branch"}},
	TypeONNXText: {opts: with(onnxCommon, map[string]optSpec{
		"max_length": posInt, "padding": padding, "output": str, "text_prefix": textPrefix,
	}), required: []string{"model_dir"}},
	TypeONNXImage: {opts: with(onnxCommon, map[string]optSpec{
		"output": str,
	}), required: []string{"model_dir"}},
}

// ExtractorTypes lists the run-file extractor types, sorted.
func ExtractorTypes() []string { return sortedKeys(typeSpecs) }

// entryKeys are read by runspec itself; everything else is an option.
var entryKeys = []string{"name", "type", "query_branch", "gallery_branch", "cache"}

func (s *Spec) parseExtractors(p *parser, top *object) error {
	f, ok := top.get("extractors")
	if !ok {
		return p.errorf(top.line, "extractors is required (a non-empty list)")
	}
	if f.val.Kind != yaml.SequenceNode {
		return top.typeErr(f, "a list")
	}
	if len(f.val.Content) == 0 {
		return p.errorf(f.line, "extractors must not be empty")
	}
	names := map[string]int{}
	for i, item := range f.val.Content {
		e, err := s.parseExtractor(p, i, item)
		if err != nil {
			return err
		}
		if first, dup := names[e.Name]; dup {
			return p.errorf(e.Line, "duplicate extractor name %q (first at line %d)", e.Name, first)
		}
		names[e.Name] = e.Line
		s.Extractors = append(s.Extractors, e)
	}
	return nil
}

func (s *Spec) parseExtractor(p *parser, i int, item *yaml.Node) (Extractor, error) {
	e := Extractor{Line: item.Line, Cache: true, path: p.path}
	n, err := p.deref(item)
	if err != nil {
		return e, err
	}
	o, err := p.object(n, fmt.Sprintf("extractors[%d]", i), item.Line)
	if err != nil {
		return e, err
	}
	ok, err := o.nonBlank("name", &e.Name)
	if err != nil {
		return e, err
	}
	if !ok {
		return e, p.errorf(o.line, "%s: name is required", o.name)
	}
	// Messages name the extractor from here on.
	o.name = fmt.Sprintf("extractor %s", e.Name)
	o.prefix = o.name
	o.entry = true
	if ok, err := o.nonBlank("type", &e.Type); err != nil {
		return e, err
	} else if !ok {
		return e, p.errorf(o.line, "%s: type is required (one of %s)", o.name, strings.Join(ExtractorTypes(), ", "))
	}
	ts, known := typeSpecs[e.Type]
	if !known {
		return e, p.errorf(o.lineOf("type"), "%s: unknown extractor type %q (one of %s)", o.name, e.Type, strings.Join(ExtractorTypes(), ", "))
	}
	o.name = fmt.Sprintf("extractor %s (type %s)", e.Name, e.Type)
	for _, f := range o.fields {
		if _, opt := ts.opts[f.key]; !opt && !slices.Contains(entryKeys, f.key) {
			return e, p.errorf(f.line, "unknown field %q in %s", f.key, o.name)
		}
	}
	o.prefix = fmt.Sprintf("extractor %s", e.Name)
	o.entry = true
	hasQ, err := o.nonBlank("query_branch", &e.QueryBranch)
	if err != nil {
		return e, err
	}
	hasG, err := o.nonBlank("gallery_branch", &e.GalleryBranch)
	if err != nil {
		return e, err
	}
	if hasQ != hasG {
		return e, p.errorf(o.line, "extractor %s: query_branch and gallery_branch must be provided together", e.Name)
	}
	if _, err := o.boolean("cache", &e.Cache); err != nil {
		return e, err
	}

	e.Options = map[string]any{}
	e.OptionLines = map[string]int{}
	for _, f := range o.fields {
		spec, opt := ts.opts[f.key]
		if !opt || isNull(f.val) {
			continue
		}
		v, err := p.option(o, f, spec)
		if err != nil {
			return e, err
		}
		e.Options[f.key] = v
		e.OptionLines[f.key] = f.line
	}
	for _, key := range ts.required {
		if _, ok := e.Options[key]; !ok {
			return e, p.errorf(o.line, "extractor %s: option %s is required for type %s", e.Name, key, e.Type)
		}
	}
	return e, s.checkExtractor(p, o, &e, ts)
}

// checkExtractor applies the per-type rules that involve several options or
// the dataset.
func (s *Spec) checkExtractor(p *parser, o *object, e *Extractor, ts typeSpec) error {
	branches := ts.branches
	switch e.Type {
	case TypePrecomputed:
		_, hasQ := e.Options["queries"]
		_, hasG := e.Options["gallery"]
		for _, t := range []struct{ tensor, file string }{{"queries_tensor", "queries"}, {"gallery_tensor", "gallery"}} {
			if _, ok := e.Options[t.tensor]; ok {
				if _, ok := e.Options[t.file]; !ok {
					return e.Errorf(t.tensor, "%s requires %s", t.tensor, t.file)
				}
			}
		}
		if hasQ != hasG {
			return p.errorf(o.line, "extractor %s: queries and gallery must be provided together", e.Name)
		}
		if !hasQ {
			// Passthrough reads the dataset's own embedding files.
			for _, ep := range []struct {
				side string
				ep   Endpoint
			}{{"queries", s.Dataset.Queries}, {"gallery", s.Dataset.Gallery}} {
				if ep.ep.Modality != ModalityEmbeddings || ep.ep.Path == "" {
					return p.errorf(o.line, "extractor %s: type precomputed needs queries and gallery files unless dataset.%s is an embedding file (modality embeddings with a path)", e.Name, ep.side)
				}
			}
		}
	case TypeCommand:
		bm := e.StringMap("branches")
		if bm != nil {
			branches = sortedKeys(bm)
		} else if _, ok := e.Options["modality"]; !ok {
			return p.errorf(o.line, "extractor %s: option modality is required for type command (or branches)", e.Name)
		}
		if _, ok := e.Options["text_prefix"]; ok {
			text := e.Str("modality") == "text"
			for _, m := range bm {
				text = text || m == "text"
			}
			if !text {
				return e.Errorf("text_prefix", "text_prefix applies to text inputs, but the command serves no text modality")
			}
		}
	}
	switch {
	case branches == nil && e.Branched():
		return p.errorf(o.lineOf("query_branch"), "Extractor %s does not support branches (type %s)", e.Name, e.Type)
	case branches != nil && !e.Branched():
		return p.errorf(o.line, "Extractor %s requires query_branch and gallery_branch (branches: %s)", e.Name, strings.Join(branches, ", "))
	}
	for _, key := range []string{"query_branch", "gallery_branch"} {
		b := e.QueryBranch
		if key == "gallery_branch" {
			b = e.GalleryBranch
		}
		if b != "" && !slices.Contains(branches, b) {
			return p.errorf(o.lineOf(key), "Extractor %s has no branch %q (branches: %s)", e.Name, b, strings.Join(branches, ", "))
		}
	}
	return nil
}

// option checks one option value and returns it in JSON-like form.
func (p *parser) option(o *object, f field, spec optSpec) (any, error) {
	where := o.prefix + ": option " + f.key
	v, err := p.value(f.val, where)
	if err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) error {
		return p.errorf(f.line, "%s%s", where, fmt.Sprintf(format, args...))
	}
	nonBlank := func() (string, error) {
		s, ok := v.(string)
		if !ok {
			return "", bad(" must be a string; got %s", describe(f.val))
		}
		if strings.TrimSpace(s) == "" {
			return "", bad(" must not be blank")
		}
		return s, nil
	}
	switch spec.kind {
	case optString:
		return nonBlank()
	case optPath:
		s, err := nonBlank()
		if err != nil {
			return nil, err
		}
		return p.resolve(s), nil
	case optLibrary:
		s, err := nonBlank()
		if err != nil {
			return nil, err
		}
		if strings.ContainsAny(s, `/\`) {
			return p.resolve(s), nil
		}
		return s, nil
	case optURL:
		s, err := nonBlank()
		if err != nil {
			return nil, err
		}
		u, perr := url.Parse(s)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, bad(" must be an http or https URL; got %q", s)
		}
		return s, nil
	case optPosInt, optNonNegInt:
		n, ok := asInt(v)
		if !ok {
			return nil, bad(" must be an integer; got %s", describe(f.val))
		}
		if spec.kind == optPosInt && n < 1 {
			return nil, bad(" must be >= 1; got %d", n)
		}
		if n < 0 {
			return nil, bad(" must be >= 0; got %d", n)
		}
		return int64(n), nil
	case optBool:
		if _, ok := v.(bool); !ok {
			return nil, bad(" must be a bool; got %s", describe(f.val))
		}
		return v, nil
	case optDuration:
		if _, err := ParseDuration(v); err != nil {
			return nil, bad(" %v", err)
		}
		return v, nil
	case optArgv:
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return nil, bad(" must be a non-empty list of strings (argv, no shell); got %s", describe(f.val))
		}
		for i, a := range list {
			if _, ok := a.(string); !ok {
				return nil, bad("[%d] must be a string", i)
			}
		}
		if strings.TrimSpace(list[0].(string)) == "" {
			return nil, bad("[0] (the program) must not be blank")
		}
		return list, nil
	case optStringMap, optModalityMap:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, bad(" must be a mapping; got %s", describe(f.val))
		}
		for _, k := range sortedKeys(m) {
			s, ok := m[k].(string)
			if !ok {
				return nil, bad("[%q] must be a string (quote it)", k)
			}
			if spec.kind == optModalityMap && !tokenRe.MatchString(s) {
				return nil, bad("[%q] must be a modality matching [a-z][a-z0-9_]*; got %q", k, s)
			}
		}
		if spec.kind == optModalityMap && len(m) == 0 {
			return nil, bad(" must name at least one branch")
		}
		return m, nil
	case optTextPrefix:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, bad(" must be a mapping {query: ..., gallery: ...}; got %s", describe(f.val))
		}
		if len(m) == 0 {
			return nil, bad(" must set query or gallery")
		}
		for _, k := range sortedKeys(m) {
			if k != "query" && k != "gallery" {
				return nil, bad(" has no key %q (keys: query, gallery)", k)
			}
			if _, ok := m[k].(string); !ok {
				return nil, bad(".%s must be a string (quote it); got %v", k, m[k])
			}
		}
		return m, nil
	case optModality:
		s, ok := v.(string)
		if !ok || !tokenRe.MatchString(s) {
			return nil, bad(" must be a modality matching [a-z][a-z0-9_]*; got %s", describe(f.val))
		}
		return s, nil
	case optEnum:
		s, ok := v.(string)
		if !ok || !slices.Contains(spec.enum, s) {
			return nil, bad(" must be one of %s; got %s", strings.Join(spec.enum, ", "), describe(f.val))
		}
		return s, nil
	}
	return nil, bad(" has an unsupported option kind")
}
