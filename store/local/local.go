package local

import (
	"context"
	"errors"
	"fmt"
	"github.com/vertebrae-eval/vertebrae/internal/stale"
	"github.com/vertebrae-eval/vertebrae/internal/syncfile"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vertebrae-eval/vertebrae/store"
)

// TempPrefix starts the name of every temporary file; object names may not
// have a component starting with it.
const TempPrefix = ".vertebrae-tmp-"

// copyBufSize is the streaming buffer: large enough that a Put of a big
// endpoint runs at disk speed rather than syscall speed (measured by
// BenchmarkLocalPutGet against cp).
const copyBufSize = 1 << 20

// fileChunk bounds one kernel-side file-to-file copy so a cancelled context
// is noticed within one chunk.
const fileChunk = 64 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// The durability steps, as variables so a test can watch their order.
var (
	fsyncFile = (*os.File).Sync
	fsyncDir  = syncDir
	rename    = os.Rename
)

// Store is a local-disk store rooted at one directory. It is safe for
// concurrent use by any number of goroutines and processes.
type Store struct {
	root string
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.LateNamer = (*Store)(nil)
)

// Open returns the store rooted at dir (made absolute, so a later change of
// working directory does not move it). The directory is created by the
// first Put, not here, so opening a store only to read never leaves an
// empty directory behind; an existing non-directory at dir is an error.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("local store: empty path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("local store %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("local store %s: not a directory", abs)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("local store: %w", err)
	}
	return &Store{root: abs}, nil
}

// Root returns the store's absolute root directory.
func (s *Store) Root() string { return s.root }

// path validates name and maps it to its file.
func (s *Store) path(name string) (string, error) {
	if err := store.ValidateName(name); err != nil {
		return "", fmt.Errorf("local store %s: %w", s.root, err)
	}
	for c := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(c, TempPrefix) {
			return "", fmt.Errorf("local store %s: %w", s.root,
				&store.InvalidNameError{Name: name, Reason: "component starts with " + TempPrefix + " (reserved for temporary files)"})
		}
	}
	return filepath.Join(s.root, filepath.FromSlash(name)), nil
}

// renameWhileOpen: POSIX renames an open file; Windows does not (there the
// stale package relies on age, not locks).
const renameWhileOpen = runtime.GOOS != "windows"

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	return s.put(ctx, filepath.Dir(p), name, r, size, func() (string, string, error) { return p, name, nil })
}

// PutNamed implements store.LateNamer: the bytes go to a temporary file in
// the prefix's directory, which is renamed to the object once name gives
// it, so a crash leaves only the locked temporary file.
func (s *Store) PutNamed(ctx context.Context, prefix string, r io.Reader, size int64, name func() (string, error)) error {
	dirPath, err := s.path(prefix)
	if err != nil {
		return err
	}
	return s.put(ctx, dirPath, prefix+"/…", r, size, func() (string, string, error) {
		base, err := name()
		if err != nil {
			return "", "", err
		}
		full := prefix + "/" + base
		if base == "" || strings.Contains(base, "/") {
			return "", "", fmt.Errorf("local store: put %s: the name must be one component", full)
		}
		p, err := s.path(full)
		return p, full, err
	})
}

// put writes r to a locked temporary file in dir (made if missing) and
// renames it to the file final names (its path and object name) once
// every byte is on disk; logName names the object in errors until then.
func (s *Store) put(ctx context.Context, dir, logName string, r io.Reader, size int64, final func() (path, name string, err error)) (err error) {
	name := logName
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("local store: put %s: %w", name, err)
	}
	if err := s.mkdirAll(dir, name); err != nil {
		return err
	}
	f, err := stale.CreateFile(dir, TempPrefix+"*") // locked while this Put lives
	if err != nil {
		return fmt.Errorf("local store: put %s: %w", name, err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	n, err := copyCtx(ctx, f, r, size)
	if err != nil {
		return fmt.Errorf("local store: put %s: %w", name, err)
	}
	if size >= 0 && n != size {
		if n > size {
			return fmt.Errorf("local store: put %s: reader has more than the %d bytes announced", name, size)
		}
		return fmt.Errorf("local store: put %s: read %d bytes, expected %d", name, n, size)
	}
	// Objects are data for everyone who can read the store's directory.
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("local store: put %s: %w", name, err)
	}
	// The data goes back in chunks first, so an interrupt is not held up
	// by one fsync of a large object.
	if err := syncfile.Flush(ctx, f); err != nil {
		return fmt.Errorf("local store: put %s: %w", name, err)
	}
	if err := fsyncFile(f); err != nil {
		return fmt.Errorf("local store: put %s: fsync: %w", name, err)
	}
	if !renameWhileOpen {
		closed = true
		if err := f.Close(); err != nil {
			return fmt.Errorf("local store: put %s: %w", name, err)
		}
	}
	// The last point where a cancellation still leaves the old object.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("local store: put %s: %w", name, err)
	}
	p, name, err := final()
	if err != nil {
		return err
	}
	if err := rename(tmp, p); err != nil {
		if fi, serr := os.Stat(p); serr == nil && fi.IsDir() {
			return fmt.Errorf("local store: put %s: objects exist below this name (a name cannot also be a prefix directory)", name)
		}
		return fmt.Errorf("local store: put %s: %w", name, err)
	}
	if renameWhileOpen {
		// Closed only now, so the temporary file stays locked until it is
		// renamed: another process's stale.Remove never sees it unlocked.
		// Its data is synced; a close error cannot lose it.
		closed = true
		_ = f.Close()
	}
	if err := fsyncDir(dir); err != nil {
		return fmt.Errorf("local store: put %s: fsync directory: %w", name, err)
	}
	// A re-run after a kill cleans up: temporary files in this directory
	// that are older than this process and whose Put is dead go.
	if _, err := stale.Remove(dir, TempPrefix); err != nil {
		return fmt.Errorf("local store: put %s: remove stale temporary files: %w", name, err)
	}
	return nil
}

// mkdirAll creates dir and its missing parents, fsyncing each new entry into
// its parent so the object's path survives a crash along with the object.
func (s *Store) mkdirAll(dir, name string) error {
	var missing []string
	d := dir
	for {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("local store: put %s: %s is an object, not a directory (a name cannot also be a prefix directory)", name, d)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			if errors.Is(err, syscall.ENOTDIR) {
				return fmt.Errorf("local store: put %s: a prefix of the name is an object, not a directory", name)
			}
			return fmt.Errorf("local store: put %s: %w", name, err)
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	for i := len(missing) - 1; i >= 0; i-- {
		m := missing[i]
		if err := os.Mkdir(m, 0o755); err != nil {
			if !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("local store: put %s: %w", name, err)
			}
			// A concurrent writer made it first, or it is a file.
			if fi, serr := os.Stat(m); serr != nil || !fi.IsDir() {
				return fmt.Errorf("local store: put %s: %s is an object, not a directory (a name cannot also be a prefix directory)", name, m)
			}
			continue
		}
		if err := fsyncDir(filepath.Dir(m)); err != nil {
			return fmt.Errorf("local store: put %s: fsync directory: %w", name, err)
		}
	}
	return nil
}

// copyCtx copies src to dst, checking ctx between chunks, and reads at most
// size+1 bytes when size >= 0 (so an over-long reader is detected without
// draining it). A regular-file source goes through (*os.File).ReadFrom,
// which lets the kernel copy (copy_file_range); anything else through one
// pooled 1 MiB buffer.
func copyCtx(ctx context.Context, dst *os.File, src io.Reader, size int64) (int64, error) {
	remaining := int64(-1)
	if size >= 0 {
		remaining = size + 1
	}
	var n int64
	if sf, ok := src.(*os.File); ok {
		for remaining != 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			want := int64(fileChunk)
			if remaining > 0 && remaining < want {
				want = remaining
			}
			m, err := dst.ReadFrom(io.LimitReader(sf, want))
			n += m
			if remaining > 0 {
				remaining -= m
			}
			if err != nil {
				return n, err
			}
			if m < want {
				break // EOF
			}
		}
		return n, ctx.Err()
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for remaining != 0 {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		b := buf
		if remaining > 0 && remaining < int64(len(b)) {
			b = b[:remaining]
		}
		m, rerr := src.Read(b)
		if m > 0 {
			if _, werr := dst.Write(b[:m]); werr != nil {
				return n, werr
			}
			n += int64(m)
			if remaining > 0 {
				remaining -= int64(m)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return n, rerr
		}
	}
	return n, ctx.Err()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// notExist maps a missing file (or a path through a file) to ErrNotExist.
func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// Get implements store.Store. The returned *os.File lets io.Copy into
// another file or socket use the kernel's copy paths.
func (s *Store) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	return s.open(ctx, name)
}

// open opens a regular file of the store for reading.
func (s *Store) open(ctx context.Context, name string) (*os.File, error) {
	p, err := s.path(name)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("local store: get %s: %w", name, err)
	}
	f, err := os.Open(p)
	if err != nil {
		if notExist(err) {
			return nil, fmt.Errorf("local store: %s: %w", name, store.ErrNotExist)
		}
		return nil, fmt.Errorf("local store: get %s: %w", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("local store: get %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("local store: %s: %w", name, store.ErrNotExist)
	}
	return f, nil
}

// GetRange implements store.Store: the reader preads (ReadAt) the bytes
// [off, off+n) of the file, clamped at its end, so a range at or past the
// end reads as empty; Close closes the file. A negative off or n is an
// error.
func (s *Store) GetRange(ctx context.Context, name string, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("local store: get %s: invalid range: offset %d, length %d (both must be ≥ 0)", name, off, n)
	}
	f, err := s.open(ctx, name)
	if err != nil {
		return nil, err
	}
	// NewSectionReader clamps an off+n that overflows int64.
	return &rangeReader{SectionReader: io.NewSectionReader(f, off, n), f: f}, nil
}

// rangeReader is GetRange's reader: a section of the file, closing it.
type rangeReader struct {
	*io.SectionReader
	f *os.File
}

func (r *rangeReader) Close() error { return r.f.Close() }

// Stat implements store.Store.
func (s *Store) Stat(ctx context.Context, name string) (int64, error) {
	p, err := s.path(name)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("local store: stat %s: %w", name, err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		if notExist(err) {
			return 0, fmt.Errorf("local store: %s: %w", name, store.ErrNotExist)
		}
		return 0, fmt.Errorf("local store: stat %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("local store: %s: %w", name, store.ErrNotExist)
	}
	return fi.Size(), nil
}

// List implements store.Store. It walks only the directory named by the
// prefix up to its last '/', and visits entries in the order of their
// names with a '/' appended to directories, which is exactly lexicographic
// order of the full object names ("a-c" < "a/b" because '-' < '/').
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		dirPart := ""
		if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
			dirPart = prefix[:i]
		}
		if dirPart != "" {
			if err := store.ValidateName(dirPart); err != nil {
				yield("", fmt.Errorf("local store %s: list prefix %q: %w", s.root, prefix, err))
				return
			}
		}
		if strings.ContainsRune(prefix, '\\') || strings.ContainsFunc(prefix, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			yield("", fmt.Errorf("local store %s: list prefix %q: %w", s.root, prefix,
				&store.InvalidNameError{Name: prefix, Reason: `contains '\' or a control character`}))
			return
		}
		start, namePrefix := s.root, ""
		if dirPart != "" {
			start = filepath.Join(s.root, filepath.FromSlash(dirPart))
			namePrefix = dirPart + "/"
		}
		s.walk(ctx, start, namePrefix, prefix, yield)
	}
}

type entry struct {
	key   string // name relative to the walked directory, '/' appended for directories
	isDir bool
}

// walk yields the objects below dir (whose names start with namePrefix)
// that match prefix; it returns false once the consumer stopped or an error
// was yielded.
func (s *Store) walk(ctx context.Context, dir, namePrefix, prefix string, yield func(string, error) bool) bool {
	if err := ctx.Err(); err != nil {
		yield("", fmt.Errorf("local store: list: %w", err))
		return false
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		if notExist(err) {
			return true
		}
		yield("", fmt.Errorf("local store: list: %w", err))
		return false
	}
	ents := make([]entry, 0, len(des))
	for _, de := range des {
		n := de.Name()
		if strings.HasPrefix(n, TempPrefix) {
			continue
		}
		switch {
		case de.IsDir():
			ents = append(ents, entry{n + "/", true})
		case de.Type().IsRegular():
			ents = append(ents, entry{n, false})
		}
	}
	slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	for _, e := range ents {
		full := namePrefix + e.key
		if e.isDir {
			// Descend only where a match can live.
			if !strings.HasPrefix(full, prefix) && !strings.HasPrefix(prefix, full) {
				continue
			}
			if !s.walk(ctx, filepath.Join(dir, strings.TrimSuffix(e.key, "/")), full, prefix, yield) {
				return false
			}
			continue
		}
		if strings.HasPrefix(full, prefix) && !yield(full, nil) {
			return false
		}
	}
	return true
}

// Delete implements store.Store. A deletion is not fsynced: losing one in a
// crash leaves an unreferenced file, never a damaged object. Emptied
// directories are left in place (removing them would race with a
// concurrent Put creating a file there).
func (s *Store) Delete(ctx context.Context, name string) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("local store: delete %s: %w", name, err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		if notExist(err) {
			return nil
		}
		return fmt.Errorf("local store: delete %s: %w", name, err)
	}
	if fi.IsDir() {
		return nil // not an object
	}
	if err := os.Remove(p); err != nil && !notExist(err) {
		return fmt.Errorf("local store: delete %s: %w", name, err)
	}
	return nil
}

// RemoveStaleTemp deletes, anywhere in the store, the temporary files that
// Puts killed mid-write left behind: those older than minAge whose writer
// is dead (a live Put holds its file's lock). Every Put already does this
// for its own directory; this sweeps the whole store. It returns how many
// it removed.
func (s *Store) RemoveStaleTemp(ctx context.Context, minAge time.Duration) (int, error) {
	cutoff := time.Now().Add(-minAge)
	removed := 0
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == s.root && notExist(err) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), TempPrefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if notExist(err) {
				return nil // its Put just finished or failed
			}
			return err
		}
		if fi.ModTime().After(cutoff) {
			return nil
		}
		ok, err := stale.RemoveUnlocked(p)
		if err != nil {
			return err
		}
		if ok {
			removed++
		}
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("local store %s: remove stale temporary files: %w", s.root, err)
	}
	return removed, nil
}

// Close implements store.Store; a local store holds no resources.
func (s *Store) Close() error { return nil }
