package shard

import (
	"context"
	"errors"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Encode encodes rows {r : r mod N = i} of one endpoint in ascending order
// (SPEC §11.2): consecutive rows in batches of the shard's batch size when
// the shard is the whole endpoint (and streaming is enabled for a
// streaming-safe extractor), one row per call otherwise, so a row's vector
// never depends on the shard split. The returned IDs are the whole
// endpoint's: ids_sha256 of a shard is H of its endpoint's ID list, so the
// merged endpoint carries the hash the scorer checks against the relevance
// IDs.
func Encode(ctx context.Context, ds *retrieval.Dataset, entry extract.Entry, streaming bool, side string, sh Shard) (matrix.Matrix, []string, error) {
	x := entry.Extractor
	items, allIDs := ds.Queries(), ds.QueryIDs()
	branch := entry.QueryBranch
	if side == artifact.SideGallery {
		items, allIDs, branch = ds.Gallery(), ds.GalleryIDs(), entry.GalleryBranch
	}
	n := items.Len()
	step := 1
	if sh.TotalShards == 1 {
		step = n
		if streaming && (x.StreamingSafe() || branch != "") {
			step = max(1, sh.BatchSize)
		}
	}
	var parts []matrix.Matrix
	encodeRange := func(lo, hi int) error {
		b := extract.Batch{Side: side, Start: lo, Items: items.Slice(lo, hi), IDs: allIDs[lo:hi]}
		var m matrix.Matrix
		var err error
		if branch != "" {
			m, err = x.(extract.BranchEncoder).EncodeBranch(ctx, b, branch)
		} else {
			m, err = x.(extract.Encoder).Encode(ctx, b)
		}
		if err != nil {
			return fmt.Errorf("Retriever '%s' %s embeddings: %w", x.Name(), side, err)
		}
		if m == nil || m.Rows() != hi-lo {
			return fmt.Errorf("Retriever '%s' %s embeddings returned a batch of the wrong size for rows [%d, %d)", x.Name(), side, lo, hi)
		}
		parts = append(parts, m)
		return nil
	}
	if sh.TotalShards == 1 {
		for lo := 0; lo < n; lo += step {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			if err := encodeRange(lo, min(n, lo+step)); err != nil {
				return nil, nil, err
			}
		}
	} else {
		for r := sh.ShardIndex; r < n; r += sh.TotalShards {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			if err := encodeRange(r, r+1); err != nil {
				return nil, nil, err
			}
		}
	}
	m, err := ConcatRows(ctx, parts)
	return m, allIDs, err
}

// Write stores an encoded shard m (with its endpoint's ids) at the shard's
// key with its §10.6 metadata.
func Write(ctx context.Context, st *artifact.Store, pe *Extractor, ep *Endpoint, sh Shard, recipe map[string]any, m matrix.Matrix, ids []string) error {
	idsSum, err := artifact.IDsSHA256(ids)
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
	meta.ArrayInfo = artifact.ArrayInfoOf(src, artifact.NNZOf(m))
	return st.WriteArray(ctx, sh.OutputKey, src, meta)
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
