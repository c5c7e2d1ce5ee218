package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// relaxGC raises the collector's target for an evaluation and restores
// the previous one; a GOGC chosen by the user is left alone.
func TestRelaxGC(t *testing.T) {
	t.Setenv("GOGC", "") // t.Setenv restores the variable; unset it below
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Run("default", func(t *testing.T) {
		if err := os.Unsetenv("GOGC"); err != nil { // t.Setenv above restores it
			t.Fatal(err)
		}
		restore := relaxGC()
		if got := debug.SetGCPercent(evalGCPercent); got != evalGCPercent {
			t.Fatalf("during the evaluation GC percent = %d, want %d", got, evalGCPercent)
		}
		restore()
		if got := debug.SetGCPercent(100); got != 100 {
			t.Fatalf("after restore GC percent = %d, want 100", got)
		}
	})
	t.Run("user GOGC", func(t *testing.T) {
		t.Setenv("GOGC", "50")
		debug.SetGCPercent(50)
		restore := relaxGC()
		if got := debug.SetGCPercent(50); got != 50 {
			t.Fatalf("with GOGC=50 GC percent = %d, want 50", got)
		}
		restore()
	})
}
