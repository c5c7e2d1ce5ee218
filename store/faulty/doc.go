// Package faulty wraps a store.Store and injects failures, for tests of
// the layers above the store (package artifact): crash safety of artifact writes (SPEC §10.5 "a
// failure at any point leaves the previous generation readable and
// intact"), verification on read (checksum mismatch, truncated), and error
// paths in general. It is the one place such faults are made, so every
// backend and every caller is tested against the same faults.
//
// A Store passes every call to the wrapped store unless a Fault matches
// it. A Fault names the operation, which object names it applies to, which
// matching call fires it (every one, or only the Nth), and what happens:
//
//	s := faulty.New(mem.New(),
//		// the manifest write fails: data files are written, the commit
//		// point is not, as in a crash between the two
//		faulty.FailPut(faulty.Named("manifest.json")).Crashing(),
//	)
//	err := artifact.New(s).WriteArray(ctx, key, ...) // fails with faulty.ErrInjected
//	// ...then read the inner store directly: the old generation must verify.
//
//	faulty.FailNthPut(3)                        // the third Put fails before writing
//	faulty.FailPutAfter(faulty.Prefix("x/"), 1<<20) // the backend receives 1 MiB, then the reader fails
//	faulty.CorruptGet(faulty.Named("array-…npy"), 100) // byte 100 reads flipped
//	faulty.TruncateGet(nil, 10)                 // every object reads as its first 10 bytes
//	faulty.CorruptGetRange(nil, 0)              // the first byte of every ranged read reads flipped
//
// Crashing() turns a fault into a simulated process death: after it fires,
// every call fails with ErrCrashed, so code that "cleans up" after an error
// cannot reach the store (a killed process cleans up nothing). Inspect the
// result through the wrapped store, or call Reset.
//
// Every injected error matches ErrInjected (errors.Is); the Log records
// each call with its outcome, so a test can also assert the order of
// writes (e.g. the manifest is Put last).
package faulty
