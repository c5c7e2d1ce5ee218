package distributed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Encode encodes rows {r : r mod N = i} of one endpoint in ascending order
// (SPEC §11.2). When streaming is enabled for a streaming-safe extractor (or
// a branch encoder) the shard's rows go to the encoder in batches of the
// shard's batch size: consecutive rows when the shard is the whole
// endpoint, rows i, i+N, i+2N, … gathered into one extract.Batch of stride
// N otherwise. Such an extractor's rows depend only on their own inputs, so
// the vectors are bit-identical to one row per call, whatever the split.
// Any other extractor gets the whole endpoint in one call when N = 1 and one
// row per call otherwise, so a row's vector never depends on the split.
// A precomputed table (extract.Precomputed) is looked up by row index, not
// encoded: a modulo shard's rows come from one call with no gathered
// inputs, and its result is the shard's matrix without a further copy.
// A modulo shard of a table mapped from a file (matrix.SetFileRows) is not
// even read here: the result is a matrix.StridedFile, whose rows Write
// reads from the file in blocks as it stores them, so the shard's rows are
// never held whole nor the file's pages faulted in; like a view of the
// mapping, it is valid only while the table's file is open.
// Work and memory are linear in the shard's rows (but for the endpoint's
// ID list, which the dataset shares, not copies). The returned IDs are the
// whole endpoint's, the dataset's own list (read-only): ids_sha256 of a
// shard is H of its endpoint's ID list, so the merged endpoint carries the
// hash the scorer checks against the relevance IDs.
func Encode(ctx context.Context, ds *retrieval.Dataset, entry extract.Entry, streaming bool, side string, sh Shard) (matrix.Matrix, []string, error) {
	x := entry.Extractor
	// Only this side's IDs, shared, not copied: a million-row gallery's
	// copy is a cost every shard pays.
	var items retrieval.Items
	var allIDs []string
	var branch string
	if side == artifact.SideGallery {
		items, allIDs, branch = ds.Gallery(), ds.GalleryIDsShared(), entry.GalleryBranch
	} else {
		items, allIDs, branch = ds.Queries(), ds.QueryIDsShared(), entry.QueryBranch
	}
	// The precomputed extractor looks its rows up by index (Batch.Row) and
	// reads only the batch's length from its items, so its modulo batches
	// need no gathered copy of the endpoint's inputs.
	pc, byIndex := x.(*extract.Precomputed)
	n := items.Len()
	if byIndex && branch == "" {
		// As the unsharded run checks (SPEC §9.4): a longer table would
		// silently serve rows [0, n) however the endpoint is split.
		t := pc.Query
		if side == artifact.SideGallery {
			t = pc.Gallery
		}
		if t != nil && t.Rows() != n {
			return nil, nil, fmt.Errorf("Retriever '%s' %s embeddings returned %d embeddings for %d rows: the precomputed %s table must have one row per %s item",
				x.Name(), side, t.Rows(), n, side, side)
		}
	}
	stride := max(1, sh.TotalShards)
	first := sh.ShardIndex
	if first < 0 || first >= stride {
		return nil, nil, fmt.Errorf("shard index %d is outside [0, %d)", sh.ShardIndex, stride)
	}
	rows := 0 // the shard's rows: first, first+stride, … below n
	if first < n {
		rows = (n-first-1)/stride + 1
	}
	per := 1 // shard rows per encoder call
	// A precomputed table is looked up, not encoded: a shard takes its
	// rows in one call, whose result (a fresh copy of rows i, i+N, …; with
	// one shard a view of the whole table) becomes the shard's matrix as
	// it is. Batches would copy each row into the shard's matrix: with one
	// shard a second copy of the whole table (a mapped 5 GB table peaked
	// at 10 GB).
	lookup := byIndex && branch == ""
	if lookup && rows > 0 {
		t := pc.Query
		if side == artifact.SideGallery {
			t = pc.Gallery
		}
		if v, ok := matrix.NewStridedFile(t, first, stride, rows); ok {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			return v, allIDs, nil
		}
	}
	switch {
	case lookup:
		per = max(1, rows)
	case streaming && (x.StreamingSafe() || branch != ""):
		per = max(1, sh.BatchSize)
	case stride == 1:
		per = max(1, rows)
	}
	out := &shardRows{rows: rows, adopt: lookup}
	for k := 0; k < rows; k += per {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		start, count := first+k*stride, min(per, rows-k)
		b := extract.Batch{Side: side, Start: start, Stride: stride}
		if count == 1 {
			b.Stride = 1
		}
		var gathered retrieval.Items = retrieval.IDsOnly(count)
		ok := true
		if !byIndex || branch != "" {
			gathered, ok = retrieval.GatherItems(items, start, b.Step(), count)
		}
		if !ok {
			// Items this package cannot gather: one row per call, which
			// gives the same vectors for a streaming-safe extractor.
			for i := range count {
				r := start + i*stride
				m, err := encodeBatch(ctx, x, branch, extract.Batch{Side: side, Start: r, Items: items.Slice(r, r+1), IDs: allIDs[r : r+1]})
				if err != nil {
					return nil, nil, err
				}
				if err := out.add(m); err != nil {
					return nil, nil, err
				}
			}
			continue
		}
		b.Items = gathered
		if b.Contiguous() {
			b.IDs = allIDs[start : start+count]
		} else {
			b.IDs = make([]string, count)
			for i := range b.IDs {
				b.IDs[i] = allIDs[b.Row(i)]
			}
		}
		m, err := encodeBatch(ctx, x, branch, b)
		if err != nil {
			return nil, nil, err
		}
		if err := out.add(m); err != nil {
			return nil, nil, err
		}
	}
	m, err := out.matrix(ctx)
	return m, allIDs, err
}

// shardRows collects a shard's encoder batches in order. Dense batches are
// appended to one slice sized for the shard on the first batch, so the
// rows are held once (plus the batch in flight), not once as batches and
// again as their concatenation; CSR batches, whose size is not known
// ahead, are kept and concatenated at the end (ConcatRows).
type shardRows struct {
	rows  int             // the shard's row count
	adopt bool            // a batch of every row is the encoder's own copy: keep it
	whole matrix.Matrix   // that batch
	parts []matrix.Matrix // every batch while they are CSR
	first *matrix.Dense   // the first dense batch: kind, dtype and width
	added int             // rows of the dense batches so far
	f16   []uint16
	f32   []float32
	f64   []float64
}

func (s *shardRows) add(m matrix.Matrix) error {
	if s.adopt && s.whole == nil && s.first == nil && len(s.parts) == 0 && m.Rows() == s.rows {
		s.whole = m
		return nil
	}
	if s.whole != nil {
		return fmt.Errorf("encoder returned rows beyond the shard's %d", s.rows)
	}
	d, dense := m.(*matrix.Dense)
	if len(s.parts) > 0 || (s.first == nil && !dense) {
		s.parts = append(s.parts, m)
		return nil
	}
	if s.first == nil {
		s.first = d
		switch n := s.rows * d.Cols(); d.DType() {
		case matrix.Float16:
			s.f16 = make([]uint16, 0, n)
		case matrix.Float32:
			s.f32 = make([]float32, 0, n)
		default:
			s.f64 = make([]float64, 0, n)
		}
	} else if !dense || d.DType() != s.first.DType() || d.Cols() != s.first.Cols() {
		f := s.first
		return fmt.Errorf("encoder batches differ in kind, dtype or width (%s %d×%d vs %s %d×%d)",
			f.DType(), f.Rows(), f.Cols(), m.DType(), m.Rows(), m.Cols())
	}
	s.added += d.Rows()
	switch d.DType() {
	case matrix.Float16:
		s.f16 = append(s.f16, d.Float16Bits()...)
	case matrix.Float32:
		s.f32 = append(s.f32, d.Float32Data()...)
	default:
		s.f64 = append(s.f64, d.Float64Data()...)
	}
	return nil
}

// matrix returns the shard's rows as one matrix.
func (s *shardRows) matrix(ctx context.Context) (matrix.Matrix, error) {
	if s.whole != nil {
		return s.whole, nil
	}
	if s.first == nil {
		return ConcatRows(ctx, s.parts)
	}
	rows, cols := s.added, s.first.Cols()
	switch s.first.DType() {
	case matrix.Float16:
		return matrix.NewDense16(rows, cols, s.f16)
	case matrix.Float32:
		return matrix.NewDense32(rows, cols, s.f32)
	}
	return matrix.NewDense64(rows, cols, s.f64)
}

// encodeBatch makes one encoder call and checks it returned one row per
// item.
func encodeBatch(ctx context.Context, x extract.Extractor, branch string, b extract.Batch) (matrix.Matrix, error) {
	var m matrix.Matrix
	var err error
	if branch != "" {
		m, err = x.(extract.BranchEncoder).EncodeBranch(ctx, b, branch)
	} else {
		m, err = x.(extract.Encoder).Encode(ctx, b)
	}
	if err != nil {
		return nil, fmt.Errorf("Retriever '%s' %s embeddings: %w", x.Name(), b.Side, err)
	}
	if m == nil || m.Rows() != b.Items.Len() {
		return nil, fmt.Errorf("Retriever '%s' %s embeddings returned a batch of the wrong size for rows %s", x.Name(), b.Side, b.Span())
	}
	return m, nil
}

// Write stores an encoded shard m (with its endpoint's ids) at the shard's
// key with its §10.6 metadata.
func Write(ctx context.Context, st *artifact.Store, pe *Extractor, ep *Endpoint, sh Shard, recipe map[string]any, m matrix.Matrix, ids []string) error {
	idsSum, err := idsSHA256(ids)
	if err != nil {
		return err
	}
	meta := &artifact.EmbeddingShard{
		Common: artifact.Common{ArtifactType: artifact.TypeEmbeddingShard, VertebraeVersion: version.Version, OutputKey: sh.OutputKey},
		EndpointIdentity: artifact.EndpointIdentity{DatasetIdentityKey: pe.DatasetIdentityKey, ExtractorRecipe: recipe,
			RecipeHash: pe.RecipeHash, Side: ep.Side, Branch: ep.Branch, Modality: ep.Modality, IDsSHA256: idsSum,
			CacheEligible: ep.CacheEligible, CacheStatus: ep.CacheStatus},
		Shard: artifact.ShardInfo{TotalShards: sh.TotalShards, ShardIndex: sh.ShardIndex}, EndpointRows: ep.NSamples, BatchSize: sh.BatchSize,
	}
	src := artifact.FromMatrix(m)
	if v, ok := m.(*matrix.StridedFile); ok {
		src = stridedSource{v}
	}
	meta.ArrayInfo = artifact.ArrayInfoOf(src, artifact.NNZOf(m))
	return st.WriteArray(ctx, sh.OutputKey, src, meta)
}

// idsSHA256 is artifact.IDsSHA256(ids), the SHA-256 of the IDs' canonical
// JSON list, written in one pass through a buffer when no ID needs a JSON
// escape (printable ASCII without '"' and '\\': its canonical string is
// the ID in quotes). Every shard hashes its whole endpoint's IDs; a
// million row numbers cost a few milliseconds this way, tens through the
// general encoder. Other lists go to artifact.IDsSHA256.
func idsSHA256(ids []string) (string, error) {
	h := sha256.New()
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, '[')
	for i, id := range ids {
		for j := 0; j < len(id); j++ {
			if c := id[j]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				return artifact.IDsSHA256(ids)
			}
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, id...)
		buf = append(buf, '"')
		if len(buf) >= 60<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(append(buf, ']'))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// stridedSource streams a shard's rows from a table's file (Encode's
// matrix.StridedFile) in batches of the artifact store's size, each read
// into one reused buffer: the store consumes a batch before asking for the
// next (artifact.Source; an io.Writer does not retain what it is given).
type stridedSource struct{ v *matrix.StridedFile }

func (s stridedSource) Rows() int           { return s.v.Rows() }
func (s stridedSource) Cols() int           { return s.v.Cols() }
func (s stridedSource) DType() matrix.DType { return s.v.DType() }
func (s stridedSource) Sparse() bool        { return false }

func (s stridedSource) Batches(ctx context.Context, yield func(matrix.Matrix) error) error {
	per := max(1, artifact.DefaultBatchBytes/max(1, s.v.Cols()*s.v.DType().Size()))
	return s.v.Batches(ctx, per, func(d *matrix.Dense) error { return yield(d) })
}

// ConcatRows stacks row batches of one kind and element type. It returns
// ctx's error once ctx is done.
func ConcatRows(ctx context.Context, parts []matrix.Matrix) (matrix.Matrix, error) {
	if len(parts) == 0 {
		return nil, errors.New("no rows to store")
	}
	first := parts[0]
	rows := 0
	for _, p := range parts {
		if p.Sparse() != first.Sparse() || p.DType() != first.DType() || p.Cols() != first.Cols() {
			return nil, fmt.Errorf("encoder batches differ in kind, dtype or width (%s %d×%d vs %s %d×%d)",
				first.DType(), first.Rows(), first.Cols(), p.DType(), p.Rows(), p.Cols())
		}
		rows += p.Rows()
	}
	// GatherRows visits rows in order, so a cursor finds each row's part
	// in amortised constant time (a scan from the first part per row
	// made a million-row endpoint of 128-row batches quadratic).
	part, base := 0, 0
	return GatherRows(ctx, parts, rows, func(r int) (int, int) {
		for r-base >= parts[part].Rows() {
			base += parts[part].Rows()
			part++
		}
		return part, r - base
	})
}

// checkEvery is how many rows GatherRows copies between context checks.
const checkEvery = 4096

// GatherRows builds a rows×cols matrix whose row r is row j of part i for
// (i, j) = at(r); rows are visited in order. All parts share the first
// part's kind, dtype and width. It returns ctx's error once ctx is done
// (checked every checkEvery rows).
func GatherRows(ctx context.Context, parts []matrix.Matrix, rows int, at func(r int) (int, int)) (matrix.Matrix, error) {
	first := parts[0]
	cols := first.Cols()
	if first.Sparse() {
		indptr := make([]int64, 1, rows+1)
		var indices []int32
		var vals []float64
		var buf []float64
		for r := 0; r < rows; r++ {
			if r%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			i, j := at(r)
			c, ok := parts[i].(*matrix.CSR)
			if !ok {
				return nil, fmt.Errorf("unsupported sparse matrix type %T", parts[i])
			}
			var idx []int32
			idx, buf = c.RowEntries(j, buf)
			indices = append(indices, idx...)
			vals = append(vals, buf...)
			indptr = append(indptr, int64(len(indices)))
		}
		if first.DType() == matrix.Float32 {
			v32 := make([]float32, len(vals))
			for k, v := range vals {
				v32[k] = float32(v)
			}
			return matrix.NewCSR32(rows, cols, indptr, indices, v32)
		}
		return matrix.NewCSR64(rows, cols, indptr, indices, vals)
	}
	dense := make([]*matrix.Dense, len(parts))
	for i, p := range parts {
		d, ok := p.(*matrix.Dense)
		if !ok {
			return nil, fmt.Errorf("unsupported dense matrix type %T", p)
		}
		dense[i] = d
	}
	switch first.DType() {
	case matrix.Float16:
		out := make([]uint16, 0, rows*cols)
		for r := 0; r < rows; r++ {
			if r%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			i, j := at(r)
			out = append(out, dense[i].Float16Bits()[j*cols:(j+1)*cols]...)
		}
		return matrix.NewDense16(rows, cols, out)
	case matrix.Float32:
		out := make([]float32, 0, rows*cols)
		for r := 0; r < rows; r++ {
			if r%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			i, j := at(r)
			out = append(out, dense[i].Float32Data()[j*cols:(j+1)*cols]...)
		}
		return matrix.NewDense32(rows, cols, out)
	}
	out := make([]float64, 0, rows*cols)
	for r := 0; r < rows; r++ {
		if r%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		i, j := at(r)
		out = append(out, dense[i].Float64Data()[j*cols:(j+1)*cols]...)
	}
	return matrix.NewDense64(rows, cols, out)
}
