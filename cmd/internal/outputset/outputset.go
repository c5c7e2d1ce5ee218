package outputset

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vertebrae-eval/vertebrae/internal/syncfile"
)

// Fill writes one output's content. It may stream: w is buffered.
type Fill func(w io.Writer) error

// TargetError is a bad output target found by Check (a usage error: the
// CLI exits 2).
type TargetError struct {
	Flag, Path string
	Msg        string
}

func (e *TargetError) Error() string {
	if e.Flag == "" {
		return e.Path + ": " + e.Msg
	}
	return e.Flag + " " + e.Path + ": " + e.Msg
}

type entry struct {
	flag, path string
	fill       Fill
	dir        bool // a directory that will hold other entries (checked only)
}

// Set is an output set. The zero value is ready to use.
type Set struct {
	inputs  []string
	entries []entry
}

// Input declares files the outputs must not overwrite. Empty paths and
// "-" are ignored.
func (s *Set) Input(paths ...string) {
	for _, p := range paths {
		if p != "" && p != "-" {
			s.inputs = append(s.inputs, p)
		}
	}
}

// Add registers the output path written by fill; flag names it in errors
// (e.g. "--json"). A nil fill registers the target for Check only.
func (s *Set) Add(flag, path string, fill Fill) {
	s.entries = append(s.entries, entry{flag: flag, path: path, fill: fill})
}

// AddBytes registers an output whose content is already rendered.
func (s *Set) AddBytes(flag, path string, data []byte) {
	s.Add(flag, path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// AddDir registers a directory target that will hold other outputs: it may
// exist as a directory or not at all, but may not be another kind of file.
func (s *Set) AddDir(flag, path string) {
	s.entries = append(s.entries, entry{flag: flag, path: path, dir: true})
}

// Len is the number of registered outputs.
func (s *Set) Len() int { return len(s.entries) }

// target is an entry's resolved destination.
type target struct {
	entry
	real string      // symlinks resolved
	info os.FileInfo // nil when the target does not exist
	key  string      // canonical path for the same-file check of new targets
}

func (s *Set) resolve() ([]target, error) {
	ts := make([]target, 0, len(s.entries))
	for _, e := range s.entries {
		if e.path == "" {
			return nil, &TargetError{Flag: e.flag, Msg: "empty path"}
		}
		real, err := resolveLinks(e.path)
		if err != nil {
			return nil, &TargetError{Flag: e.flag, Path: e.path, Msg: err.Error()}
		}
		t := target{entry: e, real: real}
		info, err := os.Stat(real)
		switch {
		case err == nil:
			t.info = info
		case errors.Is(err, fs.ErrNotExist):
			if bad := fileAncestor(real); bad != "" {
				return nil, &TargetError{Flag: e.flag, Path: e.path, Msg: bad + " is not a directory"}
			}
		case isNotDir(err):
			if bad := fileAncestor(real); bad != "" {
				return nil, &TargetError{Flag: e.flag, Path: e.path, Msg: bad + " is not a directory"}
			}
			return nil, &TargetError{Flag: e.flag, Path: e.path, Msg: "a parent is not a directory"}
		default:
			return nil, &TargetError{Flag: e.flag, Path: e.path, Msg: err.Error()}
		}
		t.key = canonical(real)
		ts = append(ts, t)
	}
	return ts, nil
}

// Check validates every target against the rules of SPEC §6.1 without
// writing anything. Errors are *TargetError.
func (s *Set) Check() error {
	_, err := s.check()
	return err
}

func (s *Set) check() ([]target, error) {
	ts, err := s.resolve()
	if err != nil {
		return nil, err
	}
	for i, t := range ts {
		// A directory target and any other target on one path (--plots P
		// --html P) would collide at commit time; refuse it up front.
		for _, u := range ts[:i] {
			if (t.dir || u.dir) && t.key == u.key {
				return nil, &TargetError{Flag: t.flag, Path: t.path, Msg: fmt.Sprintf("names the same path as %s %s", u.flag, u.path)}
			}
		}
		if t.dir {
			if t.info != nil && !t.info.IsDir() {
				return nil, &TargetError{Flag: t.flag, Path: t.path, Msg: "exists and is not a directory (several results are written as one file each into a directory)"}
			}
			continue
		}
		if t.info != nil && t.info.IsDir() {
			return nil, &TargetError{Flag: t.flag, Path: t.path, Msg: "is a directory; give a file path"}
		}
		for _, u := range ts[:i] {
			if u.dir {
				continue
			}
			if t.key == u.key || t.info != nil && u.info != nil && os.SameFile(t.info, u.info) {
				return nil, &TargetError{Flag: t.flag, Path: t.path, Msg: fmt.Sprintf("names the same file as %s %s", u.flag, u.path)}
			}
		}
	}
	for _, in := range s.inputs {
		ii, err := os.Stat(in)
		key := canonical(in)
		if real, rerr := resolveLinks(in); rerr == nil {
			key = canonical(real)
		}
		for _, t := range ts {
			if t.dir {
				continue
			}
			if err == nil && t.info != nil && os.SameFile(ii, t.info) || t.key == key {
				return nil, &TargetError{Flag: t.flag, Path: t.path, Msg: "would overwrite input " + in}
			}
		}
	}
	return ts, nil
}

// rename is os.Rename; tests replace it to inject a failed commit.
var rename = os.Rename

// Commit writes the whole set or nothing. Direct targets (devices, FIFOs)
// are written after every temporary file is complete and before the first
// rename, so a failing device write replaces no regular output. A rename
// failure restores the outputs already renamed from hard-link backups.
func (s *Set) Commit(ctx context.Context) (err error) {
	ts, err := s.check()
	if err != nil {
		return err
	}
	var created []string // directories made here, parents first
	var temps []string
	defer func() {
		if err == nil {
			return
		}
		for _, t := range temps {
			os.Remove(t)
		}
		for i := len(created) - 1; i >= 0; i-- {
			os.Remove(created[i]) // only empty ones go: never removes user data
		}
	}()
	type staged struct {
		target
		tmp string
	}
	var regular []staged
	var direct []target
	for _, t := range ts {
		switch {
		case t.dir:
			continue
		case t.info != nil && !t.info.Mode().IsRegular():
			direct = append(direct, t)
			continue
		}
		dir := filepath.Dir(t.real)
		mk, err := mkdirs(dir)
		created = append(created, mk...)
		if err != nil {
			return fmt.Errorf("write %s: %w", t.path, err)
		}
		tmp, err := writeTemp(ctx, dir, filepath.Base(t.real), t)
		if tmp != "" {
			temps = append(temps, tmp)
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", t.path, err)
		}
		regular = append(regular, staged{t, tmp})
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, t := range direct {
		if err := writeDirect(ctx, t); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is named once, below
			}
			return fmt.Errorf("write %s: %w", t.path, err)
		}
	}
	// The commit point: rename every temporary file into place.
	type done struct{ real, backup string }
	var renamed []done
	for _, st := range regular {
		backup := ""
		if st.info != nil {
			b := st.tmp + ".old"
			if os.Link(st.real, b) == nil {
				backup = b
			}
		}
		if rerr := rename(st.tmp, st.real); rerr != nil {
			if backup != "" {
				os.Remove(backup)
			}
			for i := len(renamed) - 1; i >= 0; i-- {
				r := renamed[i]
				if r.backup != "" {
					os.Rename(r.backup, r.real)
				} else {
					os.Remove(r.real)
				}
			}
			return fmt.Errorf("write %s: %w", st.path, rerr)
		}
		renamed = append(renamed, done{st.real, backup})
	}
	synced := map[string]bool{}
	for _, r := range renamed {
		if r.backup != "" {
			os.Remove(r.backup)
		}
		if d := filepath.Dir(r.real); !synced[d] {
			synced[d] = true
			syncDir(d)
		}
	}
	return nil
}

func writeTemp(ctx context.Context, dir, base string, t target) (string, error) {
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	if err := fill(ctx, f, t.fill); err != nil {
		f.Close()
		return tmp, err
	}
	// Sync before the rename so a crash cannot expose a renamed but
	// partial file. The data goes back in chunks first, so an interrupt
	// is not held up by one fsync of gigabytes.
	if err := syncfile.Flush(ctx, f); err != nil {
		f.Close()
		return tmp, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return tmp, err
	}
	mode := fs.FileMode(0o644) // CreateTemp uses 0o600
	if t.info != nil {
		mode = t.info.Mode().Perm()
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return tmp, err
	}
	return tmp, f.Close()
}

func writeDirect(ctx context.Context, t target) error {
	f, err := os.OpenFile(t.real, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := fill(ctx, f, t.fill); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fill runs fn into f through a buffer whose every flush first checks ctx,
// so a cancelled commit stops within 64 KiB of output even when fn itself
// never looks at ctx.
func fill(ctx context.Context, f *os.File, fn Fill) error {
	if fn == nil {
		return nil
	}
	bw := bufio.NewWriterSize(ctxWriter{ctx, f}, 1<<16)
	if err := fn(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// ctxWriter fails every write once ctx is done; a large write (a whole
// array passed through the buffer) goes in blocks of writeBlock bytes with
// a check before each.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

const writeBlock = 4 << 20

func (c ctxWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if err := c.ctx.Err(); err != nil {
			return n, err
		}
		m, err := c.w.Write(p[:min(len(p), writeBlock)])
		n += m
		if err != nil {
			return n, err
		}
		p = p[m:]
	}
	return n, nil
}

// mkdirs creates dir and its missing parents, returning those it created
// (parents first), so a failed commit can remove exactly them.
func mkdirs(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var created []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			return created, err
		}
		created = append(created, missing[i])
	}
	return created, nil
}

// resolveLinks follows symlinks at path itself (not in its parents, which
// rename handles) so the file a link points to is the one replaced, even
// when the link dangles.
func resolveLinks(path string) (string, error) {
	p := filepath.Clean(path)
	for range 40 {
		info, err := os.Lstat(p)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = filepath.Clean(dest)
	}
	return "", errors.New("too many levels of symbolic links")
}

// canonical is an absolute path with the symlinks of its existing prefix
// resolved, so two spellings of one not-yet-existing file compare equal.
func canonical(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	var rest []string
	for d := abs; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if filepath.Dir(d) == d {
			return abs
		}
		rest = append([]string{filepath.Base(d)}, rest...)
	}
}

// fileAncestor returns the first existing ancestor of path that is not a
// directory, or "".
func fileAncestor(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	parts := strings.Split(abs, string(filepath.Separator))
	cur := string(filepath.Separator)
	for _, part := range parts[:len(parts)-1] {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		info, err := os.Stat(cur)
		if err != nil {
			return ""
		}
		if !info.IsDir() {
			return cur
		}
	}
	return ""
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// syncDir makes the renames durable where the platform supports syncing a
// directory; failure is ignored because the file contents are already safe.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}
