package stats

import (
	"fmt"
	"testing"
)

// A Source gives exactly the values of the *rand.Rand of Stream with the
// same seed and labels, over many epochs (seed chaining included), with
// the CPU's epochs and with the rand.ChaCha8 fallback.
func TestSourceEqualsStream(t *testing.T) {
	for k := range 20 {
		seed, label := uint64(k*7919), fmt.Sprint("label-", k)
		for _, fallback := range []bool{false, true} {
			if !fallback && epochFunc == nil {
				continue
			}
			ref := Stream(seed, "source", label)
			s := newSource(streamKey(seed, "source", label), fallback)
			for i := range 5000 {
				if got, want := s.Uint64(), ref.Uint64(); got != want {
					t.Fatalf("key %d fallback %v, value %d: %#x, want %#x", k, fallback, i, got, want)
				}
			}
		}
	}
	if epochFunc == nil {
		t.Log("no AVX-512: only the fallback was checked")
	}
}

// The Source forms of the bootstrap and the sign-flip test give exactly the
// results of the *rand.Rand forms: exact sums and float64 sums (values
// spanning too many binary orders), odd and even n (a resample ending on
// either half of a value), both interval methods, both source kinds.
func TestSourceStatisticsEqualStream(t *testing.T) {
	r := Stream(6, "data")
	for _, n := range []int{2, 3, 31, 64, 125, 1000} {
		for _, kind := range []string{"metric", "wide"} {
			x := make([]float64, n)
			for i := range x {
				x[i] = float64(uniformIndex(r, 11)) / 10
				if kind == "wide" && i%3 == 0 {
					x[i] = 1e-200 * float64(1+uniformIndex(r, 5))
				}
			}
			for _, fallback := range []bool{false, true} {
				if !fallback && epochFunc == nil {
					continue
				}
				name := fmt.Sprintf("n=%d/%s/fallback=%v", n, kind, fallback)
				for _, m := range []CIMethod{BCa, Percentile} {
					want, err := BootstrapMeanContext(t.Context(), x, 0.95, 777, m, Stream(1, "b", name))
					if err != nil {
						t.Fatal(err)
					}
					got, err := BootstrapMeanSource(t.Context(), x, 0.95, 777, m, newSource(streamKey(1, "b", name), fallback))
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Fatalf("%s %v: interval %v, want %v", name, m, got, want)
					}
				}
				want, err := SignFlipTestContext(t.Context(), x, 999, Stream(2, "p", name))
				if err != nil {
					t.Fatal(err)
				}
				got, err := SignFlipTestSource(t.Context(), x, 999, newSource(streamKey(2, "p", name), fallback))
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("%s: sign flip %+v, want %+v", name, got, want)
				}
			}
		}
	}
}
