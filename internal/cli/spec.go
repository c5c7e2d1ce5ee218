package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/encode"
	"github.com/vertebrae-eval/vertebrae/endpointcache"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/extract/command"
	"github.com/vertebrae-eval/vertebrae/extract/hosted"
	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/formats/idlist"
	"github.com/vertebrae-eval/vertebrae/internal/digestcache"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/runspec"
	"github.com/vertebrae-eval/vertebrae/store/location"
)

// specOverrides are the flags allowed next to --spec (SPEC §6.3).
var specOverrides = map[string]bool{"spec": true, "json": true, "markdown": true, "csv": true, "run": true,
	"run-depth": true, "write-qrels": true, "threads": true, "quiet": true, "onnxruntime-lib": true,
	"html": true, "plots": true, "plot-format": true, "store": true}

// wrapExtractor, when set, wraps every extractor a run file builds; tests
// use it to count encoder calls (a cache hit must encode nothing).
var wrapExtractor func(extract.Extractor) extract.Extractor

// runSpec evaluates a declarative run file (SPEC §6.5).
func runSpec(ctx context.Context, cmd *cobra.Command, fl *runFlags, stdout, stderr io.Writer) error {
	var bad []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !specOverrides[f.Name] {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return usagef("with --spec only --json, --markdown, --csv, --run, --run-depth, --write-qrels, --html, --plots, --plot-format, --threads, --onnxruntime-lib, --store and --quiet are allowed; got %s", strings.Join(bad, ", "))
	}
	spec, err := runspec.Load(fl.spec)
	if err != nil {
		return err
	}
	if spec.Engine != "" && spec.Engine != "local" {
		return fmt.Errorf("%s: engine %q is not available in this build; use engine: local, or run the file with `vertebrae-beam run --spec` (module beam/, README \"Apache Beam\")", fl.spec, spec.Engine)
	}
	out := fl.out
	changed := cmd.Flags().Changed
	for _, o := range []struct {
		flag string
		dst  *string
		val  string
	}{{"json", &out.json, spec.Outputs.JSON}, {"markdown", &out.markdown, spec.Outputs.Markdown}, {"csv", &out.csv, spec.Outputs.CSV},
		{"run", &out.run, spec.Outputs.Run}, {"write-qrels", &out.writeQrels, spec.Outputs.WriteQrels}} {
		if !changed(o.flag) {
			*o.dst = o.val
		}
	}
	if !changed("run-depth") && spec.Outputs.RunDepth != nil {
		out.runDepth = *spec.Outputs.RunDepth
	}
	if err := out.check(cmd); err != nil {
		return err
	}
	limit, err := memory.Resolve(spec.Memory)
	if err != nil {
		return err
	}
	ctx, restore := withMemoryGuard(ctx, limit)
	defer restore()
	out.inputs = specInputs(spec)
	if err := out.checkTargets(len(spec.Extractors) * max(1, len(spec.Compression))); err != nil {
		return err
	}
	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}()
	ds, tables, err := specDataset(ctx, spec, &closers)
	if err != nil {
		return err
	}
	entries := make([]extract.Entry, len(spec.Extractors))
	for i := range spec.Extractors {
		e := &spec.Extractors[i]
		x, err := specExtractor(ctx, spec, e, tables, fl.onnxLib, &closers)
		if err != nil {
			return err
		}
		if wrapExtractor != nil {
			x = wrapExtractor(x)
		}
		entries[i] = extract.Entry{Extractor: x, QueryBranch: e.QueryBranch, GalleryBranch: e.GalleryBranch, NoCache: !e.Cache}
	}
	bench := &extract.Benchmark{
		Dataset: ds, Config: spec.Retrieval, Extractors: entries, Compression: spec.Compression,
		Embedding: extract.EmbeddingConfig(spec.Embedding), Memory: spec.Memory,
		Threads: fl.threads, RunDepth: out.runDepthOption(),
	}
	// The endpoint cache is opt-in for run (store: or --store); only the
	// artifact commands default to .vertebrae_cache (SPEC §6.8).
	storeURI := spec.Store
	if changed("store") {
		storeURI = fl.store
	}
	if storeURI != "" {
		st, err := location.Open(ctx, storeURI)
		if err != nil {
			return err
		}
		closers = append(closers, st.Close)
		bench.Cache = endpointcache.New(artifact.New(st))
	}
	if !out.quiet {
		ctx = encode.WithProgress(ctx, newProgress(stderr).report)
		ctx = withScoring(ctx, stderr)
	}
	b, err := bench.Run(ctx)
	if err != nil {
		return err
	}
	return out.emit(ctx, b, ds, stdout, stderr)
}

// endpointTables are the embedding files a dataset names, for precomputed
// extractors that do not name their own.
type endpointTables struct {
	query, gallery matrix.Matrix
	files          *tableFiles // the files they (and extractors' own tables) were read from
}

// tableFiles remembers the digest-cache snapshots (internal/digestcache) of
// the embedding files a run file's tables were read from, so that facts
// established about a file's content — its SPEC §2.9 digest, that every
// value is finite — are reused while the file is unchanged, under the
// cache's staleness rules: every extraction shard of a large gallery
// would otherwise hash and scan the whole file again.
type tableFiles struct {
	cache  *digestcache.Cache
	finite *digestcache.Cache // cache.Sub(finiteCache): files whose values are all finite
	files  []tableFile
}

// newTableFiles remembers the files of a run file's tables in c (nil:
// disabled).
func newTableFiles(c *digestcache.Cache) *tableFiles {
	return &tableFiles{cache: c, finite: c.Sub(finiteCache)}
}

type tableFile struct {
	m         matrix.Matrix // *matrix.Dense or *matrix.CSR
	snap      digestcache.Snapshot
	finiteHit bool // the cache knew m finite
}

// finiteCache names the digest cache's part that records files whose
// values a full scan found finite.
const finiteCache = "finite"

// add records that m was read from snap's file; a mapped dense table the
// cache knows to be finite is marked so (Dense.MarkFinite), which skips
// the dataset's scan of it.
func (t *tableFiles) add(m matrix.Matrix, snap digestcache.Snapshot) {
	if t == nil || t.cache == nil {
		return
	}
	switch m.(type) {
	case *matrix.Dense, *matrix.CSR:
	default:
		return // an interface of another type may not be comparable
	}
	f := tableFile{m: m, snap: snap}
	if d, ok := m.(*matrix.Dense); ok && d.IsReadOnly() && !d.KnownFinite() {
		if e, ok := t.finite.Lookup(snap); ok && sameFinite(e, finiteEntry(d)) {
			d.MarkFinite()
			f.finiteHit = true
		}
	}
	t.files = append(t.files, f)
}

// finiteEntry is the cache entry recording that d's values are finite;
// its dtype and shape are checked against the matrix it is used for.
func finiteEntry(d *matrix.Dense) map[string]string {
	return map[string]string{"finite": "true", "dtype": d.DType().String(), "shape": strconv.Itoa(d.Rows()) + "x" + strconv.Itoa(d.Cols())}
}

func sameFinite(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// storeFinite records, for every mapped dense table whose values a full
// scan (the dataset's check) found finite, that its file is finite.
func (t *tableFiles) storeFinite() {
	if t == nil || t.cache == nil {
		return
	}
	for i := range t.files {
		f := &t.files[i]
		if d, ok := f.m.(*matrix.Dense); ok && !f.finiteHit && d.IsReadOnly() && d.KnownFinite() {
			t.finite.Store(f.snap, finiteEntry(d))
		}
	}
}

// digest is the SPEC §2.9 digest of a table (extract.Precomputed.Digest):
// the digest cache's entry for its unchanged file, the same entry the
// dataset's endpoint digest uses (cachedEmbeddings), else hashed (stopping
// with ctx) and stored.
func (t *tableFiles) digest(ctx context.Context, m matrix.Matrix) (map[string]any, error) {
	var snap digestcache.Snapshot
	found := false
	if t != nil {
		for _, f := range t.files {
			if f.m == m {
				snap, found = f.snap, true
				break
			}
		}
	}
	if found {
		if known, ok := t.cache.Lookup(snap); ok {
			if d, ok := digestFromCache(known, m); ok {
				return d, nil
			}
		}
	}
	d, err := retrieval.EmbeddingDigestContext(ctx, m)
	if err == nil && found {
		t.cache.Store(snap, digestToCache(d))
	}
	return d, err
}

func specDataset(ctx context.Context, spec *runspec.Spec, closers *[]func() error) (*retrieval.Dataset, endpointTables, error) {
	d := spec.Dataset
	digests := digestcache.FromEnv()
	tables := endpointTables{files: newTableFiles(digests)}
	load := func(ep runspec.Endpoint, side string, table *matrix.Matrix) (retrieval.Items, []string, error) {
		var ids []string
		var err error
		if ep.IDs != "" {
			if ids, err = idlist.ReadIDsContext(ctx, ep.IDs); err != nil {
				return nil, nil, err
			}
			if err := checkIDFile(side, ep.IDs, ids); err != nil {
				return nil, nil, err
			}
		}
		switch ep.Modality {
		case "", retrieval.ModalityEmbeddings:
			if ep.Path == "" {
				if ids == nil {
					return nil, nil, fmt.Errorf("%s: dataset.%s needs a path or an ids file", spec.Path, side)
				}
				return retrieval.IDsOnly(len(ids)), ids, nil
			}
			snap := digestSnap(digests, ep.Path, ep.Tensor)
			m, colIDs, err := readEndpoint(ctx, ep.Path, ep.Tensor, ep.IDColumn, closers)
			if err != nil {
				return nil, nil, err
			}
			if colIDs != nil {
				ids = colIDs
				if err := checkIDFile(side, ep.Path+" column "+ep.IDColumn, ids); err != nil {
					return nil, nil, err
				}
			}
			if err := checkWidth(ep.Path, side, m); err != nil {
				return nil, nil, err
			}
			*table = m
			tables.files.add(m, snap)
			return cachedEmbeddings(digests, snap, m), ids, nil
		case "text":
			texts, fileIDs, err := readTexts(ep.Path)
			if err != nil {
				return nil, nil, err
			}
			if ids == nil {
				ids = fileIDs
			}
			return retrieval.Texts(texts), ids, nil
		case "image":
			paths, err := readImageList(ep.Path)
			if err != nil {
				return nil, nil, err
			}
			return retrieval.Images(paths), ids, nil
		}
		return nil, nil, fmt.Errorf("%s: dataset.%s: modality %q has no built-in reader (use text, image or embeddings)", spec.Path, side, ep.Modality)
	}
	q, qids, err := load(d.Queries, "queries", &tables.query)
	if err != nil {
		return nil, tables, err
	}
	if err := alignedItems("query", d.Queries, q, qids); err != nil {
		return nil, tables, err
	}
	identity := retrieval.FromContent()
	if d.Declared() {
		identity = retrieval.Declared(d.ID, d.Revision)
	}
	var excl []retrieval.Pair
	if d.Exclusions != "" {
		if excl, err = readExclusions(ctx, d.Exclusions); err != nil {
			return nil, tables, err
		}
	}
	opts := []retrieval.Option{retrieval.WithIdentity(identity), retrieval.WithExclusions(excl), retrieval.WithMetadata(d.Metadata), retrieval.WithContext(ctx)}
	if spec.Retrieval.DropsQueriesWithoutPositives() {
		opts = append(opts, retrieval.WithDropQueriesWithoutPositives())
	}
	if d.Labels != nil && d.Labels.LeaveOneOut {
		labels, err := readLabels(ctx, d.Labels.Queries)
		if err != nil {
			return nil, tables, err
		}
		tables.gallery = tables.query
		ds, err := retrieval.NewLeaveOneOutDataset(q, qids, labels, opts...)
		if err == nil {
			tables.files.storeFinite()
		}
		return ds, tables, relevanceSources{queryLabels: d.Labels.Queries}.nameSource(err)
	}
	g, gids, err := load(d.Gallery, "gallery", &tables.gallery)
	if err != nil {
		return nil, tables, err
	}
	if err := alignedItems("gallery", d.Gallery, g, gids); err != nil {
		return nil, tables, err
	}
	var rel retrieval.Relevance
	if d.Qrels != nil {
		rel, err = readRelevance(ctx, d.Qrels.Path, d.Qrels.Format)
	} else {
		var ql, gl []string
		if ql, err = readLabels(ctx, d.Labels.Queries); err == nil {
			if gl, err = readLabels(ctx, d.Labels.Gallery); err == nil {
				// Label-derived relevance stays implicit (classes, a few
				// bytes per row): nothing per pair is held or charged.
				rel = retrieval.LabelRelevance(ql, gl)
			}
		}
	}
	if err != nil {
		return nil, tables, err
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: q, Gallery: g, QueryIDs: qids, GalleryIDs: gids}, rel, opts...)
	if err == nil {
		// The dataset scanned every embedding value (SPEC §2.10 step 2):
		// later loads of the unchanged files skip the scan.
		tables.files.storeFinite()
	}
	var src relevanceSources
	if d.Qrels != nil {
		err = unknownIDHint(err, d.Qrels.Path, d.Qrels.Format, qids, gids)
		src.qrels = d.Qrels.Path
	} else {
		src.queryLabels, src.galleryLabels = d.Labels.Queries, d.Labels.Gallery
	}
	return ds, tables, src.nameSource(err)
}

// alignedItems names both files when an endpoint's ID file and its inputs
// disagree on the row count (SPEC §2.2).
func alignedItems(side string, ep runspec.Endpoint, items retrieval.Items, ids []string) error {
	if ep.IDs == "" || ids == nil || len(ids) == items.Len() || len(ids) == 0 {
		return nil
	}
	return formats.Errorf(ep.IDs, "%s IDs must align with their input collections: %d IDs for the %d rows of %s", side, len(ids), items.Len(), ep.Path)
}

// readTexts reads raw texts (SPEC §6.4.6): .txt one per line, or .jsonl
// with a JSON string or an object with a "text" field per line (an "_id" or
// "id" field gives the row's ID, as in BEIR's corpus.jsonl).
func readTexts(path string) ([]string, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, &formats.Error{Path: path, Msg: "cannot open file", Err: err}
	}
	defer f.Close()
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".jsonl" && ext != ".ndjson" {
		texts, err := idlist.ParseLabels(path, ".txt", f)
		return texts, nil, err
	}
	var texts, ids []string
	idLine := map[string]int{} // first line of each _id/id, for duplicates
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, nil, formats.LineErrorf(path, line, "malformed JSON line: %v", err)
		}
		switch t := v.(type) {
		case string:
			texts = append(texts, t)
		case map[string]any:
			text, ok := t["text"].(string)
			if !ok {
				return nil, nil, formats.LineErrorf(path, line, `object has no string "text" field`)
			}
			if title, _ := t["title"].(string); title != "" {
				text = title + " " + text
			}
			texts = append(texts, text)
			id, _ := t["_id"].(string)
			if id == "" {
				id, _ = t["id"].(string)
			}
			if prev, dup := idLine[id]; dup && id != "" {
				return nil, nil, formats.LineErrorf(path, line, "duplicate _id %s (first at line %d); IDs must be unique", msgfmt.Quote(id), prev)
			}
			idLine[id] = line
			ids = append(ids, id)
		default:
			return nil, nil, formats.LineErrorf(path, line, "each line must be a JSON string or an object with a text field")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, &formats.Error{Path: path, Msg: "read failed", Err: err}
	}
	if len(ids) != len(texts) || strings.Contains(strings.Join(ids, "\x00")+"\x00", "\x00\x00") {
		ids = nil // IDs only when every row carries one
	}
	return texts, ids, nil
}

// readImageList reads a .txt list of image paths; relative paths resolve
// against the list file's directory.
func readImageList(path string) ([]string, error) {
	paths, err := idlist.ReadIDs(path)
	if err != nil {
		return nil, err
	}
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			paths[i] = filepath.Join(filepath.Dir(path), p)
		}
	}
	return paths, nil
}

// specExtractor builds one run-file extractor (SPEC §9.4).
// specExtractor builds a run file's extractor (specBackbone) with its
// text_prefix, which is part of its recipe.
func specExtractor(ctx context.Context, spec *runspec.Spec, e *runspec.Extractor, tables endpointTables, onnxLib string, closers *[]func() error) (extract.Extractor, error) {
	x, err := specBackbone(ctx, spec, e, tables, onnxLib, closers)
	if err != nil {
		return nil, err
	}
	q, g := e.TextPrefix()
	return extract.WithTextPrefix(x, q, g), nil
}

func specBackbone(ctx context.Context, spec *runspec.Spec, e *runspec.Extractor, tables endpointTables, onnxLib string, closers *[]func() error) (extract.Extractor, error) {
	switch e.Type {
	case runspec.TypePrecomputed:
		// The tables' digests come from the digest cache while their files
		// are unchanged (tableFiles.digest): the dataset's own files share
		// the entries of its endpoint digests.
		files := tables.files
		if files == nil {
			files = newTableFiles(digestcache.FromEnv())
		}
		p := &extract.Precomputed{ExtractorName: e.Name, Query: tables.query, Gallery: tables.gallery, Digest: files.digest}
		if path := e.Str("queries"); path != "" {
			tensor := e.Str("queries_tensor")
			snap := digestSnap(files.cache, path, tensor)
			m, _, err := readEndpoint(ctx, path, tensor, "", closers)
			if err != nil {
				return nil, err
			}
			files.add(m, snap)
			p.Query = m
		}
		if path := e.Str("gallery"); path != "" {
			tensor := e.Str("gallery_tensor")
			snap := digestSnap(files.cache, path, tensor)
			m, _, err := readEndpoint(ctx, path, tensor, "", closers)
			if err != nil {
				return nil, err
			}
			files.add(m, snap)
			p.Gallery = m
		}
		if p.Query == nil || p.Gallery == nil {
			return nil, e.Errorf("queries", "a precomputed extractor needs queries and gallery tables (options queries/gallery or dataset paths)")
		}
		// Its recipe carries the tables' digests: hashed here, where an
		// interrupt can stop it, rather than on the first Recipe call.
		if err := p.HashTables(ctx); err != nil {
			return nil, err
		}
		return p, nil
	case runspec.TypeOpenAI, runspec.TypeOllama, runspec.TypeTEI:
		// The per-text vector cache is reuse across runs, so it exists only
		// under an explicit cache_identity (SPEC §9.5); without one every
		// run asks the server, and a changed model gives its new numbers.
		cacheDir, identity := "", e.Str("cache_identity")
		if e.Cache && strings.TrimSpace(identity) != "" {
			cacheDir = filepath.Join(spec.Dir, ".vertebrae_cache", "hosted")
		}
		c, err := hosted.New(hosted.Config{
			Provider: e.Type, BaseURL: e.Str("base_url"), Model: e.Str("model"), Dimensions: e.Int("dimensions", 0),
			APIKeyEnv: e.Str("api_key_env"), Headers: e.StringMap("headers"), BatchSize: e.Int("batch_size", 0),
			Concurrency: e.Int("max_concurrency", 0), MaxRetries: maxRetries(e),
			BackoffBase: e.Duration("initial_backoff", 0), BackoffMax: e.Duration("max_backoff", 0),
			Timeout: e.Duration("request_timeout", 0), CacheDir: cacheDir, CacheIdentity: identity,
		})
		if err != nil {
			return nil, e.Errorf("base_url", "%v", err)
		}
		recipe := c.Recipe()
		return &extract.Func{
			ExtractorName: e.Name, ExtractorType: e.Type, Serves: "text", Streaming: true, RecipeValues: recipe,
			EncodeFunc: func(ctx context.Context, b extract.Batch) (matrix.Matrix, error) {
				texts, ok := b.Items.(retrieval.Texts)
				if !ok {
					return nil, fmt.Errorf("Extractor %s does not support retrieval modality %s", e.Name, b.Items.Modality())
				}
				return c.Embed(ctx, texts)
			},
		}, nil
	case runspec.TypeCommand:
		env := []string{}
		for k, v := range e.StringMap("env") {
			env = append(env, k+"="+v)
		}
		x, err := command.New(command.Config{
			Name: e.Name, Argv: e.Strings("command"), Dir: e.Str("dir"), Env: env,
			Modality: e.Str("modality"), Branches: e.StringMap("branches"), BatchSize: e.Int("batch_size", 0),
			Timeout: e.Duration("timeout", command.DefaultTimeout), BatchDependent: !e.Bool("streaming_safe", true),
			CacheIdentity: e.Str("cache_identity"), Persistent: e.Bool("persistent", false),
		})
		if err != nil {
			return nil, e.Errorf("command", "%v", err)
		}
		// A persistent worker still running when the command ends (an
		// error, an interrupt) is stopped: stdin closed, or killed at once
		// once ctx is done. The normal end is extract.Benchmark's Shutdown.
		*closers = append(*closers, func() error { return x.Shutdown(ctx) })
		return x.AsExtractor(), nil
	case runspec.TypeONNXDualEncoder, runspec.TypeONNXText, runspec.TypeONNXImage:
		return onnxExtractor(ctx, e, onnxLib, closers)
	}
	return nil, e.Errorf("type", "unknown extractor type %s", e.Type)
}

// maxRetries maps the run file's max_retries (0 = no retries) onto the
// client's convention (0 = default).
func maxRetries(e *runspec.Extractor) int {
	if _, set := e.Options["max_retries"]; !set {
		return 0
	}
	if n := e.Int("max_retries", 0); n > 0 {
		return n
	}
	return hosted.NoRetries
}
