package rank

import "os"

// plan is every choice a run makes, taken once from the problem, the
// options, the CPU and the gallery rows of the pass: no stage decides
// anything on its own. Tests force choices through Options.tune, never
// through package state, so they can run in parallel.
type plan struct {
	sim        Similarity
	prec       Precision
	threads    int
	rows       rowSet // gallery rows of the pass (all, or one shard)
	keep       bool   // candidates are kept (TopN or FullRanking)
	sparse     bool   // both endpoints sparse: sparse tiles
	screens    screenPolicy
	gb         int     // gallery rows per pass block
	chunk      int     // most bytes of per-pair state of a query chunk (pairs under chunkPairs)
	chunkPairs bool    // chunk counts positive pairs (tests)
	window     int     // most values kept in the pooled median window
	buckets    bool    // bucket tables for the threshold searches
	subRows    int     // rows of an integer screen sub-block
	verify     int     // listed pairs at which a float64 block verifies early
	foldBytes  int     // per-query counting state a query block keeps near the core
	mergeMax   bool    // mutation test: counts merged with max instead of sum
	static     bool    // tests: the pass's blocks are dealt to the workers round-robin
	longRows   int     // tests: > 0 runs every exhaustive pass query-major in long blocks of this many rows
	scale      float64 // screen bound multiplier (mutation tests: < 1)
}

// screenPolicy says which screens a run may use.
type screenPolicy struct {
	allowed bool   // the run's shape admits screening at all
	force   string // "float32", "int8" or "int16": use it whatever it costs ("" = choose)
}

// tuning is the test-only part of Options: settings a user never needs,
// which tests use to reach every path with small inputs.
type tuning struct {
	screen     string  // "off", "float32", "int8", "int16": as VERTEBRAE_SCREEN; "auto": the plan's choice; "": the environment's
	boundScale float64 // multiplies every screen bound (0 = 1)
	chunkPairs int     // positive pairs per query chunk (0 = default)
	windowCap  int     // values kept in the pooled median window (0 = default)
	subRows    int     // integer screen sub-block rows, a multiple of kernel.Int16GalleryTile (0 = default)
	verify     int     // early verification of a float64 screened block (0 = default)
	noBuckets  bool    // plain binary searches only
	mergeMax   bool    // mutation: merge the workers' counts with max
	static     bool    // deal the pass's blocks round-robin (every worker gets some)
	longRows   int     // > 0: every exhaustive pass query-major, in long blocks of this many rows
}

const (
	defaultChunkBytes = 32 << 20
	defaultWindowCap  = 1 << 21
	defaultSubRows    = 512
	defaultVerify     = 1 << 15 // screen.md §8.3
	// foldStateBytes is the counting state (thresholds, bucket tables,
	// counters) of the queries of one tile that a worker keeps near its
	// core: larger states mean fewer queries per tile.
	foldStateBytes = 1 << 20
)

// ScreenEnv is the VERTEBRAE_SCREEN setting: "off" (exhaustive exact
// scoring), "float32", "int8" or "int16" (that screen wherever it applies,
// whatever it costs), or "" (the plan chooses).
func ScreenEnv() string {
	switch v := os.Getenv("VERTEBRAE_SCREEN"); v {
	case "off", "float32", "int8", "int16":
		return v
	}
	return ""
}

// newPlan makes the plan of a run of pr over gallery rows rows.
func newPlan(pr *prepared, rows rowSet) plan {
	o := pr.o
	t := o.tune
	if t == nil {
		t = &tuning{}
	}
	pl := plan{
		sim: o.Similarity, prec: o.Precision, threads: pr.threads, rows: rows,
		keep:   o.TopN > 0 || o.FullRanking,
		sparse: pr.q.csr != nil && pr.g.csr != nil,
		chunk:  orDefault(t.chunkPairs, defaultChunkBytes), chunkPairs: t.chunkPairs > 0, window: orDefault(t.windowCap, defaultWindowCap),
		buckets: !t.noBuckets, subRows: orDefault(t.subRows, defaultSubRows), verify: orDefault(t.verify, defaultVerify),
		foldBytes: foldStateBytes, mergeMax: t.mergeMax, static: t.static, longRows: t.longRows, scale: 1,
	}
	if t.boundScale != 0 {
		pl.scale = t.boundScale
	}
	env := t.screen
	switch env {
	case "":
		env = ScreenEnv()
	case "auto": // the plan's choice, whatever the environment says
		env = ""
	}
	// Screening needs a proven bound (dot and cosine), dense rows, and
	// exact scores only where a decision is uncertain: a run export needs
	// the exact score of every kept candidate.
	pl.screens.allowed = !o.Exhaustive && env != "off" && o.Similarity != SquaredL2 &&
		pr.q.csr == nil && pr.g.csr == nil && !pl.keep && pr.d < 1<<22
	pl.screens.force = env
	if env == "off" {
		pl.screens.force = ""
	}
	pl.gb = pl.galleryBlock(pr, o.GalleryBatch)
	return pl
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// maxBlockBytes bounds a produced (converted, normalised or densified) block
// of rows: wide sparse endpoints (a 30,000-term vocabulary) must not turn a
// 10,000-row gallery block into gigabytes. Block sizes never change results.
const maxBlockBytes = 64 << 20

// blockRows caps want rows of width d by maxBlockBytes.
func (pl *plan) blockRows(want, d int) int {
	size := 8
	if pl.prec == Float32 {
		size = 4
	}
	return max(1, min(want, maxBlockBytes/(d*size)))
}

// galleryBlock is the number of gallery rows of one task of the pass.
func (pl *plan) galleryBlock(pr *prepared, batch int) int {
	n := pl.rows.len()
	gb := min(batch, n)
	if !pl.sparse && pr.g.direct64 == nil && pr.g.direct32 == nil {
		gb = pl.blockRows(gb, pr.d)
	}
	// Every worker needs gallery blocks: a gallery of one block (the demo's
	// 5,000 rows under the default 10,000) would be scored on one thread.
	// At least 8 blocks, of at least 64 rows; the split does not depend on
	// the thread count.
	const minBlocks = 8
	return max(1, max(min(gb, (n+minBlocks-1)/minBlocks), min(gb, 64)))
}

// passBlocks splits positions [0, n) of the pass into its tasks, in order:
// blocks of gb rows, except that with at least four such blocks of 4096
// rows or more the last 2·gb rows go in blocks of a quarter of that, so
// workers that finish their share at different times wait for a quarter
// block at the end instead of a whole one. Like gb, the split does not
// depend on the thread count.
func passBlocks(n, gb int) [][2]int {
	var out [][2]int
	fine := n // where the quarter blocks start
	if gb >= 4096 && n >= 4*gb {
		fine = (n - 2*gb) / gb * gb
	}
	for g0 := 0; g0 < fine; g0 += gb {
		out = append(out, [2]int{g0, min(g0+gb, fine)})
	}
	if tail := n - fine; tail > 0 {
		k := (tail + (gb+3)/4 - 1) / ((gb + 3) / 4)
		for i := range k {
			out = append(out, [2]int{fine + i*tail/k, fine + (i+1)*tail/k})
		}
	}
	return out
}

// queryTile is the query rows of one tile of a chunk's pass: the default
// batch, fewer when the queries' counting state (about 24 bytes per
// threshold) would not stay near the core while a row is folded, but a
// whole vector of query lanes (kernel tiles hold 16 float32 queries).
func (pl *plan) queryTile(batch, most int) int {
	per := 24*most + 64
	return max(1, min(batch, max(16, pl.foldBytes/per)))
}

// intFits reports whether the integer screen of format f can pay on this
// run: the CPU has its SIMD tile (for the float64 protocol, with the
// undecided pairs re-scored in SIMD too) and the run is large enough;
// forced, it is the only integer screen tried.
func (pl *plan) intFits(f intFormat, pairs int64) bool {
	return pl.screens.force == f.name || pl.screens.force == "" && f.fast(pl.prec) && pairs >= screenIntMinPairs
}
