package runspec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/formats/files"
	"github.com/vertebrae-eval/vertebrae/formats/idlist"
	"github.com/vertebrae-eval/vertebrae/formats/qrels"
	"github.com/vertebrae-eval/vertebrae/internal/digestcache"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// LoadOptions are what a caller adds to a dataset section when it loads
// it. The run file and the CLI's flags (which describe the same section)
// load through LoadDataset with different options.
type LoadOptions struct {
	// Source names the section in messages ("<run file>"); "" for flags.
	Source string
	// Config is the protocol the dataset is evaluated under: it decides
	// whether queries without a positive are dropped, and (with
	// CheckFinite) which similarity the load-time scan prepares for.
	Config retrieval.Config
	// DigestCache is the directory where facts about unchanged embedding
	// files (their SPEC §2.9 digests, that every value is finite) are kept
	// between runs (DefaultDigestCache: the environment's); "" disables it.
	DigestCache string
	// CheckFinite scans every embedding table for NaN and ±Inf as it is
	// read, naming the file, row, ID and column (else the dataset's own
	// check finds them, naming the endpoint). The scan is scoring's own:
	// on a mapped file its cosine norms are kept for scoring.
	CheckFinite bool
	// Admit, when set, takes each embedding table once it is read and
	// checked (the query endpoint before the gallery is read) and returns
	// the matrix to use: the CLI admits tables against its memory budget.
	Admit func(ctx context.Context, side string, m matrix.Matrix) (matrix.Matrix, error)
	// BackgroundIdentity hashes the content identity while scoring runs
	// (retrieval.WithBackgroundIdentity).
	BackgroundIdentity bool
	// IDsOnlyIdentity leaves the embeddings out of an undeclared identity
	// (retrieval.WithIDsOnlyIdentity): the task is the IDs, relevance and
	// exclusions.
	IDsOnlyIdentity bool
}

// digestCache is the digest cache in dir (nil, disabled, for "").
func digestCache(dir string) *digestcache.Cache {
	if dir == "" {
		return nil
	}
	return digestcache.New(dir)
}

// endpointTables are the embedding tables a dataset names, for precomputed
// extractors that do not name their own.
type endpointTables struct {
	query, gallery matrix.Matrix
	files          *tableFiles // the files they (and extractors' own tables) were read from
}

// LoadDataset reads the files of a dataset section and builds the
// validated dataset (SPEC §2). Every error names the file, and the row, ID
// or field where there is one. closers releases the tables' mappings once
// the dataset is no longer used.
func LoadDataset(ctx context.Context, d *Dataset, opts LoadOptions, closers *files.Closers) (*retrieval.Dataset, error) {
	ds, _, err := loadDataset(ctx, d, opts, closers)
	return ds, err
}

func loadDataset(ctx context.Context, d *Dataset, opts LoadOptions, closers *files.Closers) (*retrieval.Dataset, endpointTables, error) {
	tables := endpointTables{files: newTableFiles(digestCache(opts.DigestCache))}
	q, qids, err := loadEndpoint(ctx, d.Queries, "query", opts, &tables.query, tables.files, closers)
	if err != nil {
		return nil, tables, err
	}
	identity := retrieval.FromContent()
	if d.Declared() {
		identity = retrieval.Declared(d.ID, d.Revision)
	}
	var excl []retrieval.Pair
	if d.Exclusions != "" {
		if excl, err = files.ReadExclusions(ctx, d.Exclusions); err != nil {
			return nil, tables, err
		}
	}
	dsOpts := []retrieval.Option{retrieval.WithIdentity(identity), retrieval.WithExclusions(excl), retrieval.WithMetadata(d.Metadata), retrieval.WithContext(ctx)}
	if opts.BackgroundIdentity {
		dsOpts = append(dsOpts, retrieval.WithBackgroundIdentity())
	}
	if opts.IDsOnlyIdentity && !d.Declared() {
		dsOpts = append(dsOpts, retrieval.WithIDsOnlyIdentity())
	}
	if opts.Config.DropsQueriesWithoutPositives() {
		dsOpts = append(dsOpts, retrieval.WithDropQueriesWithoutPositives())
	}
	if d.Labels != nil && d.Labels.LeaveOneOut {
		labels, err := files.ReadLabels(ctx, d.Labels.Queries)
		if err != nil {
			return nil, tables, err
		}
		tables.gallery = tables.query
		ds, err := retrieval.NewLeaveOneOutDataset(q, qids, labels, dsOpts...)
		if err == nil {
			tables.files.storeFinite()
		}
		return ds, tables, relevanceSources{queryLabels: d.Labels.Queries}.nameSource(err)
	}
	g, gids, err := loadEndpoint(ctx, d.Gallery, "gallery", opts, &tables.gallery, tables.files, closers)
	if err != nil {
		return nil, tables, err
	}
	if qm, gm := tables.query, tables.gallery; qm != nil && gm != nil && qm.Cols() != gm.Cols() {
		return nil, tables, fmt.Errorf("Query and gallery embedding dimensions must match: %s has width %d, %s has width %d (same width; got %d and %d)",
			d.Queries.Path, qm.Cols(), d.Gallery.Path, gm.Cols(), qm.Cols(), gm.Cols())
	}
	var rel retrieval.Relevance
	if d.Qrels != nil {
		rel, err = files.ReadRelevance(ctx, d.Qrels.Path, d.Qrels.Format)
	} else if d.Labels != nil {
		var ql, gl []string
		if ql, err = files.ReadLabels(ctx, d.Labels.Queries); err == nil {
			if gl, err = files.ReadLabels(ctx, d.Labels.Gallery); err == nil {
				// Label-derived relevance stays implicit (classes, a few
				// bytes per row): nothing per pair is held or charged.
				rel = retrieval.LabelRelevance(ql, gl)
			}
		}
	}
	if err != nil {
		return nil, tables, err
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: q, Gallery: g, QueryIDs: qids, GalleryIDs: gids}, rel, dsOpts...)
	if err == nil {
		// The dataset scanned every embedding value (SPEC §2.10 step 2):
		// later loads of the unchanged files skip the scan.
		tables.files.storeFinite()
	}
	var src relevanceSources
	if d.Qrels != nil {
		err = unknownIDHint(err, d.Qrels.Path, d.Qrels.Format, qids, gids)
		src.qrels = d.Qrels.Path
	} else if d.Labels != nil {
		src.queryLabels, src.galleryLabels = d.Labels.Queries, d.Labels.Gallery
	}
	return ds, tables, src.nameSource(err)
}

// loadEndpoint reads one endpoint: its items (an embedding table, mapped or
// loaded; texts; image paths) and its IDs (an ID file, a Parquet/Arrow
// column or the texts' own), checked against each other and, for tables,
// for width and (opts.CheckFinite) finite values, then admitted.
func loadEndpoint(ctx context.Context, ep Endpoint, side string, opts LoadOptions, table *matrix.Matrix, tf *tableFiles, closers *files.Closers) (retrieval.Items, []string, error) {
	var ids []string
	var err error
	if ep.IDs != "" {
		if ids, err = idlist.ReadIDsContext(ctx, ep.IDs); err != nil {
			return nil, nil, err
		}
		if err := idlist.Check(side, ep.IDs, ids, true); err != nil {
			return nil, nil, err
		}
	}
	var items retrieval.Items
	switch ep.Modality {
	case "", ModalityEmbeddings:
		if ep.Path == "" {
			if ids == nil {
				return nil, nil, opts.sectionErrorf(side, " needs a path or an ids file")
			}
			return retrieval.IDsOnly(len(ids)), ids, nil
		}
		snap := digestSnap(tf.cache, ep.Path, ep.Tensor)
		m, colIDs, err := files.ReadEndpoint(ctx, ep.Path, ep.Tensor, ep.IDColumn, closers)
		if err != nil {
			return nil, nil, err
		}
		if colIDs != nil {
			ids = colIDs
			if err := idlist.Check(side, ep.Path+" column "+ep.IDColumn, ids, true); err != nil {
				return nil, nil, err
			}
		}
		endpoint := strings.ToUpper(side[:1]) + side[1:]
		if m.Cols() == 0 {
			return nil, nil, formats.Errorf(ep.Path, "%s embeddings must be a 2D array with at least one column; got shape (%d, 0)", endpoint, m.Rows())
		}
		if opts.CheckFinite {
			if err := checkFinite(ep.Path, endpoint, m, ids, opts.Config.Similarity); err != nil {
				return nil, nil, err
			}
		}
		if err := checkAligned(side, ep, m.Rows(), ids); err != nil {
			return nil, nil, err
		}
		tf.add(m, snap)
		*table = m
		if opts.Admit != nil {
			if m, err = opts.Admit(ctx, side, m); err != nil {
				return nil, nil, err
			}
		}
		return cachedEmbeddings(tf.cache, snap, m), ids, nil
	case ModalityText:
		texts, fileIDs, err := files.ReadTexts(ep.Path)
		if err != nil {
			return nil, nil, err
		}
		if ids == nil {
			ids = fileIDs
		}
		items = retrieval.Texts(texts)
	case ModalityImage:
		paths, err := files.ReadImageList(ep.Path)
		if err != nil {
			return nil, nil, err
		}
		items = retrieval.Images(paths)
	default:
		return nil, nil, opts.sectionErrorf(side, ": modality %q has no built-in reader (use text, image or embeddings)", ep.Modality)
	}
	if err := checkAligned(side, ep, items.Len(), ids); err != nil {
		return nil, nil, err
	}
	return items, ids, nil
}

// sectionErrorf is an error about an endpoint of the dataset section,
// named "<run file>: dataset.<key>" or, for a section given in Go (no
// Source), "dataset.<key>".
func (o LoadOptions) sectionErrorf(side, format string, args ...any) error {
	where := "dataset." + sectionKey(side)
	if o.Source != "" {
		where = o.Source + ": " + where
	}
	return fmt.Errorf("%s"+format, append([]any{where}, args...)...)
}

// sectionKey is the run file's key of an endpoint.
func sectionKey(side string) string {
	if side == "query" {
		return "queries"
	}
	return side
}

// checkAligned names both files when an endpoint's ID file and its inputs
// disagree on the row count (SPEC §2.2). Default IDs, and an empty list
// (which the dataset reports), pass.
func checkAligned(side string, ep Endpoint, rows int, ids []string) error {
	if ep.IDs == "" || ids == nil || len(ids) == rows || len(ids) == 0 {
		return nil
	}
	return formats.Errorf(ep.IDs, "%s IDs must align with their input collections: %d IDs for the %d rows of %s", side, len(ids), rows, ep.Path)
}

// checkFinite reports the first NaN/Inf of a file with its row, ID and column.
func checkFinite(path, endpoint string, m matrix.Matrix, ids []string, simName string) error {
	sim, _ := rank.ParseSimilarity(simName)     // validated with the config
	r, c, bad := rank.FirstNonFinite(m, sim, 0) // the scan of a large file is on the critical path
	if !bad {
		return nil
	}
	id := strconv.Itoa(r)
	if r < len(ids) {
		id = ids[r]
	}
	var v float64
	if d, ok := m.(*matrix.Dense); ok {
		v = d.At(r, c)
	} else {
		v = math.NaN()
	}
	return formats.Errorf(path, "%s embeddings must contain only finite numeric values; row %d (ID %s), column %d is %v", endpoint, r, msgfmt.Quote(id), c, v)
}

// relevanceSources are the files a dataset's relevance came from.
type relevanceSources struct{ qrels, queryLabels, galleryLabels string }

// nameSource adds the file to dataset errors about relevance that carry no
// file or line of their own (matrix forms and labels; record forms already
// name "path:line").
func (src relevanceSources) nameSource(err error) error {
	var inv *retrieval.InvalidError
	if err == nil || !errors.As(err, &inv) {
		return err
	}
	msg := inv.Error()
	switch {
	case src.qrels != "" && (strings.HasPrefix(msg, "Dense relevance") || strings.HasPrefix(msg, "Sparse relevance") ||
		strings.HasPrefix(msg, "Relevance grades must be finite and non-negative (query")):
		return fmt.Errorf("%s: %w", src.qrels, err)
	case src.queryLabels != "" && strings.Contains(msg, "labels must"):
		files := src.queryLabels
		if src.galleryLabels != "" && src.galleryLabels != src.queryLabels {
			files += ", " + src.galleryLabels
		}
		return fmt.Errorf("%s: %w", files, err)
	}
	return err
}

// unknownIDHint adds a hint to an "unknown query or gallery ID" error when
// the unknown ID and a known one differ only by surrounding white space (a
// trailing space in an ID file or qrels is invisible, and IDs are compared
// byte for byte, SPEC §2.2).
func unknownIDHint(err error, qrelsPath, qrelsFormat string, qids, gids []string) error {
	var inv *retrieval.InvalidError
	if err == nil || qrelsPath == "" || !errors.As(err, &inv) || !strings.Contains(err.Error(), "unknown query or gallery ID") {
		return err
	}
	f, ferr := qrels.FormatFromPath(qrelsPath)
	if qrelsFormat != "" {
		f, ferr = qrels.ParseFormat(qrelsFormat)
	}
	if ferr != nil || !f.IsText() {
		return err
	}
	recs, rerr := qrels.ReadRecords(qrelsPath, f)
	if rerr != nil {
		return err
	}
	for _, side := range []struct {
		name string
		ids  []string
		get  func(qrels.Record) string
	}{{"query", qids, func(r qrels.Record) string { return r.QueryID }}, {"gallery", gids, func(r qrels.Record) string { return r.GalleryID }}} {
		known := make(map[string]bool, len(side.ids))
		trimmed := make(map[string]string, len(side.ids))
		for _, id := range side.ids {
			known[id] = true
			trimmed[strings.TrimSpace(id)] = id
		}
		for _, r := range recs {
			id := side.get(r)
			if known[id] {
				continue
			}
			if k, ok := trimmed[strings.TrimSpace(id)]; ok {
				return fmt.Errorf("%w\nhint: %s ID %s (%s:%d) and the known ID %s differ only by surrounding white space; IDs are compared byte for byte",
					err, side.name, msgfmt.Quote(id), qrelsPath, r.Line, msgfmt.Quote(k))
			}
		}
	}
	return err
}

// LoadTable reads one embedding endpoint as LoadDataset does (side is
// "query" or "gallery"), for a backbone whose tables are separate files.
// It returns the matrix (admitted) and the IDs of its ID column, if any.
func LoadTable(ctx context.Context, ep Endpoint, side string, opts LoadOptions, closers *files.Closers) (matrix.Matrix, []string, error) {
	if ep.Modality != "" && ep.Modality != ModalityEmbeddings {
		return nil, nil, opts.sectionErrorf(side, ": a table has modality embeddings, not %q", ep.Modality)
	}
	var table matrix.Matrix
	items, ids, err := loadEndpoint(ctx, ep, side, opts, &table, newTableFiles(digestCache(opts.DigestCache)), closers)
	if err != nil {
		return nil, nil, err
	}
	e, ok := items.(retrieval.EmbeddingItems)
	if !ok {
		return nil, nil, opts.sectionErrorf(side, " names no embedding file")
	}
	return e.Matrix(), ids, nil
}
