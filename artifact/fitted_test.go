package artifact

import (
	"bytes"
	"errors"
	"testing"

	"github.com/vertebrae-eval/vertebrae/store/mem"
)

func TestFittedStateRoundTripAndChecks(t *testing.T) {
	s := New(mem.New())
	state := []byte{0, 1, 2, 250}
	key, err := s.WriteFittedState(ctx, "ds", "rh", state)
	if err != nil || key != FittedKey("ds", "rh") {
		t.Fatal(key, err)
	}
	got, err := s.ReadFittedState(ctx, key, "ds", "rh")
	if err != nil || !bytes.Equal(got, state) {
		t.Fatal(got, err)
	}
	if _, err := s.ReadFittedState(ctx, key, "ds", "other"); !errors.Is(err, ErrCheck) {
		t.Errorf("foreign recipe: %v", err)
	}
	if _, err := s.ReadFittedState(ctx, FittedKey("ds", "none"), "ds", "none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
}
