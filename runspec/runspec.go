package runspec

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Version is the only run-file version understood.
const Version = 1

// Engines (SPEC §11.4). Parsing accepts both; whether an engine is compiled
// into the binary is the caller's concern.
const (
	EngineLocal = "local"
	EngineBeam  = "beam"
)

// Endpoint modalities built into the CLI (SPEC §2.8).
const (
	ModalityEmbeddings = "embeddings"
	ModalityText       = "text"
	ModalityImage      = "image"
)

// Qrels formats (SPEC §6.4.3).
var qrelsFormats = []string{"trec", "tsv", "csv", "jsonl", "npy", "npz"}

// Spec is a parsed, validated run file. Every path in it is already resolved
// against Dir (absolute paths are kept as written).
type Spec struct {
	Path        string // the run file as given to Load or Parse
	Dir         string // its directory
	Version     int
	Dataset     Dataset
	Retrieval   retrieval.Config
	Embedding   Embedding
	Memory      memory.Config
	Compression []compress.Config // default [{method: none}]
	Extractors  []Extractor       // non-empty, unique names, in file order
	Outputs     Outputs
	Engine      string // EngineLocal (default) or EngineBeam
	// Store is the artifact store used as the endpoint cache (SPEC §9.5):
	// a URI, or a local path resolved against Dir; "" runs without one.
	Store string
}

// Dataset is the `dataset` section. Exactly one of Qrels and Labels is set.
type Dataset struct {
	// ID and Revision are both set (declared identity, SPEC §2.9) or both
	// empty (content identity).
	ID         string
	Revision   string
	Queries    Endpoint
	Gallery    Endpoint // with labels.leave_one_out: a copy of Queries
	Qrels      *Qrels
	Labels     *Labels
	Exclusions string         // "" when absent
	Metadata   map[string]any // JSON-like; nil when absent
}

// Declared reports whether the dataset declares its identity.
func (d Dataset) Declared() bool { return d.ID != "" }

// Endpoint is `dataset.queries` or `dataset.gallery`.
type Endpoint struct {
	Modality string // default "embeddings"
	// Path is the embedding file (§6.4.1) for modality embeddings, else the
	// raw item file (§6.4.6). An embeddings endpoint may omit it and give only
	// IDs (the rows then come from a precomputed extractor).
	Path     string
	Tensor   string // tensor, array or column of the embedding file
	IDs      string // ID file (§6.4.2); "" = row numbers or IDColumn
	IDColumn string // Parquet/Arrow column holding the IDs
}

// Qrels is `dataset.qrels`.
type Qrels struct {
	Path   string
	Format string // one of trec, tsv, csv, jsonl, npy, npz; "" = from the extension
}

// Labels is `dataset.labels` (label-derived relevance, SPEC §2.7).
type Labels struct {
	Queries     string
	Gallery     string // with LeaveOneOut: equal to Queries
	LeaveOneOut bool
}

// Embedding is the `embedding` section (SPEC §9.3). It has the fields of
// extract.EmbeddingConfig, so a plain conversion turns one into the other.
type Embedding struct {
	BatchSize        int  `json:"batch_size"`
	StreamingEnabled bool `json:"streaming_enabled"`
}

// Outputs is the `outputs` section; "" means not written. JSON and Markdown
// may be "-" (stdout).
type Outputs struct {
	JSON       string
	Markdown   string
	CSV        string
	Run        string
	RunDepth   *int // nil: the CLI default (1000); 0 = full ranking
	WriteQrels string
}

// Load reads and parses the run file at path.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{Path: path, Msg: "cannot read run file: " + unwrapPathError(err), Err: err}
	}
	return Parse(path, data)
}

func unwrapPathError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse parses run-file content; path names the file in errors and anchors
// relative paths.
func Parse(path string, data []byte) (*Spec, error) {
	p := newParser(path)
	root, err := p.document(data)
	if err != nil {
		return nil, err
	}
	top, err := p.object(root, "run file", root.Line)
	if err != nil {
		return nil, err
	}
	if err := top.allow("version", "dataset", "retrieval", "embedding", "memory",
		"compression", "extractors", "outputs", "engine", "store"); err != nil {
		return nil, err
	}
	s := &Spec{Path: path, Dir: p.dir}
	// Sections in a fixed order: extractors need the dataset.
	steps := []func(*parser, *object) error{
		s.parseVersion, s.parseDataset, s.parseRetrieval, s.parseEmbedding, s.parseMemory,
		s.parseCompression, s.parseExtractors, s.parseOutputs, s.parseEngine, s.parseStore,
	}
	for _, step := range steps {
		if err := step(p, top); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Spec) parseVersion(p *parser, top *object) error {
	ok, err := top.integer("version", &s.Version)
	if err != nil {
		return err
	}
	if !ok {
		return p.errorf(top.line, "version is required (version: %d)", Version)
	}
	if s.Version != Version {
		return p.errorf(top.lineOf("version"), "unsupported run file version %d (this build reads version %d)", s.Version, Version)
	}
	return nil
}

// section returns the mapping under key, or nil when it is absent or null.
func section(top *object, key, prefix string) (*object, error) {
	f, ok := top.get(key)
	if !ok {
		return nil, nil
	}
	o, err := top.p.object(f.val, key, f.line)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		o.prefix = prefix
	}
	return o, nil
}

var tokenRe = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func (s *Spec) parseDataset(p *parser, top *object) error {
	o, err := section(top, "dataset", "")
	if err != nil {
		return err
	}
	if o == nil {
		return p.errorf(top.line, "dataset is required")
	}
	if err := o.allow("id", "revision", "queries", "gallery", "qrels", "labels", "exclusions", "metadata"); err != nil {
		return err
	}
	d := &s.Dataset
	hasID, err := o.nonBlank("id", &d.ID)
	if err != nil {
		return err
	}
	hasRev, err := o.nonBlank("revision", &d.Revision)
	if err != nil {
		return err
	}
	if hasID != hasRev {
		return p.errorf(o.line, "dataset.id and dataset.revision must be provided together")
	}

	var qrels, labels field
	hasQrels, hasLabels := false, false
	if qrels, hasQrels = o.get("qrels"); hasQrels {
		if d.Qrels, err = p.qrels(qrels); err != nil {
			return err
		}
	}
	if labels, hasLabels = o.get("labels"); hasLabels {
		if d.Labels, err = p.labels(labels); err != nil {
			return err
		}
	}
	switch {
	case hasQrels && hasLabels:
		return p.errorf(max(qrels.line, labels.line), "exactly one relevance source is required: dataset has both qrels and labels")
	case !hasQrels && !hasLabels:
		return p.errorf(o.line, "exactly one relevance source is required: dataset needs qrels or labels")
	}
	loo := d.Labels != nil && d.Labels.LeaveOneOut

	qf, ok := o.get("queries")
	if !ok {
		return p.errorf(o.line, "dataset.queries is required")
	}
	if d.Queries, err = p.endpoint(qf, "dataset.queries"); err != nil {
		return err
	}
	if gf, ok := o.get("gallery"); ok {
		if d.Gallery, err = p.endpoint(gf, "dataset.gallery"); err != nil {
			return err
		}
		if loo && d.Gallery != d.Queries {
			return p.errorf(gf.line, "leave_one_out requires the query and gallery inputs to be the same file (omit dataset.gallery)")
		}
	} else {
		if !loo {
			return p.errorf(o.line, "dataset.gallery is required (unless labels.leave_one_out is true)")
		}
		d.Gallery = d.Queries
	}

	if _, err := o.path("exclusions", &d.Exclusions); err != nil {
		return err
	}
	if f, ok := o.get("metadata"); ok {
		if f.val.Kind != yaml.MappingNode {
			return o.typeErr(f, "a mapping")
		}
		v, err := p.value(f.val, "dataset.metadata")
		if err != nil {
			return err
		}
		d.Metadata, _ = v.(map[string]any)
	}
	return nil
}

func (p *parser) endpoint(f field, name string) (Endpoint, error) {
	e := Endpoint{Modality: ModalityEmbeddings}
	o, err := p.object(f.val, name, f.line)
	if err != nil {
		return e, err
	}
	if err := o.allow("modality", "path", "tensor", "ids", "id_column"); err != nil {
		return e, err
	}
	if _, err := o.str("modality", &e.Modality); err != nil {
		return e, err
	}
	if !tokenRe.MatchString(e.Modality) {
		return e, p.errorf(o.lineOf("modality"), "%s.modality must match [a-z][a-z0-9_]*; got %q", name, e.Modality)
	}
	hasPath, err := o.path("path", &e.Path)
	if err != nil {
		return e, err
	}
	hasTensor, err := o.nonBlank("tensor", &e.Tensor)
	if err != nil {
		return e, err
	}
	hasIDs, err := o.path("ids", &e.IDs)
	if err != nil {
		return e, err
	}
	hasCol, err := o.nonBlank("id_column", &e.IDColumn)
	if err != nil {
		return e, err
	}
	switch {
	case hasIDs && hasCol:
		return e, p.errorf(o.lineOf("id_column"), "%s: ids and id_column are mutually exclusive", name)
	case (hasTensor || hasCol) && e.Modality != ModalityEmbeddings:
		key := "tensor"
		if !hasTensor {
			key = "id_column"
		}
		return e, p.errorf(o.lineOf(key), "%s.%s is only valid for modality %s", name, key, ModalityEmbeddings)
	case (hasTensor || hasCol) && !hasPath:
		key := "tensor"
		if !hasTensor {
			key = "id_column"
		}
		return e, p.errorf(o.lineOf(key), "%s.%s requires %s.path", name, key, name)
	case !hasPath && e.Modality != ModalityEmbeddings:
		return e, p.errorf(o.line, "%s.path is required for modality %s", name, e.Modality)
	case !hasPath && !hasIDs:
		return e, p.errorf(o.line, "%s needs path (an embedding file) or ids", name)
	}
	return e, nil
}

// qrels accepts a mapping or, as a shorthand, the path alone.
func (p *parser) qrels(f field) (*Qrels, error) {
	q := &Qrels{}
	if f.val.Kind == yaml.ScalarNode && isStringTag(f.val.ShortTag()) {
		wrapper := &object{p: p, name: "dataset", prefix: "dataset", line: f.line,
			fields: []field{f}, index: map[string]int{f.key: 0}}
		_, err := wrapper.path("qrels", &q.Path)
		return q, err
	}
	o, err := p.object(f.val, "dataset.qrels", f.line)
	if err != nil {
		return nil, err
	}
	if err := o.allow("path", "format"); err != nil {
		return nil, err
	}
	ok, err := o.path("path", &q.Path)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, p.errorf(o.line, "dataset.qrels.path is required")
	}
	if ok, err := o.str("format", &q.Format); err != nil {
		return nil, err
	} else if ok && !slices.Contains(qrelsFormats, q.Format) {
		return nil, p.errorf(o.lineOf("format"), "dataset.qrels.format must be one of %s; got %q", strings.Join(qrelsFormats, ", "), q.Format)
	}
	return q, nil
}

func (p *parser) labels(f field) (*Labels, error) {
	l := &Labels{}
	o, err := p.object(f.val, "dataset.labels", f.line)
	if err != nil {
		return nil, err
	}
	if err := o.allow("queries", "gallery", "leave_one_out"); err != nil {
		return nil, err
	}
	hasQ, err := o.path("queries", &l.Queries)
	if err != nil {
		return nil, err
	}
	if !hasQ {
		return nil, p.errorf(o.line, "dataset.labels.queries is required")
	}
	hasG, err := o.path("gallery", &l.Gallery)
	if err != nil {
		return nil, err
	}
	if _, err := o.boolean("leave_one_out", &l.LeaveOneOut); err != nil {
		return nil, err
	}
	switch {
	case l.LeaveOneOut && hasG && l.Gallery != l.Queries:
		return nil, p.errorf(o.lineOf("gallery"), "leave_one_out requires the query and gallery inputs to be the same file (omit dataset.labels.gallery)")
	case l.LeaveOneOut:
		l.Gallery = l.Queries
	case !hasG:
		return nil, p.errorf(o.line, "dataset.labels.gallery is required (unless leave_one_out is true)")
	}
	return l, nil
}

// configMap converts a config section into the map its constructor reads.
// Unknown keys are reported here, with their line, naming both SPEC
// fragments: "unknown field" (§6.5) and "<Config> has no field" (§3.2).
func (p *parser) configMap(o *object, typeName string, known map[string]any) (map[string]any, error) {
	m := make(map[string]any, len(o.fields))
	for _, f := range o.fields {
		if _, ok := known[f.key]; !ok {
			return nil, p.errorf(f.line, "unknown field %q in %s (%s has no field %q)", f.key, o.name, typeName, f.key)
		}
		v, err := p.value(f.val, o.name+"."+f.key)
		if err != nil {
			return nil, err
		}
		m[f.key] = v
	}
	return m, nil
}

func (s *Spec) parseRetrieval(p *parser, top *object) error {
	s.Retrieval = retrieval.DefaultConfig()
	o, err := section(top, "retrieval", "")
	if err != nil || o == nil {
		return err
	}
	known := retrieval.DefaultConfig().AsMap()
	// Recorded only when set, so the default's map leaves it out.
	known["queries_without_positives"] = "error"
	m, err := p.configMap(o, "RetrievalConfig", known)
	if err != nil {
		return err
	}
	if s.Retrieval, err = retrieval.ConfigFromMap(m); err != nil {
		// A bad primary metric names the run-file key and lists the valid
		// choices under this file's ks (still a ConfigError: exit 2).
		var ce *retrieval.ConfigError
		if errors.As(err, &ce) && ce.Field == "primary_metric" {
			if pm, ok := m["primary_metric"].(string); ok {
				err = &retrieval.ConfigError{Field: ce.Field, Msg: "retrieval.primary_metric " + retrieval.PrimaryMetricProblem(pm, s.Retrieval.Ks, "retrieval.ks")}
				return p.wrap(o.lineOf("primary_metric"), err)
			}
		}
		return p.wrap(o.line, err)
	}
	return nil
}

func (s *Spec) parseMemory(p *parser, top *object) error {
	s.Memory = memory.Default()
	o, err := section(top, "memory", "")
	if err != nil || o == nil {
		return err
	}
	m, err := p.configMap(o, "MemoryConfig", memory.Default().AsMap())
	if err != nil {
		return err
	}
	if s.Memory, err = memory.ConfigFromMap(m); err != nil {
		return p.wrap(o.line, err)
	}
	return nil
}

func (s *Spec) parseEmbedding(p *parser, top *object) error {
	s.Embedding = Embedding{BatchSize: 128, StreamingEnabled: true}
	o, err := section(top, "embedding", "EmbeddingConfig")
	if err != nil || o == nil {
		return err
	}
	if err := o.allow("batch_size", "streaming_enabled"); err != nil {
		return err
	}
	if _, err := o.integer("batch_size", &s.Embedding.BatchSize); err != nil {
		return err
	}
	if s.Embedding.BatchSize < 1 {
		return p.errorf(o.lineOf("batch_size"), "EmbeddingConfig.batch_size must be >= 1; got %d", s.Embedding.BatchSize)
	}
	_, err = o.boolean("streaming_enabled", &s.Embedding.StreamingEnabled)
	return err
}

func (s *Spec) parseCompression(p *parser, top *object) error {
	f, ok := top.get("compression")
	if !ok {
		s.Compression = []compress.Config{compress.Default()}
		return nil
	}
	if f.val.Kind != yaml.SequenceNode {
		return top.typeErr(f, "a list")
	}
	if len(f.val.Content) == 0 {
		return p.errorf(f.line, "compression must not be empty (omit it for [{method: none}])")
	}
	known := compress.Default().AsMap()
	for i, item := range f.val.Content {
		line := item.Line
		n, err := p.deref(item)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("compression[%d]", i)
		o, err := p.object(n, name, line)
		if err != nil {
			return err
		}
		m, err := p.configMap(o, "CompressionConfig", known)
		if err != nil {
			return err
		}
		c, err := compress.ConfigFromMap(m)
		if err != nil {
			return p.wrap(line, err)
		}
		for j, prev := range s.Compression {
			if reflect.DeepEqual(prev.AsMap(), c.AsMap()) {
				return p.errorf(line, "%s repeats compression[%d]", name, j)
			}
		}
		s.Compression = append(s.Compression, c)
	}
	return nil
}

func (s *Spec) parseOutputs(p *parser, top *object) error {
	o, err := section(top, "outputs", "")
	if err != nil || o == nil {
		return err
	}
	if err := o.allow("json", "markdown", "csv", "run", "run_depth", "write_qrels"); err != nil {
		return err
	}
	out := &s.Outputs
	targets := []struct {
		key    string
		dst    *string
		stdout bool
	}{
		{"json", &out.JSON, true}, {"markdown", &out.Markdown, true}, {"csv", &out.CSV, false},
		{"run", &out.Run, false}, {"write_qrels", &out.WriteQrels, false},
	}
	seen := map[string]string{}
	for _, t := range targets {
		ok, err := o.nonBlank(t.key, t.dst)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		switch {
		case *t.dst == "-" && !t.stdout:
			return p.errorf(o.lineOf(t.key), "outputs.%s cannot be \"-\" (only json and markdown can go to stdout)", t.key)
		case *t.dst != "-":
			*t.dst = p.resolve(*t.dst)
		}
		if prev, dup := seen[*t.dst]; dup {
			return p.errorf(o.lineOf(t.key), "outputs.%s and outputs.%s name the same file %q", prev, t.key, *t.dst)
		}
		seen[*t.dst] = t.key
	}
	var depth int
	if ok, err := o.integer("run_depth", &depth); err != nil {
		return err
	} else if ok {
		if depth < 0 {
			return p.errorf(o.lineOf("run_depth"), "outputs.run_depth must be >= 0; got %d", depth)
		}
		if out.Run == "" {
			return p.errorf(o.lineOf("run_depth"), "outputs.run_depth requires outputs.run")
		}
		out.RunDepth = &depth
	}
	return nil
}

func (s *Spec) parseEngine(p *parser, top *object) error {
	s.Engine = EngineLocal
	if _, err := top.str("engine", &s.Engine); err != nil {
		return err
	}
	if s.Engine != EngineLocal && s.Engine != EngineBeam {
		return p.errorf(top.lineOf("engine"), "engine must be %s or %s; got %q", EngineLocal, EngineBeam, s.Engine)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// parseStore reads the optional `store` key: the artifact store a run uses
// as its endpoint cache. URIs (scheme://…) are kept as written; a plain
// path resolves against the run file's directory like every other path.
func (s *Spec) parseStore(p *parser, top *object) error {
	ok, err := top.nonBlank("store", &s.Store)
	if err != nil || !ok {
		return err
	}
	if !strings.Contains(s.Store, "://") {
		s.Store = p.resolve(s.Store)
	}
	return nil
}
