package mem_test

import (
	"testing"

	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/mem"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return mem.New() })
}
