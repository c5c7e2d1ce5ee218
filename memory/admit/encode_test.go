package admit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
)

const owner = "Retriever 'clip' query embeddings"

type span struct{ lo, hi int }

// counter is an encoder over a fixed source matrix that records its calls.
type counter struct {
	src   matrix.Matrix
	calls []span
	// edit, when set, may replace the batch (to inject bad outputs).
	edit func(ctx context.Context, lo, hi int, m matrix.Matrix) (matrix.Matrix, error)
}

func (c *counter) fn(ctx context.Context, lo, hi int) (matrix.Matrix, error) {
	c.calls = append(c.calls, span{lo, hi})
	var m matrix.Matrix
	switch t := c.src.(type) {
	case *matrix.Dense:
		m = t.RowSlice(lo, hi)
	case *matrix.CSR:
		m = t.RowSlice(lo, hi)
	}
	if c.edit != nil {
		return c.edit(ctx, lo, hi, m)
	}
	return m, nil
}

func dense64(t *testing.T, rows, cols int) *matrix.Dense {
	t.Helper()
	data := make([]float64, rows*cols)
	for i := range data {
		data[i] = float64(i)*0.5 - 3
	}
	m, err := matrix.NewDense64(rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustBudget(t *testing.T, limit, fixed int64, spill bool, dir string) *Budget {
	t.Helper()
	b, err := NewBudget(limit, fixed, spill, dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameDense(t *testing.T, got matrix.Matrix, want *matrix.Dense) {
	t.Helper()
	d, ok := got.(*matrix.Dense)
	if !ok {
		t.Fatalf("got %T, want *matrix.Dense", got)
	}
	if d.Rows() != want.Rows() || d.Cols() != want.Cols() || d.DType() != want.DType() {
		t.Fatalf("got %s (%d, %d), want %s (%d, %d)", d.DType(), d.Rows(), d.Cols(), want.DType(), want.Rows(), want.Cols())
	}
	eq := false
	switch want.DType() {
	case matrix.Float16:
		eq = slices.Equal(d.Float16Bits(), want.Float16Bits())
	case matrix.Float32:
		eq = slices.Equal(d.Float32Data(), want.Float32Data())
	default:
		eq = slices.Equal(d.Float64Data(), want.Float64Data())
	}
	if !eq {
		t.Errorf("values differ")
	}
}

func sameCSR(t *testing.T, got matrix.Matrix, want *matrix.CSR) {
	t.Helper()
	c, ok := got.(*matrix.CSR)
	if !ok || !got.Sparse() {
		t.Fatalf("got %T, want *matrix.CSR", got)
	}
	if c.Rows() != want.Rows() || c.Cols() != want.Cols() || c.DType() != want.DType() {
		t.Fatalf("got %s (%d, %d), want %s (%d, %d)", c.DType(), c.Rows(), c.Cols(), want.DType(), want.Rows(), want.Cols())
	}
	gp, gi := c.Components()
	wp, wi := want.Components()
	// slices.Equal: an empty mapped array may be nil where the source is not.
	if !slices.Equal(gp, wp) || !slices.Equal(gi, wi) ||
		!slices.Equal(c.Float32Data(), want.Float32Data()) || !slices.Equal(c.Float64Data(), want.Float64Data()) {
		t.Errorf("CSR differs:\n got %v %v %v %v\nwant %v %v %v %v", gp, gi, c.Float32Data(), c.Float64Data(), wp, wi, want.Float32Data(), want.Float64Data())
	}
}

func lastStats(t *testing.T, b *Budget) Stats {
	t.Helper()
	s := b.Stats()
	if len(s) == 0 {
		t.Fatal("no stats recorded")
	}
	return s[len(s)-1]
}

func emptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("%s still holds %v", dir, entries)
	}
}

// Acceptance (a): 8 rows, batch 2, width-2 float64, budget 16, no spill.
func TestDenseOverBudgetNoSpill(t *testing.T) {
	enc := &counter{src: dense64(t, 8, 2)}
	b := mustBudget(t, 16, 0, false, "")
	_, _, err := Endpoint(context.Background(), owner, 8, 2, enc.fn, b)
	want := owner + " is estimated to require 128 bytes, exceeding the memory budget of 16 bytes. Enable MemoryConfig.allow_disk_spill or increase max_memory_bytes."
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	var be *BudgetError
	if !errors.As(err, &be) || be.Required != 128 || be.Budget != 16 || !strings.Contains(err.Error(), "memory budget") {
		t.Errorf("not a BudgetError: %#v", err)
	}
	if !reflect.DeepEqual(enc.calls, []span{{0, 2}}) {
		t.Errorf("calls %v, want [{0 2}]", enc.calls)
	}
	if b.Retained() != 0 {
		t.Errorf("retained %d after failure", b.Retained())
	}
}

// Acceptance (b): 5 rows, batch 2, budget 1, spill.
func TestDenseSpill(t *testing.T) {
	src := dense64(t, 5, 3)
	enc := &counter{src: src}
	base := t.TempDir()
	b := mustBudget(t, 1, 0, true, base)
	m, closeFn, err := Endpoint(context.Background(), owner, 5, 2, enc.fn, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(enc.calls, []span{{0, 2}, {2, 4}, {4, 5}}) {
		t.Errorf("calls %v", enc.calls)
	}
	sameDense(t, m, src)
	st := lastStats(t, b)
	if !st.Spilled || st.SpillBytes != 5*3*8 || st.ResidentBytes != 0 || st.Batches != 3 || b.Retained() != 0 {
		t.Errorf("stats %+v, retained %d", st, b.Retained())
	}
	if filepath.Dir(st.SpillDir) != base || !strings.HasPrefix(filepath.Base(st.SpillDir), "vertebrae-spill-") {
		t.Errorf("spill dir %q not a vertebrae-spill-* directory under %q", st.SpillDir, base)
	}
	if fi, err := os.Stat(filepath.Join(st.SpillDir, "dense.bin")); err != nil || fi.Size() != 5*3*8 {
		t.Errorf("spill file: %v %v", fi, err)
	}
	// Mapped storage is read-only: Clone shares it instead of copying.
	if c := m.(*matrix.Dense).Clone(); &c.Float64Data()[0] != &m.(*matrix.Dense).Float64Data()[0] {
		t.Error("spilled matrix is not marked read-only")
	}
	if err := closeFn(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(st.SpillDir); !os.IsNotExist(err) {
		t.Errorf("spill dir still present after close: %v", err)
	}
	emptyDir(t, base)
	if err := closeFn(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func TestDenseDTypesInMemoryAndSpilled(t *testing.T) {
	vals := []float32{1, -2, 3.5, 0, 1e-3, 7, 8, 9, -10, 11}
	bits := make([]uint16, len(vals))
	for i := range bits {
		bits[i] = uint16(0x3c00 + i) // finite binary16 patterns
	}
	m16, _ := matrix.NewDense16(5, 2, bits)
	m32, _ := matrix.NewDense32(5, 2, vals)
	for _, src := range []*matrix.Dense{m16, m32, dense64(t, 5, 2)} {
		for _, limit := range []int64{1 << 20, 1} {
			enc := &counter{src: src}
			b := mustBudget(t, limit, 0, true, t.TempDir())
			m, closeFn, err := Endpoint(context.Background(), owner, 5, 2, enc.fn, b)
			if err != nil {
				t.Fatal(err)
			}
			sameDense(t, m, src)
			if st := lastStats(t, b); st.Spilled != (limit == 1) {
				t.Errorf("%s limit %d: spilled=%v", src.DType(), limit, st.Spilled)
			}
			if err := closeFn(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestDenseInMemoryExactFitAndRelease(t *testing.T) {
	src := dense64(t, 4, 2) // S = 64
	enc := &counter{src: src}
	b := mustBudget(t, 64+10, 10, false, "")
	m, closeFn, err := Endpoint(context.Background(), owner, 4, 3, enc.fn, b)
	if err != nil {
		t.Fatal(err)
	}
	sameDense(t, m, src)
	if !reflect.DeepEqual(enc.calls, []span{{0, 3}, {3, 4}}) {
		t.Errorf("calls %v", enc.calls)
	}
	if b.Retained() != 64 || lastStats(t, b).ResidentBytes != 64 || lastStats(t, b).Spilled {
		t.Errorf("retained %d, stats %+v", b.Retained(), lastStats(t, b))
	}
	if err := closeFn(); err != nil || b.Retained() != 0 {
		t.Errorf("after close: %v, retained %d", err, b.Retained())
	}
	_ = closeFn()
	if b.Retained() != 0 {
		t.Errorf("double close released twice: %d", b.Retained())
	}
}

// The endpoint owns its rows: an encoder that reuses one output buffer
// for every batch must not corrupt earlier rows.
func TestEncoderBufferReuse(t *testing.T) {
	src := dense64(t, 6, 2)
	buf := make([]float64, 4)
	enc := func(_ context.Context, lo, hi int) (matrix.Matrix, error) {
		n := copy(buf, src.Float64Data()[lo*2:hi*2])
		return matrix.NewDense64(hi-lo, 2, buf[:n])
	}
	for _, limit := range []int64{1 << 20, 1} {
		m, closeFn, err := Endpoint(context.Background(), owner, 6, 2, enc, mustBudget(t, limit, 0, true, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		sameDense(t, m, src)
		_ = closeFn()
	}
}

func TestOneBatchWhenNotStreaming(t *testing.T) {
	for _, batch := range []int{0, -1, 5, 100} {
		enc := &counter{src: dense64(t, 5, 2)}
		_, closeFn, err := Endpoint(context.Background(), owner, 5, batch, enc.fn, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = closeFn()
		if !reflect.DeepEqual(enc.calls, []span{{0, 5}}) {
			t.Errorf("batch %d: calls %v", batch, enc.calls)
		}
	}
	// SPEC §7.3 example: batch size 2 over 3 rows → [0,1], [2].
	enc := &counter{src: dense64(t, 3, 2)}
	if _, _, err := Endpoint(context.Background(), owner, 3, 2, enc.fn, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(enc.calls, []span{{0, 2}, {2, 3}}) {
		t.Errorf("calls %v", enc.calls)
	}
}

// Acceptance (c): query then gallery, one budget, the query fails.
func TestQueryFailureStopsGallery(t *testing.T) {
	b := mustBudget(t, 16, 0, false, "")
	query := &counter{src: dense64(t, 6, 2)}
	gallery := &counter{src: dense64(t, 6, 2)}
	err := runBoth(t, b, 6, 2, query, gallery)
	if err == nil || !strings.Contains(err.Error(), "memory budget") || !strings.HasPrefix(err.Error(), "Retriever 'clip' query embeddings") {
		t.Fatalf("got %v", err)
	}
	if len(query.calls) != 1 || len(gallery.calls) != 0 {
		t.Errorf("query calls %v, gallery calls %v", query.calls, gallery.calls)
	}
}

// The query stays resident while the gallery is encoded, so the gallery
// sees only what is left of the budget.
func TestQueryRetainedWhileGalleryEncodes(t *testing.T) {
	b := mustBudget(t, 100, 0, false, "")
	query := &counter{src: dense64(t, 4, 2)}   // 64 bytes
	gallery := &counter{src: dense64(t, 4, 2)} // 64 more: 128 > 100
	err := runBoth(t, b, 4, 2, query, gallery)
	want := "Retriever 'clip' gallery embeddings is estimated to require 128 bytes, exceeding the memory budget of 100 bytes."
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if len(query.calls) != 2 || len(gallery.calls) != 1 {
		t.Errorf("query calls %v, gallery calls %v", query.calls, gallery.calls)
	}
	// With spill the gallery goes to disk and the query stays in memory.
	b = mustBudget(t, 100, 0, true, t.TempDir())
	if err := runBoth(t, b, 4, 2, &counter{src: dense64(t, 4, 2)}, &counter{src: dense64(t, 4, 2)}); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); len(st) != 2 || st[0].Spilled || !st[1].Spilled {
		t.Errorf("stats %+v", st)
	}
}

// runBoth encodes the query endpoint, then — only if it succeeded — the
// gallery endpoint, as a run does (SPEC §7.3).
func runBoth(t *testing.T, b *Budget, n, batch int, query, gallery *counter) error {
	t.Helper()
	ctx := context.Background()
	_, closeQ, err := Endpoint(ctx, "Retriever 'clip' query embeddings", n, batch, query.fn, b)
	if err != nil {
		return err
	}
	defer closeQ()
	_, closeG, err := Endpoint(ctx, "Retriever 'clip' gallery embeddings", n, batch, gallery.fn, b)
	if err != nil {
		return err
	}
	return closeG()
}

// Acceptance (g): the fixed charge alone exceeds the budget.
func TestFixedChargeOverBudget(t *testing.T) {
	_, err := NewBudget(10, 11, true, "")
	var be *BudgetError
	if err == nil || !strings.Contains(err.Error(), "memory budget") || !errors.As(err, &be) || be.Required != 11 || be.Budget != 10 {
		t.Fatalf("got %v", err)
	}
	cfg := memory.Default()
	limit := int64(100)
	cfg.MaxMemoryBytes = &limit
	cfg.ModelMemoryBytes, cfg.RawBatchMemoryBytes = 60, 41
	if _, err := BudgetFor(cfg); !errors.As(err, &be) || be.Required != 101 {
		t.Errorf("BudgetFor: got %v", err)
	}
	cfg.RawBatchMemoryBytes = 40
	b, err := BudgetFor(cfg)
	if err != nil || b.Limit() != 100 || b.Fixed() != 100 || !b.AllowSpill() {
		t.Fatalf("BudgetFor: %v %+v", err, b)
	}
	// Nothing is left for rows: a one-value endpoint spills.
	m, closeFn, err := Endpoint(context.Background(), owner, 1, 1, (&counter{src: dense64(t, 1, 1)}).fn, mustBudget(t, 100, 100, true, t.TempDir()))
	if err != nil || m.Rows() != 1 {
		t.Fatal(err)
	}
	_ = closeFn()
	for _, c := range []struct{ limit, fixed int64 }{{0, 0}, {-1, 0}, {10, -1}} {
		if _, err := NewBudget(c.limit, c.fixed, false, ""); err == nil {
			t.Errorf("NewBudget(%d, %d) accepted", c.limit, c.fixed)
		}
	}
}

// The fixed charge counts towards R.
func TestFixedChargeInEstimate(t *testing.T) {
	b := mustBudget(t, 100, 40, false, "")
	_, _, err := Endpoint(context.Background(), owner, 8, 2, (&counter{src: dense64(t, 8, 2)}).fn, b)
	var be *BudgetError
	if !errors.As(err, &be) || be.Required != 168 || be.Budget != 100 {
		t.Errorf("got %v", err)
	}
}

// Acceptance (e): per-batch output checks.
func TestBatchChecks(t *testing.T) {
	d := dense64(t, 4, 2)
	nan := dense64(t, 4, 2)
	nan.Float64Data()[5] = math.NaN()
	zeroCols, _ := matrix.NewDense64(2, 0, nil)
	csr, _ := matrix.NewCSR64(2, 2, []int64{0, 1, 2}, []int32{0, 1}, []float64{1, 2})
	cases := []struct {
		name string
		edit func(ctx context.Context, lo, hi int, m matrix.Matrix) (matrix.Matrix, error)
		want string
		// calls is the number of encoder calls before the failure.
		calls int
	}{
		{"rows", func(_ context.Context, lo, hi int, m matrix.Matrix) (matrix.Matrix, error) {
			if lo == 2 {
				return d.RowSlice(0, 1), nil
			}
			return m, nil
		}, owner + " returned 1 embeddings for 2 rows", 2},
		{"width", func(_ context.Context, lo, hi int, m matrix.Matrix) (matrix.Matrix, error) {
			if lo == 2 {
				return dense64(t, 2, 3), nil
			}
			return m, nil
		}, owner + " changed embedding format between batches", 2},
		{"dtype", func(_ context.Context, lo, hi int, m matrix.Matrix) (matrix.Matrix, error) {
			if lo == 2 {
				return matrix.NewDense32(2, 2, make([]float32, 4))
			}
			return m, nil
		}, owner + " changed embedding format between batches", 2},
		{"dense to sparse", func(_ context.Context, lo, hi int, m matrix.Matrix) (matrix.Matrix, error) {
			if lo == 2 {
				return csr, nil
			}
			return m, nil
		}, owner + " changed embedding format between batches", 2},
		{"sparse to dense", func(_ context.Context, lo, hi int, m matrix.Matrix) (matrix.Matrix, error) {
			if lo == 0 {
				return csr, nil
			}
			return m, nil
		}, owner + " changed embedding format between batches", 2},
		{"nan", func(_ context.Context, lo, hi int, m matrix.Matrix) (matrix.Matrix, error) {
			return nan.RowSlice(lo, hi), nil
		}, owner + " must contain only finite numeric values; row 2, column 1", 2},
		{"nil", func(context.Context, int, int, matrix.Matrix) (matrix.Matrix, error) { return nil, nil }, owner + " returned no embeddings", 1},
		{"typed nil", func(context.Context, int, int, matrix.Matrix) (matrix.Matrix, error) {
			return (*matrix.Dense)(nil), nil
		}, owner + " returned no embeddings", 1},
		{"zero columns", func(context.Context, int, int, matrix.Matrix) (matrix.Matrix, error) { return zeroCols, nil }, owner + " must be a 2D array", 1},
		{"zero value", func(context.Context, int, int, matrix.Matrix) (matrix.Matrix, error) { return &matrix.Dense{}, nil }, owner + " returned embeddings of unsupported dtype", 1},
		{"foreign type", func(context.Context, int, int, matrix.Matrix) (matrix.Matrix, error) { return foreign{}, nil }, owner + " returned an unsupported matrix type", 1},
		{"encoder error", func(_ context.Context, lo, hi int, m matrix.Matrix) (matrix.Matrix, error) {
			if lo == 2 {
				return nil, errBoom
			}
			return m, nil
		}, owner + ": encoding rows [2, 4): boom", 2},
	}
	for _, tc := range cases {
		for _, limit := range []int64{1 << 20, 1} {
			base := t.TempDir()
			enc := &counter{src: d, edit: tc.edit}
			b := mustBudget(t, limit, 0, true, base)
			_, _, err := Endpoint(context.Background(), owner, 4, 2, enc.fn, b)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("%s (limit %d): got %v, want prefix %q", tc.name, limit, err, tc.want)
			}
			if len(enc.calls) != tc.calls {
				t.Errorf("%s: %d calls, want %d", tc.name, len(enc.calls), tc.calls)
			}
			if b.Retained() != 0 {
				t.Errorf("%s: retained %d after failure", tc.name, b.Retained())
			}
			emptyDir(t, base)
		}
	}
	var nf *NonFiniteError
	_, _, err := Endpoint(context.Background(), owner, 4, 2, (&counter{src: nan}).fn, nil)
	if !errors.As(err, &nf) || nf.Row != 2 || nf.Col != 1 || nf.Owner != owner {
		t.Errorf("NonFiniteError: %#v", err)
	}
	_, _, err = Endpoint(context.Background(), owner, 4, 2, (&counter{src: d, edit: func(context.Context, int, int, matrix.Matrix) (matrix.Matrix, error) { return nil, errBoom }}).fn, nil)
	if !errors.Is(err, errBoom) {
		t.Errorf("encoder error not wrapped: %v", err)
	}
}

var errBoom = errors.New("boom")

type foreign struct{}

func (foreign) Rows() int                       { return 2 }
func (foreign) Cols() int                       { return 2 }
func (foreign) DType() matrix.DType             { return matrix.Float64 }
func (foreign) Sparse() bool                    { return false }
func (foreign) RowFloat64(_ int, dst []float64) { clear(dst[:2]) }

func TestNoRows(t *testing.T) {
	enc := &counter{src: dense64(t, 1, 1)}
	for _, n := range []int{0, -3} {
		_, _, err := Endpoint(context.Background(), owner, n, 2, enc.fn, nil)
		if err == nil || err.Error() != owner+" requires at least one input row" {
			t.Errorf("n=%d: got %v", n, err)
		}
	}
	if len(enc.calls) != 0 {
		t.Errorf("encoder called: %v", enc.calls)
	}
	if _, _, err := Endpoint(context.Background(), owner, 1, 1, nil, nil); err == nil {
		t.Error("nil encoder accepted")
	}
}

// Acceptance (f): cancellation stops encoding and removes spill files.
func TestCancellationRemovesSpill(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		base := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		var src matrix.Matrix = dense64(t, 6, 2)
		if sparse {
			src = testCSR(t, matrix.Float64)
		}
		var sawDir bool
		enc := &counter{src: src, edit: func(_ context.Context, lo, hi int, m matrix.Matrix) (matrix.Matrix, error) {
			if lo == 2 {
				entries, _ := os.ReadDir(base)
				sawDir = len(entries) == 1
				cancel()
			}
			return m, nil
		}}
		b := mustBudget(t, 1, 0, true, base)
		_, _, err := Endpoint(ctx, owner, 6, 2, enc.fn, b)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("sparse=%v: got %v, want context.Canceled", sparse, err)
		}
		if !sawDir {
			t.Errorf("sparse=%v: no spill directory while encoding", sparse)
		}
		if len(enc.calls) != 2 {
			t.Errorf("sparse=%v: calls %v", sparse, enc.calls)
		}
		emptyDir(t, base)
	}
	// A context cancelled up front encodes nothing; in-memory charges are released.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	enc := &counter{src: dense64(t, 4, 2)}
	if _, _, err := Endpoint(ctx, owner, 4, 2, enc.fn, nil); !errors.Is(err, context.Canceled) || len(enc.calls) != 0 {
		t.Errorf("got %v, calls %v", err, enc.calls)
	}
	ctx, cancel = context.WithCancel(context.Background())
	b := mustBudget(t, 1<<20, 0, false, "")
	enc = &counter{src: dense64(t, 4, 2), edit: func(_ context.Context, lo, _ int, m matrix.Matrix) (matrix.Matrix, error) {
		cancel()
		return m, nil
	}}
	if _, _, err := Endpoint(ctx, owner, 4, 2, enc.fn, b); !errors.Is(err, context.Canceled) || b.Retained() != 0 {
		t.Errorf("got %v, retained %d", err, b.Retained())
	}
}

// Acceptance (h): an unusable spill directory is named in the error.
func TestSpillDirUnwritable(t *testing.T) {
	parent := t.TempDir()
	file := filepath.Join(parent, "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dirs := []string{file, filepath.Join(parent, "missing")}
	if os.Geteuid() != 0 { // root writes through permission bits
		ro := filepath.Join(parent, "read-only")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, ro)
	}
	for _, dir := range dirs {
		for _, src := range []matrix.Matrix{dense64(t, 4, 2), testCSR(t, matrix.Float32)} {
			enc := &counter{src: src}
			_, _, err := Endpoint(context.Background(), owner, src.Rows(), 2, enc.fn, mustBudget(t, 1, 0, true, dir))
			var se *SpillError
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", dir)) || !errors.As(err, &se) || se.Dir != dir {
				t.Errorf("%s: got %v", dir, err)
			}
			if len(enc.calls) != 1 {
				t.Errorf("%s: calls %v", dir, enc.calls)
			}
		}
	}
}

func TestDefaultSpillDirIsTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if os.TempDir() != tmp {
		t.Skip("os.TempDir ignores TMPDIR here")
	}
	b := mustBudget(t, 1, 0, true, "")
	_, closeFn, err := Endpoint(context.Background(), owner, 2, 1, (&counter{src: dense64(t, 2, 2)}).fn, b)
	if err != nil {
		t.Fatal(err)
	}
	if dir := lastStats(t, b).SpillDir; filepath.Dir(dir) != tmp {
		t.Errorf("spill dir %q not under %q", dir, tmp)
	}
	_ = closeFn()
	emptyDir(t, tmp)
}
