package faulty_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/vertebrae-eval/vertebrae/store/faulty"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// A writer killed between its data files and its manifest: the data file
// lands, the manifest does not, and the writer's clean-up never reaches the
// store. The previous manifest is what a reader finds.
func Example() {
	ctx := context.Background()
	inner := mem.New()
	inner.Put(ctx, "k/manifest.json", strings.NewReader("generation 1"), -1)

	s := faulty.New(inner, faulty.FailPut(faulty.Named("manifest.json")).Crashing())
	fmt.Println(s.Put(ctx, "k/array-2.npy", strings.NewReader("data 2"), -1))
	err := s.Put(ctx, "k/manifest.json", strings.NewReader("generation 2"), -1)
	fmt.Println(errors.Is(err, faulty.ErrInjected))
	err = s.Delete(ctx, "k/array-2.npy") // clean-up after the failure
	fmt.Println(errors.Is(err, faulty.ErrCrashed))

	rc, _ := inner.Get(ctx, "k/manifest.json")
	b, _ := io.ReadAll(rc)
	fmt.Println(string(b))
	for name := range inner.List(ctx, "k/") {
		fmt.Println(name)
	}
	// Output:
	// <nil>
	// true
	// true
	// generation 1
	// k/array-2.npy
	// k/manifest.json
}
