package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/store/local"
)

const key = "bench/endpoint"

// generated is a deterministic endpoint produced in 4 MiB batches.
type generated struct{ rows, cols int }

func (g generated) Rows() int           { return g.rows }
func (g generated) Cols() int           { return g.cols }
func (g generated) DType() matrix.DType { return matrix.Float32 }
func (g generated) Sparse() bool        { return false }

func (g generated) Batches(ctx context.Context, yield func(matrix.Matrix) error) error {
	per := max(1, artifact.DefaultBatchBytes/(4*g.cols))
	buf := make([]float32, per*g.cols)
	for lo := 0; lo < g.rows; lo += per {
		n := min(per, g.rows-lo)
		v := buf[:n*g.cols]
		for i := range v {
			v[i] = float32((lo*g.cols+i)%1000) / 1000
		}
		m, err := matrix.NewDense32(n, g.cols, v)
		if err != nil {
			return err
		}
		if err := yield(m); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "artifacts:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: artifacts write|read STORE_DIR [rows cols]")
	}
	rows, cols := 200_000, 768
	if len(args) == 4 {
		rows, _ = strconv.Atoi(args[2])
		cols, _ = strconv.Atoi(args[3])
	}
	st, err := local.Open(args[1])
	if err != nil {
		return err
	}
	s := artifact.New(st)
	ctx := context.Background()
	t0 := time.Now()
	var bytes int64
	switch args[0] {
	case "write":
		if err := s.WriteArray(ctx, key, generated{rows, cols}, map[string]any{"artifact_type": "bench"}); err != nil {
			return err
		}
		m, err := s.Manifest(ctx, key)
		if err != nil {
			return err
		}
		bytes = m.Array.SizeBytes
		fmt.Printf("file %s/%s/%s\n", args[1], key, m.Array.Filename)
	case "read":
		m, err := s.Manifest(ctx, key)
		if err != nil {
			return err
		}
		bytes = m.Array.SizeBytes
		rowsSeen := 0
		if _, err := s.StreamArray(ctx, key, func(b matrix.Matrix) error { rowsSeen += b.Rows(); return nil }); err != nil {
			return err
		}
		if rowsSeen != m.Array.Shape[0] {
			return fmt.Errorf("read %d rows of %d", rowsSeen, m.Array.Shape[0])
		}
	default:
		return fmt.Errorf("unknown mode %q", args[0])
	}
	sec := time.Since(t0).Seconds()
	fmt.Printf("%s %d bytes in %.3f s: %.0f MB/s\n", args[0], bytes, sec, float64(bytes)/sec/1e6)
	return nil
}
