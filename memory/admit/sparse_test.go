package admit

import (
	"context"
	"errors"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// testCSR has 6 rows of width 5 with uneven sparsity, empty rows included.
func testCSR(t *testing.T, dt matrix.DType) *matrix.CSR {
	t.Helper()
	indptr := []int64{0, 2, 2, 5, 6, 6, 11}
	indices := []int32{0, 3, 1, 2, 4, 4, 0, 1, 2, 3, 4}
	vals := []float64{1, 2, -1, 0.5, 3, 7, 0.25, 1, 2, 3, 4}
	var (
		m   *matrix.CSR
		err error
	)
	if dt == matrix.Float32 {
		v32 := make([]float32, len(vals))
		for i, v := range vals {
			v32[i] = float32(v)
		}
		m, err = matrix.NewCSR32(6, 5, indptr, indices, v32)
	} else {
		m, err = matrix.NewCSR64(6, 5, indptr, indices, vals)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sparseCost is the §7.4 cost of rows [lo, hi) of m.
func sparseCost(m *matrix.CSR, lo, hi int) int64 {
	p, _ := m.Components()
	return (p[hi]-p[lo])*int64(m.DType().Size()+4) + 8*int64(hi-lo)
}

// Acceptance (d): sparse rows keep order and stay sparse, in memory,
// spilled from the start and spilled mid-way.
func TestSparseInMemoryAndSpilled(t *testing.T) {
	for _, dt := range []matrix.DType{matrix.Float32, matrix.Float64} {
		src := testCSR(t, dt)
		total := sparseCost(src, 0, 6)
		for _, tc := range []struct {
			name    string
			limit   int64
			spilled bool
		}{
			{"in memory", total, false},
			{"spilled from the start", 1, true},
			{"spilled mid-way", sparseCost(src, 0, 4), true},
		} {
			base := t.TempDir()
			b := mustBudget(t, tc.limit, 0, true, base)
			enc := &counter{src: src}
			m, closeFn, err := Endpoint(context.Background(), owner, 6, 2, enc.fn, b)
			if err != nil {
				t.Fatalf("%s %s: %v", dt, tc.name, err)
			}
			sameCSR(t, m, src)
			if !reflect.DeepEqual(enc.calls, []span{{0, 2}, {2, 4}, {4, 6}}) {
				t.Errorf("%s %s: calls %v", dt, tc.name, enc.calls)
			}
			st := lastStats(t, b)
			if st.Spilled != tc.spilled || !st.Sparse || st.Rows != 6 || st.Cols != 5 || st.DType != dt {
				t.Errorf("%s %s: stats %+v", dt, tc.name, st)
			}
			wantResident := total
			if tc.spilled {
				wantResident = 0
				if want := 11*int64(dt.Size()) + 11*4 + 7*8; st.SpillBytes != want {
					t.Errorf("%s %s: spill bytes %d, want %d", dt, tc.name, st.SpillBytes, want)
				}
				for _, f := range []string{"values.bin", "indices.bin", "indptr.bin"} {
					if _, err := os.Stat(st.SpillDir + "/" + f); err != nil {
						t.Errorf("%s %s: %v", dt, tc.name, err)
					}
				}
			}
			if st.ResidentBytes != wantResident || b.Retained() != wantResident {
				t.Errorf("%s %s: resident %d, retained %d, want %d", dt, tc.name, st.ResidentBytes, b.Retained(), wantResident)
			}
			if err := closeFn(); err != nil {
				t.Fatal(err)
			}
			if b.Retained() != 0 {
				t.Errorf("%s %s: retained %d after close", dt, tc.name, b.Retained())
			}
			emptyDir(t, base)
		}
	}
}

func TestSparseOverBudgetNoSpill(t *testing.T) {
	src := testCSR(t, matrix.Float64)
	// The first batch fits; the second does not: R = F + retained + batch cost.
	fixed := int64(3)
	limit := fixed + sparseCost(src, 0, 2)
	b := mustBudget(t, limit, fixed, false, "")
	enc := &counter{src: src}
	_, _, err := Endpoint(context.Background(), owner, 6, 2, enc.fn, b)
	var be *BudgetError
	if !errors.As(err, &be) || be.Required != fixed+sparseCost(src, 0, 4) || be.Budget != limit ||
		!strings.HasSuffix(err.Error(), "exceeding the memory budget of "+strconv.FormatInt(limit, 10)+" bytes. Enable MemoryConfig.allow_disk_spill or increase max_memory_bytes.") {
		t.Fatalf("got %v", err)
	}
	if !reflect.DeepEqual(enc.calls, []span{{0, 2}, {2, 4}}) {
		t.Errorf("calls %v: no batch after the failing one may be encoded", enc.calls)
	}
	if b.Retained() != 0 {
		t.Errorf("retained %d after failure", b.Retained())
	}
}

func TestSparseAllEmpty(t *testing.T) {
	src, err := matrix.NewCSR64(3, 4, []int64{0, 0, 0, 0}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int64{1 << 10, 1} {
		m, closeFn, err := Endpoint(context.Background(), owner, 3, 2, (&counter{src: src}).fn, mustBudget(t, limit, 0, true, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		sameCSR(t, m, src)
		_ = closeFn()
	}
}

func TestSparseBufferReuse(t *testing.T) {
	src := testCSR(t, matrix.Float64)
	vals := make([]float64, 16)
	idx := make([]int32, 16)
	enc := func(_ context.Context, lo, hi int) (matrix.Matrix, error) {
		b := src.RowSlice(lo, hi)
		p, i := b.Components()
		n := copy(vals, b.Float64Data())
		copy(idx, i)
		return matrix.NewCSR64(hi-lo, 5, p, idx[:n], vals[:n])
	}
	for _, limit := range []int64{1 << 20, 1} {
		m, closeFn, err := Endpoint(context.Background(), owner, 6, 2, enc, mustBudget(t, limit, 0, true, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		sameCSR(t, m, src)
		_ = closeFn()
	}
}

// A full disk is reported naming the spill directory, and nothing is left.
func TestSpillDiskFull(t *testing.T) {
	orig := spillWriter
	t.Cleanup(func() { spillWriter = orig })
	spillWriter = func(f *os.File) io.Writer { return fullDisk{} }
	for _, src := range []matrix.Matrix{dense64(t, 4, 2), testCSR(t, matrix.Float32)} {
		base := t.TempDir()
		_, _, err := Endpoint(context.Background(), owner, src.Rows(), 2, (&counter{src: src}).fn, mustBudget(t, 1, 0, true, base))
		var se *SpillError
		if !errors.As(err, &se) || se.Dir != base || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), base) {
			t.Errorf("got %v", err)
		}
		emptyDir(t, base)
	}
}

type fullDisk struct{}

func (fullDisk) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// The element-by-element encoding used on big-endian hosts writes and reads
// the same little-endian files; exercise it here by pretending.
func TestPortableByteOrderPath(t *testing.T) {
	hostLittleEndian = false
	t.Cleanup(func() { hostLittleEndian = true })
	bits := []uint16{0x3c00, 0xbc00, 0x4000, 0x0001}
	m16, _ := matrix.NewDense16(2, 2, bits)
	m32, _ := matrix.NewDense32(2, 2, []float32{1, -2, 3.5, 1e-30})
	for _, src := range []matrix.Matrix{m16, m32, dense64(t, 3, 2), testCSR(t, matrix.Float32), testCSR(t, matrix.Float64)} {
		m, closeFn, err := Endpoint(context.Background(), owner, src.Rows(), 1, (&counter{src: src}).fn, mustBudget(t, 1, 0, true, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := src.(*matrix.CSR); ok {
			sameCSR(t, m, c)
		} else {
			sameDense(t, m, src.(*matrix.Dense))
		}
		_ = closeFn()
	}
}

// Sizes that overflow int64 saturate and fail the budget; they never wrap
// around into a small number or panic.
func TestHugeEndpoint(t *testing.T) {
	huge := int(^uint(0) >> 1)
	enc := &counter{src: dense64(t, 1, 4)}
	_, _, err := Endpoint(context.Background(), owner, huge, 1, enc.fn, mustBudget(t, 1<<40, 0, false, ""))
	var be *BudgetError
	if !errors.As(err, &be) || be.Required != int64(^uint64(0)>>1) {
		t.Errorf("got %v", err)
	}
	_, _, err = Endpoint(context.Background(), owner, huge, 1, enc.fn, nil)
	if err == nil || !strings.Contains(err.Error(), "more than one allocation can hold") {
		t.Errorf("nil budget: got %v", err)
	}
	if len(enc.calls) != 2 {
		t.Errorf("calls %v", enc.calls)
	}
	// With spill the file cannot be reserved (or written); the error names
	// the directory and nothing is left behind.
	// A file system without fallocate would only fail while writing, so the
	// encoder also gives up after a few batches.
	base := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	stop := func(ctx context.Context, lo, hi int) (matrix.Matrix, error) {
		if calls++; calls == 3 {
			cancel()
		}
		return enc.fn(ctx, lo, hi)
	}
	_, _, err = Endpoint(ctx, owner, 1<<40, 1, stop, mustBudget(t, 1, 0, true, base))
	var se *SpillError
	if !errors.As(err, &se) && !errors.Is(err, context.Canceled) {
		t.Errorf("spill of 32 TiB: %v", err)
	}
	emptyDir(t, base)
}
