package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vertebrae-eval/vertebrae/store"
)

// Options tunes the suite for a backend.
type Options struct {
	// LargeSize is the size of the streamed large object (0: 32 MiB, or
	// 4 MiB under -short).
	LargeSize int64
}

// Run runs the conformance suite. newStore is called once per subtest and
// must return an empty store (for a shared server: a fresh prefix); the
// suite closes it.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	RunWith(t, Options{}, newStore)
}

// RunWith is Run with options.
func RunWith(t *testing.T, opt Options, newStore func(t *testing.T) store.Store) {
	if opt.LargeSize == 0 {
		opt.LargeSize = 32 << 20
		if testing.Short() {
			opt.LargeSize = 4 << 20
		}
	}
	open := func(t *testing.T) store.Store {
		s := newStore(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	}
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"PutGet", testPutGet},
		{"Empty", testEmpty},
		{"Missing", testMissing},
		{"Overwrite", testOverwrite},
		{"List", testList},
		{"ListStop", testListStop},
		{"Delete", testDelete},
		{"ShortReader", testShortReader},
		{"LongReader", testLongReader},
		{"ReaderError", testReaderError},
		{"CancelledBefore", testCancelledBefore},
		{"CancelledDuring", testCancelledDuring},
		{"OddNames", testOddNames},
		{"ConcurrentReaders", testConcurrentReaders},
		{"ConcurrentWriters", testConcurrentWriters},
		{"ReadDuringOverwrite", testReadDuringOverwrite},
		{"Large", func(t *testing.T, s store.Store) { testLarge(t, s, opt.LargeSize) }},
		{"GetRange", testGetRange},
		{"GetRangeLarge", testGetRangeLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func put(t *testing.T, s store.Store, name string, data []byte) {
	t.Helper()
	if err := s.Put(context.Background(), name, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%q): %v", name, err)
	}
}

func get(t *testing.T, s store.Store, name string) []byte {
	t.Helper()
	rc, err := s.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q): read: %v", name, err)
	}
	return b
}

func list(t *testing.T, s store.Store, prefix string) []string {
	t.Helper()
	names := []string{}
	for n, err := range s.List(context.Background(), prefix) {
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		names = append(names, n)
	}
	return names
}

// wantContent checks name holds exactly want (Get and Stat).
func wantContent(t *testing.T, s store.Store, name string, want []byte) {
	t.Helper()
	if got := get(t, s, name); !bytes.Equal(got, want) {
		t.Fatalf("Get(%q) = %d bytes %q, want %d bytes %q", name, len(got), clip(got), len(want), clip(want))
	}
	n, err := s.Stat(context.Background(), name)
	if err != nil {
		t.Fatalf("Stat(%q): %v", name, err)
	}
	if n != int64(len(want)) {
		t.Fatalf("Stat(%q) = %d, want %d", name, n, len(want))
	}
}

// wantMissing checks name does not exist, through Get, Stat and List.
func wantMissing(t *testing.T, s store.Store, name string) {
	t.Helper()
	if rc, err := s.Get(context.Background(), name); !errors.Is(err, store.ErrNotExist) {
		if err == nil {
			rc.Close()
		}
		t.Fatalf("Get(%q) error = %v, want ErrNotExist", name, err)
	}
	if _, err := s.Stat(context.Background(), name); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Stat(%q) error = %v, want ErrNotExist", name, err)
	}
	if slices.Contains(list(t, s, ""), name) {
		t.Fatalf("List lists the missing object %q", name)
	}
}

func clip(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

func testPutGet(t *testing.T, s store.Store) {
	put(t, s, "retrieval/relevance/ds/manifest.json", []byte(`{"schema_version":2}`))
	wantContent(t, s, "retrieval/relevance/ds/manifest.json", []byte(`{"schema_version":2}`))
	// Unknown size: read to EOF.
	if err := s.Put(context.Background(), "k/unknown", strings.NewReader("abcdef"), -1); err != nil {
		t.Fatalf("Put with size -1: %v", err)
	}
	wantContent(t, s, "k/unknown", []byte("abcdef"))
	// A reader that returns data with io.EOF and in one-byte reads.
	if err := s.Put(context.Background(), "k/iotest", &oneByteReader{data: []byte("xyz")}, 3); err != nil {
		t.Fatalf("Put from one-byte reader: %v", err)
	}
	wantContent(t, s, "k/iotest", []byte("xyz"))
}

type oneByteReader struct{ data []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = r.data[0]
	r.data = r.data[1:]
	if len(r.data) == 0 {
		return 1, io.EOF
	}
	return 1, nil
}

func testEmpty(t *testing.T, s store.Store) {
	put(t, s, "empty", nil)
	wantContent(t, s, "empty", []byte{})
	if err := s.Put(context.Background(), "empty2", strings.NewReader(""), -1); err != nil {
		t.Fatal(err)
	}
	wantContent(t, s, "empty2", []byte{})
	if got := list(t, s, ""); !slices.Equal(got, []string{"empty", "empty2"}) {
		t.Fatalf("List = %q", got)
	}
}

func testMissing(t *testing.T, s store.Store) {
	wantMissing(t, s, "nope")
	wantMissing(t, s, "a/b/c/manifest.json")
	put(t, s, "a/b/manifest.json", []byte("x"))
	wantMissing(t, s, "a/b/other.json")
	wantMissing(t, s, "a/b") // a prefix is not an object
	wantMissing(t, s, "a/b/manifest.jso")
	if got := list(t, s, "zzz/"); len(got) != 0 {
		t.Fatalf("List(zzz/) = %q, want none", got)
	}
}

func testOverwrite(t *testing.T, s store.Store) {
	put(t, s, "k/manifest.json", []byte("generation one, longer content"))
	put(t, s, "k/manifest.json", []byte("gen 2"))
	wantContent(t, s, "k/manifest.json", []byte("gen 2"))
	put(t, s, "k/manifest.json", []byte("generation three is longest of all"))
	wantContent(t, s, "k/manifest.json", []byte("generation three is longest of all"))
	if got := list(t, s, ""); !slices.Equal(got, []string{"k/manifest.json"}) {
		t.Fatalf("List = %q, want exactly one object", got)
	}
}

func testList(t *testing.T, s store.Store) {
	// Orders that differ between a naive directory walk and byte order:
	// '-' (0x2d) and '.' (0x2e) sort before '/' (0x2f), '0' and 'b' after.
	names := []string{
		"a-c", "a.b", "a/b", "a/c/d", "a0", "ab", "b",
		"retrieval/embeddings/ds/r1/query/main/manifest.json",
		"retrieval/embeddings/ds/r1/query/main/array-00.npy",
		"retrieval/embeddings/ds/r1/gallery/main/manifest.json",
		"retrieval/embeddings/ds2/r1/query/main/manifest.json",
		"retrieval/relevance/ds/manifest.json",
		"runs/0123/x", "Z", "é",
	}
	shuffled := slices.Clone(names)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, n := range shuffled {
		put(t, s, n, []byte(n))
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for _, prefix := range []string{"", "a", "a/", "a/c", "retrieval/", "retrieval/embeddings/ds", "retrieval/embeddings/ds/",
		"retrieval/embeddings/ds/r1/query/main/", "retrieval/embeddings/ds/r1/query/main/m", "runs/0", "nothing", "é", "a-"} {
		want := []string{}
		for _, n := range sorted {
			if strings.HasPrefix(n, prefix) {
				want = append(want, n)
			}
		}
		if got := list(t, s, prefix); !slices.Equal(got, want) {
			t.Errorf("List(%q) =\n  %q\nwant\n  %q", prefix, got, want)
		}
	}
}

func testListStop(t *testing.T, s store.Store) {
	for _, n := range []string{"p/1", "p/2", "p/3", "q/1"} {
		put(t, s, n, []byte(n))
	}
	var got []string
	for n, err := range s.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
		if len(got) == 2 {
			break
		}
	}
	if !slices.Equal(got, []string{"p/1", "p/2"}) {
		t.Fatalf("first two listed = %q", got)
	}
}

func testDelete(t *testing.T, s store.Store) {
	put(t, s, "d/one", []byte("1"))
	put(t, s, "d/two", []byte("2"))
	if err := s.Delete(context.Background(), "d/one"); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, s, "d/one")
	wantContent(t, s, "d/two", []byte("2"))
	if err := s.Delete(context.Background(), "d/one"); err != nil {
		t.Fatalf("deleting a missing object: %v", err)
	}
	if err := s.Delete(context.Background(), "never/was"); err != nil {
		t.Fatalf("deleting a never-written object: %v", err)
	}
	// A deleted name can be written again.
	put(t, s, "d/one", []byte("again"))
	wantContent(t, s, "d/one", []byte("again"))
	if got := list(t, s, "d/"); !slices.Equal(got, []string{"d/one", "d/two"}) {
		t.Fatalf("List = %q", got)
	}
}

// errReader yields data then fails with err.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// failedPut checks a Put that must fail leaves old (nil: no object) in
// place and lists nothing else.
func failedPut(t *testing.T, s store.Store, name string, old []byte, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("Put(%q) succeeded, want an error", name)
	}
	if old == nil {
		wantMissing(t, s, name)
	} else {
		wantContent(t, s, name, old)
	}
	want := []string{}
	if old != nil {
		want = []string{name}
	}
	if got := list(t, s, ""); !slices.Equal(got, want) {
		t.Fatalf("after a failed Put, List = %q, want %q (no partial or temporary objects)", got, want)
	}
}

func testShortReader(t *testing.T, s store.Store) {
	err := s.Put(context.Background(), "k/new", strings.NewReader("12345"), 10)
	failedPut(t, s, "k/new", nil, err)
	put(t, s, "k/new", []byte("old content"))
	err = s.Put(context.Background(), "k/new", strings.NewReader("12345"), 10)
	failedPut(t, s, "k/new", []byte("old content"), err)
}

func testLongReader(t *testing.T, s store.Store) {
	put(t, s, "k", []byte("old"))
	err := s.Put(context.Background(), "k", strings.NewReader("1234567890"), 4)
	failedPut(t, s, "k", []byte("old"), err)
}

func testReaderError(t *testing.T, s store.Store) {
	boom := errors.New("disk on fire")
	err := s.Put(context.Background(), "k", &errReader{data: []byte("partial"), err: boom}, 100)
	failedPut(t, s, "k", nil, err)
	if !errors.Is(err, boom) {
		t.Fatalf("Put error %v does not wrap the reader's error", err)
	}
	put(t, s, "k", []byte("old"))
	err = s.Put(context.Background(), "k", &errReader{data: bytes.Repeat([]byte("p"), 300<<10), err: boom}, -1)
	failedPut(t, s, "k", []byte("old"), err)
	if !errors.Is(err, boom) {
		t.Fatalf("Put error %v does not wrap the reader's error", err)
	}
}

func testCancelledBefore(t *testing.T, s store.Store) {
	put(t, s, "k", []byte("old"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Put(ctx, "k", strings.NewReader("new"), 3)
	failedPut(t, s, "k", []byte("old"), err)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put error %v, want context.Canceled", err)
	}
}

// cancellingReader cancels its context after the first read, then keeps
// supplying data, as a writer interrupted by Ctrl-C would.
type cancellingReader struct {
	cancel func()
	left   int
}

func (r *cancellingReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.left, 64<<10)
	for i := range p[:n] {
		p[i] = 'c'
	}
	r.left -= n
	r.cancel()
	return n, nil
}

func testCancelledDuring(t *testing.T, s store.Store) {
	put(t, s, "k", []byte("old"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const size = 1 << 20
	err := s.Put(ctx, "k", &cancellingReader{cancel: cancel, left: size}, size)
	failedPut(t, s, "k", []byte("old"), err)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put error %v, want context.Canceled", err)
	}
}

func testOddNames(t *testing.T, s store.Store) {
	names := []string{
		"a..b", "a__b", "a...", "..a", ".hidden", "with space/file name.json",
		"unicode/żółw/日本語/ключ", "sym/a+b=c&d;e,f@g", "sym/percent%20and%2F", "sym/q?x#y*z",
		"sym/quote'\"", "sym/tilde~bang!dollar$", "sym/(paren)[bracket]{brace}", "trailing.", "x__y/..c/d..", "esc/x__0x41__y", "esc/a__0x2f__b",
	}
	for _, n := range names {
		put(t, s, n, []byte("content of "+n))
	}
	for _, n := range names {
		wantContent(t, s, n, []byte("content of "+n))
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	if got := list(t, s, ""); !slices.Equal(got, sorted) {
		t.Fatalf("List =\n  %q\nwant\n  %q", got, sorted)
	}
	if got := list(t, s, "a.."); !slices.Equal(got, []string{"a...", "a..b"}) {
		t.Fatalf("List(a..) = %q", got)
	}
	// a..b and a__b are distinct objects.
	if err := s.Delete(context.Background(), "a..b"); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, s, "a..b")
	wantContent(t, s, "a__b", []byte("content of a__b"))
}

// The two generations differ in every byte and in length, so a reader that
// sees a mix or a torn length is caught.
func generation(i, size int) []byte {
	return bytes.Repeat([]byte{byte('A' + i)}, size+i*4099)
}

func testConcurrentReaders(t *testing.T, s store.Store) {
	const size = 256 << 10
	const writes, readers, reads = 12, 3, 15
	put(t, s, "k/manifest.json", generation(0, size))
	var wg sync.WaitGroup
	errc := make(chan error, readers*reads+writes)
	wg.Go(func() {
		for i := range writes {
			g := generation(i%4, size)
			if err := s.Put(context.Background(), "k/manifest.json", bytes.NewReader(g), int64(len(g))); err != nil {
				errc <- err
				return
			}
		}
	})
	for range readers {
		wg.Go(func() {
			for range reads {
				rc, err := s.Get(context.Background(), "k/manifest.json")
				if err != nil {
					errc <- fmt.Errorf("Get during overwrites: %w", err)
					return
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					errc <- err
					return
				}
				if err := wholeGeneration(b, size); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	wantContent(t, s, "k/manifest.json", generation((writes-1)%4, size))
}

// wholeGeneration reports whether b is exactly one generation.
func wholeGeneration(b []byte, size int) error {
	if len(b) == 0 {
		return errors.New("read an empty object during overwrites")
	}
	i := int(b[0] - 'A')
	if i < 0 || i > 25 || len(b) != size+i*4099 {
		return fmt.Errorf("read %d bytes starting %q: a torn object", len(b), b[0])
	}
	if j := bytes.IndexFunc(b, func(r rune) bool { return r != rune(b[0]) }); j >= 0 {
		return fmt.Errorf("read a mix of generations (byte %d is %q, byte 0 %q)", j, b[j], b[0])
	}
	return nil
}

func testConcurrentWriters(t *testing.T, s store.Store) {
	const size = 200 << 10
	const writers = 6
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			g := generation(i, size)
			// Two writes each, so writers overlap on a slow backend too.
			for range 2 {
				if err := s.Put(context.Background(), "k/manifest.json", bytes.NewReader(g), int64(len(g))); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	b := get(t, s, "k/manifest.json")
	if err := wholeGeneration(b, size); err != nil {
		t.Fatal(err)
	}
	if got := list(t, s, ""); !slices.Equal(got, []string{"k/manifest.json"}) {
		t.Fatalf("after concurrent writers, List = %q, want exactly one object", got)
	}
}

// A reader that opened an object before it was overwritten reads the old
// content to the end, never a splice of old and new.
func testReadDuringOverwrite(t *testing.T, s store.Store) {
	const size = 1 << 20
	put(t, s, "k/manifest.json", generation(0, size))
	rc, err := s.Get(context.Background(), "k/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 1000)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	put(t, s, "k/manifest.json", generation(1, size))
	rest, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading on after an overwrite: %v", err)
	}
	if err := wholeGeneration(append(head, rest...), size); err != nil {
		t.Fatal(err)
	}
	if b := get(t, s, "k/manifest.json"); b[0] != 'B' || wholeGeneration(b, size) != nil {
		t.Fatal("the overwrite did not take effect")
	}
}

// Generator is a deterministic pseudo-random reader of a fixed length, so a
// large object can be streamed and checked without holding it in memory.
type Generator struct {
	rng  *rand.ChaCha8
	left int64
}

// NewGenerator returns a reader of size bytes derived from seed.
func NewGenerator(seed uint64, size int64) *Generator {
	var s [32]byte
	for i := range 4 {
		for j := range 8 {
			s[i*8+j] = byte(seed >> (8 * j))
		}
		seed = seed*6364136223846793005 + 1442695040888963407
	}
	return &Generator{rng: rand.NewChaCha8(s), left: size}
}

func (g *Generator) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n, _ := g.rng.Read(p)
	g.left -= int64(n)
	return n, nil
}

// GeneratedSHA256 is the SHA-256 of NewGenerator(seed, size)'s bytes.
func GeneratedSHA256(seed uint64, size int64) [32]byte {
	h := sha256.New()
	if _, err := io.Copy(h, NewGenerator(seed, size)); err != nil {
		panic(err) // the generator never fails
	}
	return [32]byte(h.Sum(nil))
}

func testLarge(t *testing.T, s store.Store, size int64) {
	ctx := context.Background()
	if err := s.Put(ctx, "big/array-x.npy", NewGenerator(7, size), size); err != nil {
		t.Fatalf("Put of %d bytes: %v", size, err)
	}
	n, err := s.Stat(ctx, "big/array-x.npy")
	if err != nil || n != size {
		t.Fatalf("Stat = %d, %v; want %d", n, err, size)
	}
	rc, err := s.Get(ctx, "big/array-x.npy")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h := sha256.New()
	got, err := io.Copy(h, rc)
	if err != nil {
		t.Fatal(err)
	}
	if got != size || [32]byte(h.Sum(nil)) != GeneratedSHA256(7, size) {
		t.Fatalf("read back %d bytes with a different SHA-256 (want %d bytes)", got, size)
	}
	// Unknown size streams too.
	if err := s.Put(ctx, "big/unknown", NewGenerator(8, size/2+3), -1); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Stat(ctx, "big/unknown"); err != nil || n != size/2+3 {
		t.Fatalf("Stat = %d, %v; want %d", n, err, size/2+3)
	}
}

// getRange reads the range [off, off+n) of name.
func getRange(t *testing.T, s store.Store, name string, off, n int64) []byte {
	t.Helper()
	rc, err := s.GetRange(context.Background(), name, off, n)
	if err != nil {
		t.Fatalf("GetRange(%q, %d, %d): %v", name, off, n, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("GetRange(%q, %d, %d): read: %v", name, off, n, err)
	}
	if err := rc.Close(); err != nil {
		t.Fatalf("GetRange(%q, %d, %d): Close: %v", name, off, n, err)
	}
	return b
}

func testGetRange(t *testing.T, s store.Store) {
	ctx := context.Background()
	const size = 1000
	data, err := io.ReadAll(NewGenerator(11, size))
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "r/data.bin", data)
	put(t, s, "r/empty", nil)
	for _, tc := range []struct {
		name      string
		obj       string
		off, n    int64
		from, end int // the expected bytes: data[from:end]
	}{
		{"whole", "r/data.bin", 0, size, 0, size},
		{"first byte", "r/data.bin", 0, 1, 0, 1},
		{"last byte", "r/data.bin", size - 1, 1, size - 1, size},
		{"middle", "r/data.bin", 123, 456, 123, 579},
		{"ends at the end", "r/data.bin", 600, size - 600, 600, size},
		{"runs past the end", "r/data.bin", 900, 300, 900, size},
		{"from 0 past the end", "r/data.bin", 0, size + 1, 0, size},
		{"to the largest offset", "r/data.bin", 10, math.MaxInt64, 10, size},
		{"off == size", "r/data.bin", size, 10, 0, 0},
		{"off past the end", "r/data.bin", size + 500, 10, 0, 0},
		{"n == 0", "r/data.bin", 17, 0, 0, 0},
		{"n == 0 at 0", "r/data.bin", 0, 0, 0, 0},
		{"n == 0 at the end", "r/data.bin", size, 0, 0, 0},
		{"empty object", "r/empty", 0, 10, 0, 0},
		{"empty object, n == 0", "r/empty", 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := []byte{}
			if tc.obj == "r/data.bin" {
				want = data[tc.from:tc.end]
			}
			if got := getRange(t, s, tc.obj, tc.off, tc.n); !bytes.Equal(got, want) {
				t.Fatalf("GetRange(%q, %d, %d) = %d bytes %x..., want %d bytes %x...", tc.obj, tc.off, tc.n, len(got), clip(got), len(want), clip(want))
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		for _, name := range []string{"nope", "r/nope", "r", "r/data.bin/x"} {
			for _, r := range [][2]int64{{0, 10}, {5, 1}, {0, 0}} {
				rc, err := s.GetRange(ctx, name, r[0], r[1])
				if !errors.Is(err, store.ErrNotExist) {
					if err == nil {
						rc.Close()
					}
					t.Errorf("GetRange(%q, %d, %d) error = %v, want ErrNotExist", name, r[0], r[1], err)
				}
			}
		}
	})
	t.Run("negative", func(t *testing.T) {
		for _, r := range [][2]int64{{-1, 10}, {0, -1}, {-5, -5}} {
			rc, err := s.GetRange(ctx, "r/data.bin", r[0], r[1])
			if err == nil {
				rc.Close()
				t.Errorf("GetRange(%d, %d) succeeded, want an error", r[0], r[1])
			} else if errors.Is(err, store.ErrNotExist) {
				t.Errorf("GetRange(%d, %d) error = %v, matches ErrNotExist for an existing object", r[0], r[1], err)
			}
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		rc, err := s.GetRange(cctx, "r/data.bin", 0, 10)
		if err == nil {
			// A lazy backend may fail on the first read instead.
			_, err = io.ReadAll(rc)
			rc.Close()
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("GetRange with a cancelled context: error = %v, want context.Canceled", err)
		}
	})
	// The object is unchanged by ranged reads.
	wantContent(t, s, "r/data.bin", data)
}

func testGetRangeLarge(t *testing.T, s store.Store) {
	const size = 3 << 20
	data, err := io.ReadAll(NewGenerator(12, size))
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "big/array-r.npy", data)
	for _, r := range [][2]int64{
		{1<<20 + 12345, 1<<20 + 7}, // the middle, across a MiB boundary
		{0, 64 << 10},
		{size - 100, 1000}, // the tail
		{size/2 - 1, 2},
	} {
		off, n := r[0], r[1]
		want := data[off:min(off+n, size)]
		if got := getRange(t, s, "big/array-r.npy", off, n); !bytes.Equal(got, want) {
			t.Fatalf("GetRange(%d, %d) = %d bytes, want %d bytes (equal: %v)", off, n, len(got), len(want), bytes.Equal(got, want))
		}
	}
}
