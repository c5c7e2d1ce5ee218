package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
)

// ErrNotExist reports a missing object; test with errors.Is.
var ErrNotExist = errors.New("object does not exist")

// Store is an object store. Put is atomic per object: a reader sees either
// the previous content or the complete new content, never a mix, and a
// failed or cancelled Put leaves the previous content intact. Objects are
// streamed both ways so an endpoint never has to fit in memory.
type Store interface {
	// Put writes the object name with exactly size bytes read from r
	// (size < 0: unknown, read to EOF).
	Put(ctx context.Context, name string, r io.Reader, size int64) error
	// Get opens the object for reading; a missing object gives an error
	// that matches ErrNotExist.
	Get(ctx context.Context, name string) (io.ReadCloser, error)
	// GetRange opens n bytes of the object starting at byte off (off ≥ 0,
	// n ≥ 0): a pread on local disk, a range GET on object stores, so a
	// reader verifies one chunk of a large file without fetching the rest.
	// The reader yields fewer than n bytes only when the object ends
	// first; a missing object matches ErrNotExist.
	GetRange(ctx context.Context, name string, off, n int64) (io.ReadCloser, error)
	// Stat returns the object's size in bytes (ErrNotExist when missing).
	Stat(ctx context.Context, name string) (int64, error)
	// List yields the names of every object whose name starts with
	// prefix, in lexicographic order.
	List(ctx context.Context, prefix string) iter.Seq2[string, error]
	// Delete removes the object; deleting a missing object is not an
	// error.
	Delete(ctx context.Context, name string) error
	// Close releases the store's resources.
	Close() error
}

// UnsupportedURIError is returned by Open for a URI no backend handles
// (SPEC §10.5: "Unsupported artifact store URI").
type UnsupportedURIError struct{ URI string }

func (e *UnsupportedURIError) Error() string {
	return fmt.Sprintf("Unsupported artifact store URI %q (use a path, file://, s3://, gs:// or mem://)", e.URI)
}

// LateNamer is implemented by stores that can name an object after its
// bytes are written (local disk and memory by a rename, object stores by a
// server-side copy of a temporary object). The artifact layer then streams
// a data file once, hashing it on the way, and names it by its digest;
// stores without it get the data twice (a hashing pass, then the upload).
type LateNamer interface {
	// PutNamed writes the object prefix + "/" + name() with exactly size
	// bytes read from r (size < 0: to EOF), calling name once, after the
	// last byte was read; name returns one name component (no '/'). It is
	// atomic like Put, replaces an object of that name, and leaves nothing
	// when it fails; a process killed during it leaves at most a temporary
	// entry that a later Put or PutNamed under the same prefix removes.
	PutNamed(ctx context.Context, prefix string, r io.Reader, size int64, name func() (string, error)) error
}
