package faulty_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/faulty"
	"github.com/vertebrae-eval/vertebrae/store/local"
	"github.com/vertebrae-eval/vertebrae/store/mem"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

var ctx = context.Background()

// backends: the faults must behave the same over every inner store.
func backends(t *testing.T) map[string]store.Store {
	l, err := local.Open(filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]store.Store{"mem": mem.New(), "local": l}
}

func each(t *testing.T, fn func(t *testing.T, inner store.Store)) {
	for name, inner := range backends(t) {
		t.Run(name, func(t *testing.T) { fn(t, inner) })
	}
}

func put(t *testing.T, s store.Store, name, data string) error {
	t.Helper()
	return s.Put(ctx, name, strings.NewReader(data), int64(len(data)))
}

func mustPut(t *testing.T, s store.Store, name, data string) {
	t.Helper()
	if err := put(t, s, name, data); err != nil {
		t.Fatalf("Put(%q): %v", name, err)
	}
}

func read(t *testing.T, s store.Store, name string) (string, error) {
	t.Helper()
	rc, err := s.Get(ctx, name)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

func mustRead(t *testing.T, s store.Store, name string) string {
	t.Helper()
	got, err := read(t, s, name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	return got
}

func names(t *testing.T, s store.Store) []string {
	t.Helper()
	var got []string
	for n, err := range s.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	return got
}

// An unfaulted wrapper is transparent.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return faulty.New(mem.New()) })
}

func TestFailNthPut(t *testing.T) {
	each(t, func(t *testing.T, inner store.Store) {
		s := faulty.New(inner, faulty.FailNthPut(2))
		mustPut(t, s, "a", "1")
		src := strings.NewReader("2")
		err := s.Put(ctx, "b", src, 1)
		if !errors.Is(err, faulty.ErrInjected) {
			t.Fatalf("second Put: %v, want ErrInjected", err)
		}
		if src.Len() != 1 {
			t.Fatal("a failing Put read its source")
		}
		mustPut(t, s, "c", "3")
		if got := names(t, inner); !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("inner holds %q", got)
		}
		if got := s.Puts(); !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("Puts() = %q", got)
		}
		if s.Fired() != 1 {
			t.Fatalf("Fired() = %d", s.Fired())
		}
	})
}

// The crash between data files and manifest the artifact layer must
// survive: the old generation stays, nothing after the crash runs.
func TestCrashBeforeManifest(t *testing.T) {
	each(t, func(t *testing.T, inner store.Store) {
		mustPut(t, inner, "k/array-old.npy", "old data")
		mustPut(t, inner, "k/manifest.json", `{"old":1}`)
		s := faulty.New(inner, faulty.FailPut(faulty.Named("manifest.json")).Crashing())
		mustPut(t, s, "k/array-new.npy", "new data")
		if err := put(t, s, "k/manifest.json", `{"new":1}`); !errors.Is(err, faulty.ErrInjected) {
			t.Fatalf("manifest Put: %v", err)
		}
		if !s.Crashed() {
			t.Fatal("Crashed() = false")
		}
		// The writer's clean-up never reaches the store.
		if err := s.Delete(ctx, "k/array-new.npy"); !errors.Is(err, faulty.ErrCrashed) || !errors.Is(err, faulty.ErrInjected) {
			t.Fatalf("Delete after the crash: %v, want ErrCrashed", err)
		}
		if _, err := s.Get(ctx, "k/manifest.json"); !errors.Is(err, faulty.ErrCrashed) {
			t.Fatalf("Get after the crash: %v", err)
		}
		if _, err := s.Stat(ctx, "k/manifest.json"); !errors.Is(err, faulty.ErrCrashed) {
			t.Fatalf("Stat after the crash: %v", err)
		}
		for _, err := range s.List(ctx, "") {
			if !errors.Is(err, faulty.ErrCrashed) {
				t.Fatalf("List after the crash: %v", err)
			}
		}
		if got := mustRead(t, inner, "k/manifest.json"); got != `{"old":1}` {
			t.Fatalf("manifest after the crash = %q", got)
		}
		if got := names(t, inner); !slices.Equal(got, []string{"k/array-new.npy", "k/array-old.npy", "k/manifest.json"}) {
			t.Fatalf("inner holds %q", got)
		}
		s.Reset()
		mustPut(t, s, "k/manifest.json", `{"new":1}`)
		if got := mustRead(t, inner, "k/manifest.json"); got != `{"new":1}` {
			t.Fatalf("after Reset the manifest = %q", got)
		}
	})
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestFailPutAfter(t *testing.T) {
	each(t, func(t *testing.T, inner store.Store) {
		mustPut(t, inner, "k", "old")
		s := faulty.New(inner, faulty.FailPutAfter(faulty.Exact("k"), 5))
		src := &countingReader{r: strings.NewReader("0123456789")}
		err := s.Put(ctx, "k", src, 10)
		if !errors.Is(err, faulty.ErrInjected) {
			t.Fatalf("Put: %v, want ErrInjected", err)
		}
		if src.n != 5 {
			t.Fatalf("the backend got %d bytes before the failure, want 5", src.n)
		}
		if got := mustRead(t, inner, "k"); got != "old" {
			t.Fatalf("after a Put failing midway the object is %q", got)
		}
		// Another name is unaffected, and a short object never reaches the
		// fault offset.
		mustPut(t, s, "other", "0123456789")
		s.Reset()
		s.Inject(faulty.FailPutAfter(nil, 100))
		mustPut(t, s, "k", "short")
		if got := mustRead(t, inner, "k"); got != "short" {
			t.Fatalf("object = %q", got)
		}
	})
}

func TestCorruptAndTruncatePut(t *testing.T) {
	each(t, func(t *testing.T, inner store.Store) {
		s := faulty.New(inner, faulty.CorruptPut(faulty.Prefix("c/"), 2), faulty.TruncatePut(faulty.Prefix("t/"), 3))
		mustPut(t, s, "c/x", "abcde")
		mustPut(t, s, "t/x", "abcde")
		if err := s.Put(ctx, "t/unknown", strings.NewReader("abcde"), -1); err != nil {
			t.Fatal(err)
		}
		mustPut(t, s, "t/short", "ab")
		mustPut(t, s, "plain", "abcde")
		for name, want := range map[string]string{
			"c/x": "ab\x9cde", "t/x": "abc", "t/unknown": "abc", "t/short": "ab", "plain": "abcde",
		} {
			if got := mustRead(t, inner, name); got != want {
				t.Errorf("inner %s = %q, want %q", name, got, want)
			}
		}
	})
}

func TestGetFaults(t *testing.T) {
	each(t, func(t *testing.T, inner store.Store) {
		mustPut(t, inner, "k/array-1.npy", "0123456789")
		mustPut(t, inner, "k/manifest.json", "{}")
		cases := []struct {
			fault   faulty.Fault
			want    string
			wantErr bool
			size    int64
		}{
			{faulty.FailGet(faulty.Named("array-1.npy")), "", true, 10},
			{faulty.FailGetAfter(faulty.Named("array-1.npy"), 4), "0123", true, 10},
			{faulty.CorruptGet(faulty.Named("array-1.npy"), 9), "012345678\xc6", false, 10},
			{faulty.CorruptGet(faulty.Named("array-1.npy"), 0), "\xcf123456789", false, 10},
			{faulty.CorruptGet(faulty.Named("array-1.npy"), 50), "0123456789", false, 10},
			{faulty.TruncateGet(nil, 7), "0123456", false, 7},
			{faulty.TruncateGet(nil, 0), "", false, 0},
		}
		for i, tc := range cases {
			s := faulty.New(inner, tc.fault)
			got, err := read(t, s, "k/array-1.npy")
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, faulty.ErrInjected)) {
				t.Errorf("case %d: Get error = %v, want error %v", i, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("case %d: read %q, want %q", i, got, tc.want)
			}
			if n, err := s.Stat(ctx, "k/array-1.npy"); err != nil || n != tc.size {
				t.Errorf("case %d: Stat = %d, %v; want %d", i, n, err, tc.size)
			}
			// The fault is on the named object only (except TruncateGet(nil)).
			if tc.fault.Match != nil {
				if got := mustRead(t, s, "k/manifest.json"); got != "{}" {
					t.Errorf("case %d: an unmatched object reads %q", i, got)
				}
			}
			// The stored object is never touched.
			if got := mustRead(t, inner, "k/array-1.npy"); got != "0123456789" {
				t.Fatalf("case %d: a Get fault changed the stored object: %q", i, got)
			}
		}
	})
}

func TestOnNthGet(t *testing.T) {
	s := faulty.New(mem.New(), faulty.CorruptGet(nil, 0).OnNth(2))
	mustPut(t, s, "k", "abc")
	for i, want := range []string{"abc", "\x9ebc", "abc"} {
		if got := mustRead(t, s, "k"); got != want {
			t.Errorf("read %d = %q, want %q", i+1, got, want)
		}
	}
}

func TestStatListDeleteFaults(t *testing.T) {
	inner := mem.New()
	mustPut(t, inner, "a/1", "x")
	mustPut(t, inner, "b/1", "y")
	s := faulty.New(inner, faulty.FailStat(faulty.Exact("a/1")), faulty.FailList(faulty.Prefix("a")), faulty.FailDelete(faulty.Exact("b/1")))
	if _, err := s.Stat(ctx, "a/1"); !errors.Is(err, faulty.ErrInjected) {
		t.Errorf("Stat: %v", err)
	}
	if n, err := s.Stat(ctx, "b/1"); err != nil || n != 1 {
		t.Errorf("unmatched Stat = %d, %v", n, err)
	}
	for _, err := range s.List(ctx, "a/") {
		if !errors.Is(err, faulty.ErrInjected) {
			t.Errorf("List(a/): %v", err)
		}
	}
	var got []string
	for n, err := range s.List(ctx, "b/") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if !slices.Equal(got, []string{"b/1"}) {
		t.Errorf("List(b/) = %q", got)
	}
	if err := s.Delete(ctx, "b/1"); !errors.Is(err, faulty.ErrInjected) {
		t.Errorf("Delete: %v", err)
	}
	if _, err := inner.Stat(ctx, "b/1"); err != nil {
		t.Error("a failed Delete deleted")
	}
	if err := s.Delete(ctx, "a/1"); err != nil {
		t.Errorf("unmatched Delete: %v", err)
	}
	if _, err := inner.Stat(ctx, "a/1"); !errors.Is(err, store.ErrNotExist) {
		t.Error("Delete did not pass through")
	}
}

func TestLog(t *testing.T) {
	s := faulty.New(mem.New(), faulty.FailGet(faulty.Exact("missing-fault")))
	mustPut(t, s, "x", "1")
	read(t, s, "x")
	read(t, s, "missing-fault")
	s.Stat(ctx, "nope")
	for range s.List(ctx, "p") {
	}
	s.Delete(ctx, "x")
	log := s.Log()
	want := []struct {
		op    faulty.Op
		name  string
		fault int
		err   bool
	}{
		{faulty.OpPut, "x", -1, false},
		{faulty.OpGet, "x", -1, false},
		{faulty.OpGet, "missing-fault", 0, true},
		{faulty.OpStat, "nope", -1, true},
		{faulty.OpList, "p", -1, false},
		{faulty.OpDelete, "x", -1, false},
	}
	if len(log) != len(want) {
		t.Fatalf("log has %d calls: %v", len(log), log)
	}
	for i, w := range want {
		c := log[i]
		if c.Op != w.op || c.Name != w.name || c.Fault != w.fault || (c.Err != nil) != w.err {
			t.Errorf("call %d = %v %q fault %d err %v; want %v %q fault %d err %v", i, c.Op, c.Name, c.Fault, c.Err, w.op, w.name, w.fault, w.err)
		}
	}
	if fmt.Sprint(faulty.OpPut, faulty.OpList) != "Put List" {
		t.Errorf("Op strings: %v %v", faulty.OpPut, faulty.OpList)
	}
}

// Under concurrent Puts exactly one call is the Nth.
func TestNthIsExactUnderConcurrency(t *testing.T) {
	s := faulty.New(mem.New(), faulty.FailNthPut(7))
	var failed atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := s.Put(ctx, fmt.Sprintf("o%02d", i), bytes.NewReader([]byte{1}), 1); err != nil {
				if !errors.Is(err, faulty.ErrInjected) {
					t.Error(err)
				}
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() != 1 {
		t.Fatalf("%d Puts failed, want exactly 1", failed.Load())
	}
	if n := len(names(t, s.Inner())); n != 19 {
		t.Fatalf("inner holds %d objects, want 19", n)
	}
}

func readRange(t *testing.T, s store.Store, name string, off, n int64) (string, error) {
	t.Helper()
	rc, err := s.GetRange(ctx, name, off, n)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

func TestGetRangeFaults(t *testing.T) {
	each(t, func(t *testing.T, inner store.Store) {
		mustPut(t, inner, "k/array-1.npy", "0123456789")
		mustPut(t, inner, "k/manifest.json", "{}")
		cases := []struct {
			fault   faulty.Fault
			want    string // of GetRange(3, 5), unfaulted "34567"
			wantErr bool
		}{
			{faulty.FailGetRange(faulty.Named("array-1.npy")), "", true},
			{faulty.FailGetRangeAfter(faulty.Named("array-1.npy"), 2), "34", true},
			{faulty.FailGetRangeAfter(nil, 6), "34567", false}, // the range ends first
			// Corrupt offsets count from the start of the range.
			{faulty.CorruptGetRange(faulty.Named("array-1.npy"), 0), "\xcc4567", false},
			{faulty.CorruptGetRange(faulty.Named("array-1.npy"), 4), "3456\xc8", false},
			{faulty.CorruptGetRange(faulty.Named("array-1.npy"), 5), "34567", false},
			{faulty.TruncateGetRange(nil, 2), "34", false},
			{faulty.TruncateGetRange(nil, 0), "", false},
			{faulty.TruncateGetRange(nil, 50), "34567", false},
			// Get faults do not fire on GetRange...
			{faulty.FailGet(nil), "34567", false},
			{faulty.CorruptGet(nil, 3), "34567", false},
			{faulty.FailGetAfter(nil, 1), "34567", false},
			// ...but a truncating one shrinks the object for ranges too,
			// as it does for Stat (its Bytes are an object offset).
			{faulty.TruncateGet(nil, 5), "34", false},
			{faulty.TruncateGet(nil, 2), "", false},
		}
		for i, tc := range cases {
			s := faulty.New(inner, tc.fault)
			got, err := readRange(t, s, "k/array-1.npy", 3, 5)
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, faulty.ErrInjected)) {
				t.Errorf("case %d: GetRange error = %v, want error %v", i, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("case %d: read %q, want %q", i, got, tc.want)
			}
			log := s.Log()
			if len(log) != 1 {
				t.Fatalf("case %d: log = %v, want one call", i, log)
			}
			c := log[0]
			wantFault := -1
			if tc.fault.Op == faulty.OpGetRange {
				wantFault = 0
			}
			if c.Op != faulty.OpGetRange || c.Name != "k/array-1.npy" || c.Off != 3 || c.N != 5 || c.Fault != wantFault {
				t.Errorf("case %d: logged %v %q [%d, +%d) fault %d; want GetRange k/array-1.npy [3, +5) fault %d", i, c.Op, c.Name, c.Off, c.N, c.Fault, wantFault)
			}
			if tc.fault.Mode == faulty.Fail && tc.fault.Op == faulty.OpGetRange && !errors.Is(c.Err, faulty.ErrInjected) {
				t.Errorf("case %d: logged error %v, want the injected one", i, c.Err)
			}
			if tc.fault.Op == faulty.OpGetRange {
				// A GetRange fault does not fire on Get.
				if got := mustRead(t, s, "k/array-1.npy"); got != "0123456789" {
					t.Errorf("case %d: Get reads %q under a GetRange fault", i, got)
				}
				if tc.fault.Match != nil {
					if got, err := readRange(t, s, "k/manifest.json", 0, 2); err != nil || got != "{}" {
						t.Errorf("case %d: an unmatched object reads %q, %v", i, got, err)
					}
				}
			}
			if got, err := readRange(t, inner, "k/array-1.npy", 0, 10); err != nil || got != "0123456789" {
				t.Fatalf("case %d: a GetRange fault changed the stored object: %q, %v", i, got, err)
			}
		}
	})
}

func TestGetRangeFaultOnNthAndCrash(t *testing.T) {
	s := faulty.New(mem.New(), faulty.FailGetRange(nil).OnNth(2).Crashing())
	mustPut(t, s, "k", "abcdef")
	if got, err := readRange(t, s, "k", 1, 2); err != nil || got != "bc" {
		t.Fatalf("first GetRange = %q, %v", got, err)
	}
	if _, err := readRange(t, s, "k", 1, 2); !errors.Is(err, faulty.ErrInjected) {
		t.Fatalf("second GetRange error = %v, want injected", err)
	}
	if !s.Crashed() {
		t.Fatal("a crashing GetRange fault did not crash the store")
	}
	if _, err := readRange(t, s, "k", 0, 1); !errors.Is(err, faulty.ErrCrashed) {
		t.Errorf("GetRange after the crash: %v, want ErrCrashed", err)
	}
	if _, err := read(t, s, "k"); !errors.Is(err, faulty.ErrCrashed) {
		t.Errorf("Get after the crash: %v, want ErrCrashed", err)
	}
	if s.Fired() != 1 {
		t.Errorf("Fired = %d, want 1", s.Fired())
	}
	if faulty.OpGetRange.String() != "GetRange" {
		t.Errorf("OpGetRange.String() = %q", faulty.OpGetRange.String())
	}
}
