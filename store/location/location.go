package location

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/blobstore"
	"github.com/vertebrae-eval/vertebrae/store/local"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// DefaultURI is the store used when neither --store nor the run file names
// one: a directory in the working directory.
const DefaultURI = ".vertebrae_cache"

var (
	memMu     sync.Mutex
	memStores = map[string]*mem.Store{}
)

// Open opens the store named by uri. Opening does no network I/O.
func Open(ctx context.Context, uri string) (store.Store, error) {
	if uri == "" {
		return nil, fmt.Errorf("empty artifact store URI (the default is %s)", DefaultURI)
	}
	scheme, ok := schemeOf(uri)
	if !ok {
		// A plain path, relative or absolute.
		return openLocal(uri)
	}
	switch scheme {
	case "file":
		p, err := filePath(uri)
		if err != nil {
			return nil, err
		}
		return openLocal(p)
	case "mem":
		name := strings.TrimPrefix(uri[len(scheme)+1:], "//")
		return sharedMem(name), nil
	case "s3", "gs":
		return blobstore.Open(ctx, uri)
	}
	return nil, &store.UnsupportedURIError{URI: redact(uri)}
}

// schemeOf returns the URI scheme when uri has the form scheme://...;
// anything without "://" is a path (so "C:" or "a:b" are not schemes).
func schemeOf(uri string) (string, bool) {
	i := strings.Index(uri, "://")
	if i <= 0 {
		return "", false
	}
	s := uri[:i]
	for j, r := range s {
		letter := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
		if !letter && (j == 0 || !('0' <= r && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// filePath maps file:///abs/path and file://localhost/abs/path to a path.
// file://rel/path is refused rather than guessed: the "rel" would be a
// host name.
func filePath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("artifact store URI %q: %w", redact(uri), err)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("artifact store URI %q: file:// URIs take an absolute path (file:///abs/dir); for a relative directory give the plain path", redact(uri))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("artifact store URI %q: file:// URIs take no query or fragment", redact(uri))
	}
	if u.Path == "" {
		return "", fmt.Errorf("artifact store URI %q: no path", redact(uri))
	}
	return filepath.FromSlash(u.Path), nil
}

func openLocal(p string) (store.Store, error) {
	s, err := local.Open(p)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// sharedMem returns the process-wide store for mem://name; Close on it is a
// no-op, so later Opens still see its objects.
func sharedMem(name string) *mem.Store {
	memMu.Lock()
	defer memMu.Unlock()
	s, ok := memStores[name]
	if !ok {
		s = mem.New()
		memStores[name] = s
	}
	return s
}

// redact hides user information (user:password@) in a URI that is about
// to be quoted in an error.
func redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		if strings.Contains(uri, "@") {
			return "(unparsable URI containing '@', not shown)"
		}
		return uri
	}
	if u.User == nil {
		return uri
	}
	u.User = url.User("redacted")
	return u.String()
}
