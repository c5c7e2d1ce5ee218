package artifact

import (
	"context"
	"iter"
	"strings"
)

// Keys yields, in lexicographic order, every committed key (one with a
// manifest) at or below prefix ("" = the whole store). It reads no
// manifest: listing thousands of runs costs one List.
func (s *Store) Keys(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if prefix != "" {
			if err := ValidateKey(prefix); err != nil {
				yield("", err)
				return
			}
		}
		var last string
		for name, err := range s.st.List(ctx, prefix) {
			if err != nil {
				yield("", err)
				return
			}
			key, ok := strings.CutSuffix(name, "/"+ManifestName)
			if !ok || key == last {
				continue
			}
			// prefix "a/b" must not list "a/bc".
			if prefix != "" && key != prefix && !strings.HasPrefix(key, prefix+"/") {
				continue
			}
			last = key
			if !yield(key, nil) {
				return
			}
		}
	}
}
