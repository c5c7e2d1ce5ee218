package compress

import (
	"context"
	"errors"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
)

// Quantisation and prefix truncation are charged the outputs they hold
// before allocating them: refused with a BudgetError just below, applied
// at the figure (10 + 20 rows × 8 columns).
func TestOutputMethodsCheckTheBudget(t *testing.T) {
	t.Parallel()
	dense := func(rows int) matrix.Matrix {
		data := make([]float32, rows*8)
		for i := range data {
			data[i] = float32(i%13) - 6
		}
		m, err := matrix.NewDense32(rows, 8, data)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	q, g := dense(10), dense(20)
	k := 3
	prec := PrecisionInt8
	for _, c := range []struct {
		name string
		cfg  Config
		need int64
	}{
		{"quantize int8", Config{Method: MethodQuantize, Precision: &prec}, 30 * 8 * 4},
		{"prefix", Config{Method: MethodPrefixTruncate, NComponents: &k}, 30 * 3 * (8 + 4)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Apply(memory.WithLimit(context.Background(), c.need-1), c.cfg, q, g)
			var be *memory.BudgetError
			if !errors.As(err, &be) || be.Required != c.need {
				t.Fatalf("budget %d: err %v, want a BudgetError requiring %d", c.need-1, err, c.need)
			}
			if _, err := Apply(memory.WithLimit(context.Background(), c.need), c.cfg, q, g); err != nil {
				t.Fatalf("budget %d: %v", c.need, err)
			}
		})
	}
}
