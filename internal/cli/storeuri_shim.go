package cli

// Temporary store dispatcher until store/location lands from the store
// branch; delete this file on that merge.

import (
	"context"
	"strings"
	"sync"

	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/local"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

var (
	memMu     sync.Mutex
	memStores = map[string]*mem.Store{}
)

type nopClose struct{ store.Store }

func (nopClose) Close() error { return nil }

func openStoreURI(_ context.Context, uri string) (store.Store, error) {
	switch {
	case strings.HasPrefix(uri, "mem://"):
		memMu.Lock()
		defer memMu.Unlock()
		s, ok := memStores[uri]
		if !ok {
			s = mem.New()
			memStores[uri] = s
		}
		return nopClose{s}, nil
	case strings.HasPrefix(uri, "file://"):
		return local.Open(strings.TrimPrefix(uri, "file://"))
	case strings.Contains(uri, "://"):
		return nil, &store.UnsupportedURIError{URI: uri}
	}
	return local.Open(uri)
}
