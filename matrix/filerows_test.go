package matrix

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fileBacked returns a read-only rows×cols matrix of random element bits
// (NaN patterns included: rows are copied, never interpreted) and the same
// matrix backed by a file holding its elements after a 13-byte header.
func fileBacked(t *testing.T, dt DType, rows, cols int, seed uint64) (mem, mapped *Dense) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	mem = newDenseOf(dt, rows, cols)
	b := mem.bytes()
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "m.bin")
	if err := os.WriteFile(path, append(bytes.Repeat([]byte{'h'}, 13), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	// The "mapping" is a copy of the bytes: only the reads must agree.
	mapped = newDenseOf(dt, rows, cols)
	copy(mapped.bytes(), b)
	mapped.ReadOnly().SetFileRows(f, 13)
	if !mapped.HasFileRows() {
		t.Fatal("SetFileRows on read-only storage recorded nothing")
	}
	return mem, mapped
}

func denseBytes(t *testing.T, m Matrix) []byte {
	t.Helper()
	d, ok := m.(*Dense)
	if !ok {
		t.Fatalf("%T, want *Dense", m)
	}
	return d.bytes()
}

// Strided rows read from a table's file in blocks are bit-identical to the
// rows copied from memory (StridedRows), for every dtype, odd widths,
// every shard of N ∈ {1, 2, 3, 7} over row counts that are not multiples
// of N, with reads of many rows, of one row and of a span smaller than a
// row; and so are the batches of StridedFile whatever their size.
func TestReadStridedRowsMatchesMemory(t *testing.T) {
	defer func(s int) { stridedReadSpan = s }(stridedReadSpan)
	for _, dt := range []DType{Float16, Float32, Float64} {
		for _, shape := range [][2]int{{1, 1}, {23, 3}, {101, 5}} {
			rows, cols := shape[0], shape[1]
			mem, mapped := fileBacked(t, dt, rows, cols, uint64(rows*cols))
			for _, span := range []int{4 << 20, 1, 3 * cols * dt.Size(), 64} {
				stridedReadSpan = span
				for _, n := range []int{1, 2, 3, 7} {
					for i := range min(n, rows) {
						count := (rows - i + n - 1) / n
						want, err := StridedRows(mem, i, n, count)
						if err != nil {
							t.Fatal(err)
						}
						got, err := ReadStridedRows(mapped, i, n, count)
						if err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(denseBytes(t, got), denseBytes(t, want)) || got.Rows() != count || got.DType() != dt {
							t.Fatalf("%v %d×%d span %d: shard %d/%d differs from the memory copy", dt, rows, cols, span, i, n)
						}
						v, ok := NewStridedFile(mapped, i, n, count)
						if !ok {
							t.Fatal("NewStridedFile refused a file-backed matrix")
						}
						if v.Rows() != count || v.Cols() != cols || v.DType() != dt || v.Sparse() {
							t.Fatalf("StridedFile %d×%d %v", v.Rows(), v.Cols(), v.DType())
						}
						for _, per := range []int{1, 2, 5, count} {
							var all []byte
							batches := 0
							err := v.Batches(context.Background(), per, func(d *Dense) error {
								if d.Rows() > per || d.Cols() != cols || d.DType() != dt {
									t.Fatalf("batch %d×%d %v (per %d)", d.Rows(), d.Cols(), d.DType(), per)
								}
								all = append(all, d.bytes()...)
								batches++
								return nil
							})
							if err != nil {
								t.Fatal(err)
							}
							if !bytes.Equal(all, denseBytes(t, want)) || batches != (count+per-1)/per {
								t.Fatalf("%v %d×%d span %d: batches of %d of shard %d/%d differ (%d batches)", dt, rows, cols, span, per, i, n, batches)
							}
						}
						d, err := v.Dense()
						if err != nil || !bytes.Equal(d.bytes(), denseBytes(t, want)) {
							t.Fatalf("StridedFile.Dense: %v", err)
						}
						row := make([]float64, cols)
						wantRow := make([]float64, cols)
						v.RowFloat64(count-1, row)
						want.RowFloat64(count-1, wantRow)
						for j := range row {
							if row[j] != wantRow[j] && !(row[j] != row[j] && wantRow[j] != wantRow[j]) {
								t.Fatalf("RowFloat64 %v, want %v", row, wantRow)
							}
						}
					}
				}
			}
		}
	}
}

// Only read-only storage takes a backing file, and rows outside the matrix
// are refused as StridedRows refuses them; a file shorter than the matrix
// is an error, not rows of zeros.
func TestReadStridedRowsRefusals(t *testing.T) {
	m, _ := NewDense32(4, 2, make([]float32, 8))
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if m.SetFileRows(f, 0).HasFileRows() {
		t.Error("a writable matrix took a backing file")
	}
	if _, ok := NewStridedFile(m, 0, 2, 2); ok {
		t.Error("NewStridedFile accepted a matrix without a backing file")
	}
	mem, mapped := fileBacked(t, Float32, 5, 2, 1)
	if _, err := ReadStridedRows(mapped, 1, 2, 3); err == nil {
		t.Error("rows 1, 3, 5 of 5 were read")
	}
	if _, ok := NewStridedFile(mapped, 1, 2, 3); ok {
		t.Error("NewStridedFile accepted rows outside the matrix")
	}
	if mapped.RowSlice(0, 2).HasFileRows() {
		t.Error("a row slice kept its parent's file")
	}
	short := newDenseOf(Float32, 5, 2)
	copy(short.bytes(), mem.bytes())
	short.ReadOnly().SetFileRows(f, 0) // /dev/null: no bytes
	if _, err := ReadStridedRows(short, 0, 2, 3); err == nil || !strings.Contains(err.Error(), "unexpected EOF") || !strings.Contains(err.Error(), os.DevNull+": reading rows at byte 0") {
		t.Errorf("short file: err = %v", err)
	}
}

// The rows do come from the file (a matrix whose memory differs from its
// file — which never happens for a real mapping — shows which was read).
func TestReadStridedRowsReadsTheFile(t *testing.T) {
	mem, mapped := fileBacked(t, Float64, 9, 3, 2)
	clear(mapped.bytes())
	got, err := ReadStridedRows(mapped, 1, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := StridedRows(mem, 1, 3, 3)
	if !bytes.Equal(denseBytes(t, got), denseBytes(t, want)) {
		t.Fatal("ReadStridedRows did not read the backing file")
	}
}
