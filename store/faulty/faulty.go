package faulty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"path"
	"strings"
	"sync"

	"github.com/vertebrae-eval/vertebrae/store"
)

// ErrInjected is matched by every error this package injects.
var ErrInjected = errors.New("injected store fault")

// ErrCrashed is returned by every call after a crashing fault fired; it
// matches ErrInjected too.
var ErrCrashed = fmt.Errorf("%w: the store crashed earlier (simulated process death)", ErrInjected)

// Op is a store operation.
type Op int

// The operations of store.Store.
const (
	OpPut Op = iota + 1
	OpGet
	OpStat
	OpList
	OpDelete
	// OpGetRange is GetRange. Its faults are its own: a Get fault does not
	// fire on a GetRange, nor a GetRange fault on a Get (but see
	// Store.GetRange for a truncating Get fault).
	OpGetRange
)

func (o Op) String() string {
	switch o {
	case OpPut:
		return "Put"
	case OpGet:
		return "Get"
	case OpStat:
		return "Stat"
	case OpList:
		return "List"
	case OpDelete:
		return "Delete"
	case OpGetRange:
		return "GetRange"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Mode is what a fault does.
type Mode int

const (
	// Fail makes the call fail with ErrInjected before it reaches the
	// wrapped store (a Put writes nothing, its reader is not read).
	Fail Mode = iota
	// FailAfter lets Bytes bytes through, then fails the stream: a Put's
	// backend receives a reader that errors after Bytes bytes (so the
	// backend's own abort path runs), a Get's or GetRange's reader errors
	// after Bytes bytes.
	FailAfter
	// Corrupt flips (XOR 0xff) the byte at offset Bytes: on its way into
	// the store for a Put (which succeeds: silent damage at rest), on its
	// way out for a Get. For a GetRange the offset is relative to the start
	// of the range (Bytes 0 is the range's first byte, object byte off). An
	// object (or range) shorter than that is unchanged.
	Corrupt
	// Truncate keeps only the first Bytes bytes: a Put stores them and
	// succeeds, a Get's reader ends there, a GetRange's reader ends after
	// the first Bytes bytes of its range.
	Truncate
)

// Fault is one injected failure.
type Fault struct {
	Op Op
	// Match selects the object names (for List: the prefix) the fault
	// applies to; nil matches every name.
	Match func(name string) bool
	// Nth: 0 fires on every matching call, n ≥ 1 only on the nth matching
	// call (1-based, counted from when the fault was injected).
	Nth  int
	Mode Mode
	// Bytes is the byte count or offset of FailAfter, Corrupt, Truncate;
	// for OpGetRange counted from the start of the range.
	Bytes int64
	// Crash: once fired, every later call of any kind fails with
	// ErrCrashed.
	Crash bool
}

// Crashing returns a copy of f that simulates a process death when it
// fires.
func (f Fault) Crashing() Fault { f.Crash = true; return f }

// OnNth returns a copy of f that fires only on its nth matching call.
func (f Fault) OnNth(n int) Fault { f.Nth = n; return f }

// FailPut fails matching Puts before they write anything.
func FailPut(match func(string) bool) Fault { return Fault{Op: OpPut, Match: match} }

// FailNthPut fails the nth Put (1-based) of any name.
func FailNthPut(n int) Fault { return Fault{Op: OpPut, Nth: n} }

// FailPutAfter lets k bytes of matching Puts reach the wrapped store, then
// fails their reader.
func FailPutAfter(match func(string) bool, k int64) Fault {
	return Fault{Op: OpPut, Match: match, Mode: FailAfter, Bytes: k}
}

// CorruptPut stores matching objects with the byte at offset flipped.
func CorruptPut(match func(string) bool, offset int64) Fault {
	return Fault{Op: OpPut, Match: match, Mode: Corrupt, Bytes: offset}
}

// TruncatePut stores only the first n bytes of matching objects.
func TruncatePut(match func(string) bool, n int64) Fault {
	return Fault{Op: OpPut, Match: match, Mode: Truncate, Bytes: n}
}

// FailGet fails matching Gets.
func FailGet(match func(string) bool) Fault { return Fault{Op: OpGet, Match: match} }

// FailGetAfter makes matching Gets' readers fail after k bytes.
func FailGetAfter(match func(string) bool, k int64) Fault {
	return Fault{Op: OpGet, Match: match, Mode: FailAfter, Bytes: k}
}

// CorruptGet makes matching Gets read the byte at offset flipped.
func CorruptGet(match func(string) bool, offset int64) Fault {
	return Fault{Op: OpGet, Match: match, Mode: Corrupt, Bytes: offset}
}

// TruncateGet makes matching Gets end after n bytes.
func TruncateGet(match func(string) bool, n int64) Fault {
	return Fault{Op: OpGet, Match: match, Mode: Truncate, Bytes: n}
}

// FailGetRange fails matching GetRanges.
func FailGetRange(match func(string) bool) Fault { return Fault{Op: OpGetRange, Match: match} }

// FailGetRangeAfter makes matching GetRanges' readers fail after k bytes
// of the range.
func FailGetRangeAfter(match func(string) bool, k int64) Fault {
	return Fault{Op: OpGetRange, Match: match, Mode: FailAfter, Bytes: k}
}

// CorruptGetRange makes matching GetRanges read the byte at offset flipped,
// offset counted from the start of the range (0: the range's first byte).
func CorruptGetRange(match func(string) bool, offset int64) Fault {
	return Fault{Op: OpGetRange, Match: match, Mode: Corrupt, Bytes: offset}
}

// TruncateGetRange makes matching GetRanges end after n bytes of the range.
func TruncateGetRange(match func(string) bool, n int64) Fault {
	return Fault{Op: OpGetRange, Match: match, Mode: Truncate, Bytes: n}
}

// FailStat fails matching Stats.
func FailStat(match func(string) bool) Fault { return Fault{Op: OpStat, Match: match} }

// FailList fails Lists whose prefix matches.
func FailList(match func(string) bool) Fault { return Fault{Op: OpList, Match: match} }

// FailDelete fails matching Deletes.
func FailDelete(match func(string) bool) Fault { return Fault{Op: OpDelete, Match: match} }

// Named matches names whose last '/'-component is base ("manifest.json").
func Named(base string) func(string) bool {
	return func(n string) bool { return path.Base(n) == base }
}

// Prefix matches names starting with p.
func Prefix(p string) func(string) bool {
	return func(n string) bool { return strings.HasPrefix(n, p) }
}

// Exact matches one name.
func Exact(name string) func(string) bool {
	return func(n string) bool { return n == name }
}

// Call is one logged call.
type Call struct {
	Op   Op
	Name string // the object name, or List's prefix
	// Fault is the index (in injection order) of the fault that fired on
	// this call, or -1.
	Fault int
	Err   error // the call's result (for Get, GetRange and List: of opening)
	// Off and N are GetRange's range (0 for other operations).
	Off, N int64
}

type rule struct {
	Fault
	index int
	seen  int
}

// Store is a fault-injecting wrapper; safe for concurrent use.
type Store struct {
	inner store.Store

	mu      sync.Mutex
	rules   []*rule
	nextIdx int
	crashed bool
	log     []Call
}

var _ store.Store = (*Store)(nil)

// New wraps inner with the given faults.
func New(inner store.Store, faults ...Fault) *Store {
	s := &Store{inner: inner}
	s.Inject(faults...)
	return s
}

// Inner returns the wrapped store (to inspect what a crash left).
func (s *Store) Inner() store.Store { return s.inner }

// Inject adds faults.
func (s *Store) Inject(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range faults {
		s.rules = append(s.rules, &rule{Fault: f, index: s.nextIdx})
		s.nextIdx++
	}
}

// Reset removes every fault and undoes a crash; the log is kept.
func (s *Store) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
	s.crashed = false
}

// Crashed reports whether a crashing fault fired.
func (s *Store) Crashed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crashed
}

// Log returns every call so far, in order.
func (s *Store) Log() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.log...)
}

// Puts returns the names of the Puts that succeeded, in order.
func (s *Store) Puts() []string {
	var names []string
	for _, c := range s.Log() {
		if c.Op == OpPut && c.Err == nil {
			names = append(names, c.Name)
		}
	}
	return names
}

// Fired returns how many calls a fault fired on.
func (s *Store) Fired() int {
	n := 0
	for _, c := range s.Log() {
		if c.Fault >= 0 {
			n++
		}
	}
	return n
}

// decide picks the fault for a call (nil: none) and whether the store has
// crashed. A crashing fault crashes the store as it fires.
func (s *Store) decide(op Op, name string) (*rule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.crashed {
		return nil, true
	}
	var fired *rule
	for _, r := range s.rules {
		if r.Op != op || (r.Match != nil && !r.Match(name)) {
			continue
		}
		r.seen++
		if fired == nil && (r.Nth == 0 || r.seen == r.Nth) {
			fired = r
		}
	}
	if fired != nil && fired.Crash {
		s.crashed = true
	}
	return fired, false
}

func (s *Store) record(op Op, name string, r *rule, err error) {
	s.recordCall(Call{Op: op, Name: name}, r, err)
}

// recordCall logs c with the fault r (nil: none) and the result err.
func (s *Store) recordCall(c Call, r *rule, err error) {
	c.Fault, c.Err = -1, err
	if r != nil {
		c.Fault = r.index
	}
	s.mu.Lock()
	s.log = append(s.log, c)
	s.mu.Unlock()
}

func injected(op Op, name string, r *rule) error {
	return fmt.Errorf("%w: %s %s (fault %d)", ErrInjected, op, name, r.index)
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, name string, rd io.Reader, size int64) (err error) {
	r, crashed := s.decide(OpPut, name)
	defer func() { s.record(OpPut, name, r, err) }()
	if crashed {
		return fmt.Errorf("put %s: %w", name, ErrCrashed)
	}
	if r == nil {
		return s.inner.Put(ctx, name, rd, size)
	}
	switch r.Mode {
	case FailAfter:
		return s.inner.Put(ctx, name, &stream{r: rd, at: r.Bytes, mode: FailAfter, err: injected(OpPut, name, r)}, size)
	case Corrupt:
		return s.inner.Put(ctx, name, &stream{r: rd, at: r.Bytes, mode: Corrupt}, size)
	case Truncate:
		if size >= 0 && size <= r.Bytes {
			return s.inner.Put(ctx, name, rd, size)
		}
		n := int64(-1)
		if size >= 0 {
			n = r.Bytes
		}
		return s.inner.Put(ctx, name, io.LimitReader(rd, r.Bytes), n)
	}
	return injected(OpPut, name, r)
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, name string) (rc io.ReadCloser, err error) {
	r, crashed := s.decide(OpGet, name)
	defer func() { s.record(OpGet, name, r, err) }()
	if crashed {
		return nil, fmt.Errorf("get %s: %w", name, ErrCrashed)
	}
	if r != nil && r.Mode == Fail {
		return nil, injected(OpGet, name, r)
	}
	rc, err = s.inner.Get(ctx, name)
	if err != nil || r == nil {
		return rc, err
	}
	st := &stream{r: rc, at: r.Bytes, mode: r.Mode, err: injected(OpGet, name, r)}
	return struct {
		io.Reader
		io.Closer
	}{st, rc}, nil
}

// GetRange implements store.Store. A GetRange fault's Bytes count from the
// start of the range. A truncating Get fault that fires on every call
// (Nth 0) also ends every matching GetRange at its Bytes (an object
// offset), as it shrinks Stat's size, so ranged reads see the same object
// as Get; it is not logged as firing there.
func (s *Store) GetRange(ctx context.Context, name string, off, n int64) (rc io.ReadCloser, err error) {
	r, crashed := s.decide(OpGetRange, name)
	defer func() { s.recordCall(Call{Op: OpGetRange, Name: name, Off: off, N: n}, r, err) }()
	if crashed {
		return nil, fmt.Errorf("get %s [%d, +%d): %w", name, off, n, ErrCrashed)
	}
	if r != nil && r.Mode == Fail {
		return nil, injected(OpGetRange, name, r)
	}
	length := n
	if off >= 0 && n >= 0 {
		s.mu.Lock()
		for _, g := range s.rules {
			if g.Op == OpGet && g.Mode == Truncate && g.Nth == 0 && (g.Match == nil || g.Match(name)) {
				length = max(0, min(length, g.Bytes-off))
			}
		}
		s.mu.Unlock()
	}
	rc, err = s.inner.GetRange(ctx, name, off, length)
	if err != nil || r == nil {
		return rc, err
	}
	st := &stream{r: rc, at: r.Bytes, mode: r.Mode, err: injected(OpGetRange, name, r)}
	return struct {
		io.Reader
		io.Closer
	}{st, rc}, nil
}

// Stat implements store.Store. A truncating Get fault also shrinks the
// size Stat reports, so a reader that checks the size first sees the same
// object as one that reads it.
func (s *Store) Stat(ctx context.Context, name string) (n int64, err error) {
	r, crashed := s.decide(OpStat, name)
	defer func() { s.record(OpStat, name, r, err) }()
	if crashed {
		return 0, fmt.Errorf("stat %s: %w", name, ErrCrashed)
	}
	if r != nil {
		return 0, injected(OpStat, name, r)
	}
	n, err = s.inner.Stat(ctx, name)
	if err == nil {
		s.mu.Lock()
		for _, g := range s.rules {
			if g.Op == OpGet && g.Mode == Truncate && g.Nth == 0 && (g.Match == nil || g.Match(name)) && n > g.Bytes {
				n = g.Bytes
			}
		}
		s.mu.Unlock()
	}
	return n, err
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		r, crashed := s.decide(OpList, prefix)
		switch {
		case crashed:
			err := fmt.Errorf("list %q: %w", prefix, ErrCrashed)
			s.record(OpList, prefix, nil, err)
			yield("", err)
			return
		case r != nil:
			err := injected(OpList, prefix, r)
			s.record(OpList, prefix, r, err)
			yield("", err)
			return
		}
		s.record(OpList, prefix, nil, nil)
		for n, err := range s.inner.List(ctx, prefix) {
			if s.Crashed() {
				yield("", fmt.Errorf("list %q: %w", prefix, ErrCrashed))
				return
			}
			if !yield(n, err) {
				return
			}
		}
	}
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, name string) (err error) {
	r, crashed := s.decide(OpDelete, name)
	defer func() { s.record(OpDelete, name, r, err) }()
	if crashed {
		return fmt.Errorf("delete %s: %w", name, ErrCrashed)
	}
	if r != nil {
		return injected(OpDelete, name, r)
	}
	return s.inner.Delete(ctx, name)
}

// Close closes the wrapped store.
func (s *Store) Close() error { return s.inner.Close() }

// stream applies a FailAfter, Corrupt or Truncate fault to a byte stream.
type stream struct {
	r    io.Reader
	at   int64 // offset of the fault
	pos  int64
	mode Mode
	err  error
}

func (st *stream) Read(p []byte) (int, error) {
	switch st.mode {
	case FailAfter, Truncate:
		if st.pos >= st.at {
			if st.mode == Truncate {
				return 0, io.EOF
			}
			return 0, st.err
		}
		if int64(len(p)) > st.at-st.pos {
			p = p[:st.at-st.pos]
		}
	}
	n, err := st.r.Read(p)
	if st.mode == Corrupt && st.at >= st.pos && st.at < st.pos+int64(n) {
		p[st.at-st.pos] ^= 0xff
	}
	st.pos += int64(n)
	if err == io.EOF && st.mode == FailAfter && st.pos < st.at {
		return n, io.EOF // shorter than the fault offset: reads whole
	}
	return n, err
}
