package mem

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"sort"
	"strings"
	"sync"

	"github.com/vertebrae-eval/vertebrae/store"
)

// Store keeps objects in memory. It is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	objects map[string][]byte
}

// New returns an empty store.
func New() *Store { return &Store{objects: map[string][]byte{}} }

var (
	_ store.Store     = (*Store)(nil)
	_ store.LateNamer = (*Store)(nil)
)

// Put implements store.Store; the object becomes visible only once it has
// been read completely.
func (s *Store) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size))
	}
	n, err := io.Copy(&buf, r)
	if err != nil {
		return fmt.Errorf("mem store: put %s: %w", name, err)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("mem store: put %s: read %d bytes, expected %d", name, n, size)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.objects[name] = buf.Bytes()
	s.mu.Unlock()
	return nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	s.mu.RLock()
	b, ok := s.objects[name]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("mem store: %s: %w", name, store.ErrNotExist)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// GetRange implements store.Store: the bytes [off, off+n) of the object,
// clamped at its end (a range at or past the end reads as empty). A
// negative off or n is an error.
func (s *Store) GetRange(ctx context.Context, name string, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("mem store: get %s: invalid range: offset %d, length %d (both must be ≥ 0)", name, off, n)
	}
	s.mu.RLock()
	b, ok := s.objects[name]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("mem store: %s: %w", name, store.ErrNotExist)
	}
	size := int64(len(b))
	start := min(off, size)
	end := size
	if n < size-start {
		end = start + n
	}
	// Objects are replaced, never modified, so the slice stays valid.
	return io.NopCloser(bytes.NewReader(b[start:end])), nil
}

// Stat implements store.Store.
func (s *Store) Stat(ctx context.Context, name string) (int64, error) {
	s.mu.RLock()
	b, ok := s.objects[name]
	s.mu.RUnlock()
	if !ok {
		return 0, fmt.Errorf("mem store: %s: %w", name, store.ErrNotExist)
	}
	return int64(len(b)), nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		s.mu.RLock()
		var names []string
		for n := range s.objects {
			if strings.HasPrefix(n, prefix) {
				names = append(names, n)
			}
		}
		s.mu.RUnlock()
		sort.Strings(names)
		for _, n := range names {
			if !yield(n, nil) {
				return
			}
		}
	}
}

// PutNamed implements store.LateNamer.
func (s *Store) PutNamed(ctx context.Context, prefix string, r io.Reader, size int64, name func() (string, error)) error {
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size))
	}
	n, err := io.Copy(&buf, r)
	if err != nil {
		return fmt.Errorf("mem store: put %s/…: %w", prefix, err)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("mem store: put %s/…: read %d bytes, expected %d", prefix, n, size)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	base, err := name()
	if err != nil {
		return fmt.Errorf("mem store: put %s/…: %w", prefix, err)
	}
	if base == "" || strings.Contains(base, "/") {
		return fmt.Errorf("mem store: put %s/%s: the name must be one component", prefix, base)
	}
	s.mu.Lock()
	s.objects[prefix+"/"+base] = buf.Bytes()
	s.mu.Unlock()
	return nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, name string) error {
	s.mu.Lock()
	delete(s.objects, name)
	s.mu.Unlock()
	return nil
}

// Close implements store.Store.
func (s *Store) Close() error { return nil }
