package admit

import (
	"context"
	"errors"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Func encodes rows [lo, hi) of an endpoint. It must honour ctx and must
// return a *matrix.Dense or *matrix.CSR with hi−lo rows.
type Func func(ctx context.Context, lo, hi int) (matrix.Matrix, error)

// BudgetError is the out-of-memory-risk failure of SPEC §7.4.
type BudgetError struct {
	// Owner is the endpoint, e.g. "Retriever 'clip' query embeddings"; ""
	// when the fixed charge alone exceeds the budget.
	Owner    string
	Required int64 // R: fixed + retained + the endpoint's estimate
	Budget   int64 // B
}

func (e *BudgetError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("the fixed memory charge of %d bytes (MemoryConfig.model_memory_bytes + raw_batch_memory_bytes) exceeds the memory budget of %d bytes. Increase max_memory_bytes or lower the fixed charges.", e.Required, e.Budget)
	}
	return fmt.Sprintf("%s is estimated to require %d bytes, exceeding the memory budget of %d bytes. Enable MemoryConfig.allow_disk_spill or increase max_memory_bytes.", e.Owner, e.Required, e.Budget)
}

// SpillError is a failure to create, write or map spill files. Dir is the
// configured spill directory (os.TempDir() when none was configured).
type SpillError struct {
	Dir string
	Err error
}

func (e *SpillError) Error() string {
	return fmt.Sprintf("cannot stage embeddings in spill directory %q: %v", e.Dir, e.Err)
}

func (e *SpillError) Unwrap() error { return e.Err }

// NonFiniteError reports a NaN or ±Inf in an encoder's output. Row is the
// endpoint row index; callers that know the row IDs can add the ID.
type NonFiniteError struct {
	Owner    string
	Row, Col int
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("%s must contain only finite numeric values; row %d, column %d is not finite", e.Owner, e.Row, e.Col)
}

// Endpoint encodes the n rows of one endpoint in batches [0, b), [b, 2b), …
// (batch <= 0 or batch >= n means one batch) and returns them as one
// matrix, charged against budget. close releases the matrix (its budget
// charge, mappings and spill files); the matrix must not be used after it.
// On error nothing is left behind: spill files are removed and charges
// released before Endpoint returns. A cancelled ctx stops encoding before
// the next batch and returns ctx.Err().
func Endpoint(ctx context.Context, owner string, n int, batch int, enc Func, budget *Budget) (matrix.Matrix, func() error, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if n <= 0 {
		return nil, nil, fmt.Errorf("%s requires at least one input row", owner)
	}
	if enc == nil {
		return nil, nil, fmt.Errorf("%s has no encoder", owner)
	}
	if batch <= 0 || batch > n {
		batch = n
	}
	r := &run{ctx: ctx, owner: owner, n: n, batch: batch, enc: enc, budget: budget}
	if p := progressOf(ctx); p != nil {
		p(owner, 0, n) // starts the clock before the first batch (SPEC §6.1 rates)
	}
	first, err := r.encode(0, nil)
	if err != nil {
		return nil, nil, err
	}
	switch m := first.(type) {
	case *matrix.Dense:
		switch m.DType() {
		case matrix.Float16:
			return runDense(r, m, (*matrix.Dense).Float16Bits, matrix.NewDense16)
		case matrix.Float32:
			return runDense(r, m, (*matrix.Dense).Float32Data, matrix.NewDense32)
		default:
			return runDense(r, m, (*matrix.Dense).Float64Data, matrix.NewDense64)
		}
	case *matrix.CSR:
		if m.DType() == matrix.Float32 {
			return runSparse(r, m, (*matrix.CSR).Float32Data, matrix.NewCSR32)
		}
		return runSparse(r, m, (*matrix.CSR).Float64Data, matrix.NewCSR64)
	}
	return nil, nil, fmt.Errorf("%s returned an unsupported matrix type %T", owner, first) // unreachable: encode checks
}

// run is the state shared by the dense and sparse paths.
type run struct {
	ctx    context.Context
	owner  string
	n      int
	batch  int
	enc    Func
	budget *Budget
	calls  int
}

// hi is the end of the batch starting at lo.
func (r *run) hi(lo int) int {
	return min(lo+r.batch, r.n)
}

// encode calls the encoder on the batch starting at lo and checks its output
// (against first, unless this is the first batch).
func (r *run) encode(lo int, first matrix.Matrix) (matrix.Matrix, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	hi := r.hi(lo)
	r.calls++
	m, err := r.enc(r.ctx, lo, hi)
	if cerr := r.ctx.Err(); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, fmt.Errorf("%s: encoding rows [%d, %d): %w", r.owner, lo, hi, err)
	}
	if err := r.check(m, lo, hi, first); err != nil {
		return nil, err
	}
	if p := progressOf(r.ctx); p != nil {
		p(r.owner, hi, r.n)
	}
	return m, nil
}

// check applies the per-batch rules of SPEC §7.3.
func (r *run) check(m matrix.Matrix, lo, hi int, first matrix.Matrix) error {
	switch t := m.(type) {
	case nil:
		return fmt.Errorf("%s returned no embeddings for rows [%d, %d)", r.owner, lo, hi)
	case *matrix.Dense:
		if t == nil {
			return fmt.Errorf("%s returned no embeddings for rows [%d, %d)", r.owner, lo, hi)
		}
		if s := t.DType(); s != matrix.Float16 && s != matrix.Float32 && s != matrix.Float64 {
			return fmt.Errorf("%s returned embeddings of unsupported dtype %s", r.owner, s)
		}
	case *matrix.CSR:
		if t == nil {
			return fmt.Errorf("%s returned no embeddings for rows [%d, %d)", r.owner, lo, hi)
		}
		if s := t.DType(); s != matrix.Float32 && s != matrix.Float64 {
			return fmt.Errorf("%s returned sparse embeddings of unsupported dtype %s", r.owner, s)
		}
	default:
		// Other implementations cannot be copied with their element type
		// (or their sparsity) preserved.
		return fmt.Errorf("%s returned an unsupported matrix type %T", r.owner, m)
	}
	if got, want := m.Rows(), hi-lo; got != want {
		return fmt.Errorf("%s returned %d embeddings for %d rows", r.owner, got, want)
	}
	if first == nil {
		if m.Cols() < 1 {
			return fmt.Errorf("%s must be a 2D array with at least one column; got shape (%d, %d)", r.owner, m.Rows(), m.Cols())
		}
	} else if m.Cols() != first.Cols() || m.DType() != first.DType() || m.Sparse() != first.Sparse() {
		return fmt.Errorf("%s changed embedding format between batches: rows [%d, %d) are %s, the first batch was %s",
			r.owner, lo, hi, format(m), format(first))
	}
	if row, col, bad := matrix.FirstNonFinite(m); bad {
		return &NonFiniteError{Owner: r.owner, Row: lo + row, Col: col}
	}
	return nil
}

func format(m matrix.Matrix) string {
	kind := "dense"
	if m.Sparse() {
		kind = "sparse"
	}
	return fmt.Sprintf("%s %s with %d columns", kind, m.DType(), m.Cols())
}

// overBudget is the no-spill failure; the caller has encoded no later batch.
func (r *run) overBudget(required int64) error {
	return &BudgetError{Owner: r.owner, Required: required, Budget: r.budget.Limit()}
}

var errInconsistent = errors.New("storage length does not match its shape")
