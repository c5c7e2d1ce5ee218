package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/outputset"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/internal/kernel"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// benchFlags describe a synthetic scoring problem.
type benchFlags struct {
	queries, gallery, dim, positives int
	precision, similarity, kernel    string
	storage                          string
	threads, repeat                  int
	queryBatch, galleryBatch         int
	seed                             uint64
	calibrate                        time.Duration
	write                            string
	nnz                              int
	exhaustive                       bool
	placement                        string
}

func newBenchCmd(stdout io.Writer) *cobra.Command {
	var fl benchFlags
	def := retrieval.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the exact scoring path on a synthetic problem",
		Long: "Generates random embeddings and relevance, runs the real scoring path (kernels, rank\n" +
			"counting, nearest negatives) and prints the kernel, seconds, GFLOP/s (2·Q·G·D per run),\n" +
			"peak RSS and the ratio to this machine's fused multiply-add ceiling, measured by a\n" +
			"short calibration loop on one core.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd.Context(), &fl, stdout)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.queries, "queries", 4096, "number of queries")
	f.IntVar(&fl.gallery, "gallery", 65536, "number of gallery rows")
	f.IntVar(&fl.dim, "dim", 768, "embedding width")
	f.IntVar(&fl.positives, "positives", 1, "positives per query")
	f.StringVar(&fl.placement, "placement", "random", "where the positives lie: random (gallery rows drawn at random, scores in the bulk: the hardest case for a screen) or near (each positive is its query plus as much noise, cosine about 0.7, as relevant items in real embeddings)")
	f.StringVar(&fl.precision, "precision", "float64", "float64 or float32")
	f.StringVar(&fl.storage, "storage", "", "element type of the synthetic matrices, float32 (as most embedding files) or float64; default: the precision")
	f.StringVar(&fl.similarity, "similarity", "dot", "cosine, dot or squared_l2")
	f.StringVar(&fl.kernel, "kernel", "", "force a kernel (generic, avx2, avx512); default: the fastest available")
	f.IntVar(&fl.threads, "threads", 0, "worker goroutines, 0 = GOMAXPROCS")
	f.IntVar(&fl.repeat, "repeat", 1, "runs; the median is reported")
	f.IntVar(&fl.queryBatch, "query-batch-size", def.QueryBatchSize, "queries per score block")
	f.IntVar(&fl.galleryBatch, "gallery-batch-size", def.GalleryBatchSize, "gallery rows per score block")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the synthetic data")
	f.DurationVar(&fl.calibrate, "calibrate", time.Second, "duration of the FMA-ceiling calibration (0 skips it)")
	f.BoolVar(&fl.exhaustive, "exhaustive", false, "score every pair exactly (no float32 screen; same results, as VERTEBRAE_SCREEN=off)")
	f.IntVar(&fl.nnz, "nnz", 0, "make both endpoints sparse (CSR) with this many non-zeros per row (0 = dense)")
	f.StringVar(&fl.write, "write", "", "write the synthetic problem to DIR (queries.npy, gallery.npy, qrels.tsv) instead of scoring it")
	return cmd
}

func runBench(ctx context.Context, fl *benchFlags, stdout io.Writer) error {
	if fl.queries < 1 || fl.gallery < 1 || fl.dim < 1 || fl.positives < 1 || fl.positives > fl.gallery || fl.repeat < 1 || fl.threads < 0 {
		return usagef("bench needs --queries, --gallery, --dim, --repeat >= 1, 1 <= --positives <= --gallery and --threads >= 0")
	}
	if fl.placement != "random" && fl.placement != "near" {
		return usagef("--placement must be random or near, not %q", fl.placement)
	}
	if fl.placement == "near" && (fl.nnz > 0 || int64(fl.queries)*int64(fl.positives) > int64(fl.gallery)) {
		return usagef("--placement near needs dense rows (without --nnz) and --queries × --positives <= --gallery (every positive its own row)")
	}
	sim, err := rank.ParseSimilarity(fl.similarity)
	if err != nil {
		return usagef("--similarity: %v", err)
	}
	prec := rank.Float64
	switch fl.precision {
	case "float64":
	case "float32":
		prec = rank.Float32
	default:
		return usagef("--precision must be float64 or float32")
	}
	store32 := prec == rank.Float32
	switch fl.storage {
	case "":
	case "float32":
		store32 = true
	case "float64":
		store32 = false
	default:
		return usagef("--storage must be float32 or float64")
	}
	if fl.kernel != "" {
		if err := kernel.Use(fl.kernel); err != nil {
			return usagef("--kernel: %v", err)
		}
	}
	if fl.nnz < 0 || fl.nnz > fl.dim {
		return usagef("--nnz must lie in [0, --dim]")
	}
	if fl.nnz > 0 && fl.dim > math.MaxInt32 {
		return usagef("--dim must be at most %d for a sparse problem (CSR column indices are int32), got %d", math.MaxInt32, fl.dim)
	}
	if fl.nnz > 0 && fl.storage != "" {
		return usagef("--storage applies to dense problems only (sparse values are float32)")
	}
	if fl.nnz > 0 && fl.write != "" {
		return usagef("--write supports dense problems only")
	}
	ctx, restore, err := benchMemory(ctx, fl)
	if err != nil {
		return err
	}
	defer restore()
	t0 := time.Now()
	var p rank.Problem
	if fl.nnz > 0 {
		if p, err = synthProblem(ctx, fl.queries, fl.gallery, 0, fl.positives, store32, fl.seed); err != nil {
			return err
		}
		if p.Queries, err = synthSparse(ctx, fl.queries, fl.dim, fl.nnz, fl.seed+1); err != nil {
			return err
		}
		if p.Gallery, err = synthSparse(ctx, fl.gallery, fl.dim, fl.nnz, fl.seed+2); err != nil {
			return err
		}
	} else if p, err = synthProblem(ctx, fl.queries, fl.gallery, fl.dim, fl.positives, store32, fl.seed); err != nil {
		return err
	}
	if fl.placement == "near" {
		placeNear(p, fl.seed)
	}
	if fl.write != "" {
		return writeProblem(ctx, fl.write, p, stdout)
	}
	load := time.Since(t0)
	opts := rank.Options{Similarity: sim, Precision: prec, QueryBatch: fl.queryBatch, GalleryBatch: fl.galleryBatch, Threads: fl.threads, Exhaustive: fl.exhaustive}
	threads := fl.threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	flops := 2 * float64(fl.queries) * float64(fl.gallery) * float64(fl.dim)
	if fl.nnz > 0 {
		flops = 0 // sparse scoring: GFLOP/s and the ceiling ratio do not apply
	}
	kind := "dense float64 storage"
	if store32 {
		kind = "dense float32 storage"
	}
	if fl.nnz > 0 {
		kind = fmt.Sprintf("sparse (%d non-zeros per row, dense size %.1f GiB)", fl.nnz, float64(fl.queries+fl.gallery)*float64(fl.dim)*8/(1<<30))
	}
	fmt.Fprintf(stdout, "kernel %s, %s %s, %s, Q=%d G=%d D=%d positives=%d threads=%d blocks %d×%d\n",
		kernel.Name(), fl.precision, fl.similarity, kind, fl.queries, fl.gallery, fl.dim, fl.positives, threads, fl.queryBatch, fl.galleryBatch)
	fmt.Fprintf(stdout, "load: %.3f s (synthetic data)\n", load.Seconds())
	var secs []float64
	for i := 0; i < fl.repeat; i++ {
		start := time.Now()
		var st rank.Stats
		opts.Stats = &st
		res, err := rank.Score(ctx, p, opts)
		if err != nil {
			return err
		}
		s := time.Since(start).Seconds()
		secs = append(secs, s)
		tm := time.Now()
		benchMetrics(res)
		met := time.Since(tm)
		fmt.Fprintf(stdout, "run %d: %.3f s%s\n", i+1, s, rate(flops, s))
		to := time.Now()
		var ph strings.Builder
		writePhases(&ph, st, met)
		out := time.Since(to)
		fmt.Fprintf(stdout, "%s output %.3f s\n", ph.String(), out.Seconds())
	}
	med := median(secs)
	fmt.Fprintf(stdout, "median: %.3f s%s, peak RSS %s\n", med, rate(flops, med), peakRSS())
	if fl.calibrate > 0 && flops > 0 {
		ceiling, err := kernel.PeakGFLOPSContext(ctx, fl.precision == "float32", fl.calibrate)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "FMA ceiling (%s, one core, %s): %.1f GFLOP/s; this run: %.1f%% of %d × ceiling\n",
			kernel.PeakName(), fl.precision, ceiling, 100*flops/med/1e9/(ceiling*float64(threads)), threads)
	}
	return nil
}

// synthProblem builds random Gaussian embeddings stored in the working
// precision and `positives` random relevant rows per query (with d = 0 only
// the IDs and relevance). It returns ctx's error once ctx is done.
func synthProblem(ctx context.Context, nq, ng, d, positives int, store32 bool, seed uint64) (rank.Problem, error) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	mk := func(n int) (matrix.Matrix, error) {
		if err := ctx.Err(); err != nil {
			return nil, err // before allocating hundreds of MB
		}
		if store32 {
			v := make([]float32, n*d)
			for i := range v {
				if i%synthCheckEvery == 0 && ctx.Err() != nil {
					return nil, ctx.Err()
				}
				v[i] = float32(r.NormFloat64())
			}
			return matrix.NewDense32(n, d, v)
		}
		v := make([]float64, n*d)
		for i := range v {
			if i%synthCheckEvery == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			v[i] = r.NormFloat64()
		}
		return matrix.NewDense64(n, d, v)
	}
	p := rank.Problem{Relevance: make([][]retrieval.Positive, nq)}
	if d > 0 {
		var err error
		if p.Queries, err = mk(nq); err != nil {
			return p, err
		}
		if p.Gallery, err = mk(ng); err != nil {
			return p, err
		}
	}
	p.QueryIDs = make([]string, nq)
	for i := range p.QueryIDs {
		p.QueryIDs[i] = strconv.Itoa(i)
		idx := make([]int, 0, positives)
		for len(idx) < positives {
			j := r.IntN(ng)
			if !slices.Contains(idx, j) {
				idx = append(idx, j)
			}
		}
		slices.Sort(idx)
		for _, j := range idx {
			p.Relevance[i] = append(p.Relevance[i], retrieval.Positive{Index: j, Grade: 1})
		}
	}
	p.GalleryIDs = make([]string, ng)
	for i := range p.GalleryIDs {
		p.GalleryIDs[i] = strconv.Itoa(i)
	}
	return p, ctx.Err()
}

// placeNear makes every positive of the dense synthetic problem p its
// query plus independent Gaussian noise of the same scale (cosine about
// 0.7), so the positives stand apart from the bulk of the scores as
// relevant items do in real embeddings. Each positive gets a row of its
// own (a row shared by two queries is replaced by an unused one), so no
// positive is left in the bulk; the caller ensures there are enough rows.
func placeNear(p rank.Problem, seed uint64) {
	r := rand.New(rand.NewPCG(seed^0x5eed, seed))
	q, g := p.Queries.(*matrix.Dense), p.Gallery.(*matrix.Dense)
	d, ng := q.Cols(), g.Rows()
	used := make([]bool, ng)
	for i, pos := range p.Relevance {
		for k := range pos {
			for used[pos[k].Index] {
				pos[k].Index = r.IntN(ng)
			}
			used[pos[k].Index] = true
		}
		slices.SortFunc(pos, func(a, b retrieval.Positive) int { return a.Index - b.Index })
		for _, x := range pos {
			j := x.Index
			if q.DType() == matrix.Float32 {
				qv, gv := q.Float32Data()[i*d:(i+1)*d], g.Float32Data()[j*d:(j+1)*d]
				for k := range gv {
					gv[k] = qv[k] + float32(r.NormFloat64())
				}
				continue
			}
			qv, gv := q.Float64Data()[i*d:(i+1)*d], g.Float64Data()[j*d:(j+1)*d]
			for k := range gv {
				gv[k] = qv[k] + r.NormFloat64()
			}
		}
	}
}

// synthCheckEvery is how many values the synthetic generators draw between
// context checks.
const synthCheckEvery = 1 << 16

// writePhases renders one run's phases (SPEC §5 bench output): wall times
// of prepare, positives, the gallery pass and the merge; inside the pass the
// worker time (summed over workers) of the kernels — the screen when
// screening — and of counting, which includes the exact verification of
// undecided pairs; the undecided fraction and which screen ran (float32
// or int16); and the metrics time.
func writePhases(w io.Writer, st rank.Stats, metricsTime time.Duration) {
	screen, verify := "screen n/a (exhaustive)", ""
	kernelName := "score"
	if st.Screened {
		kernelName = "screen"
		frac := 0.0
		if st.Screen.Pairs > 0 {
			frac = float64(st.Screen.Exact) / float64(st.Screen.Pairs)
		}
		screen = fmt.Sprintf("undecided %d of %d pairs (%.3g)", st.Screen.Exact, st.Screen.Pairs, frac)
		verify = fmt.Sprintf(", %d blocks exact (%s screen)", st.Screen.ExactTiles, st.Screen.Kind)
	}
	fmt.Fprintf(w, "phases: prepare %.3f s, positives %.3f s, pass %.3f s [%s %.3f s, count+verify %.3f s worker time], merge %.3f s, metrics %.3f s; %s%s;",
		st.Prepare.Seconds(), st.Positives.Seconds(), st.Pass.Seconds(), kernelName, st.Kernel.Seconds(), st.Fold.Seconds(),
		st.Merge.Seconds(), metricsTime.Seconds(), screen, verify)
}

// benchMetrics computes what a run computes after scoring: the per-query
// metrics and the positive-similarity summary.
func benchMetrics(res []rank.QueryResult) {
	var pooled []float64
	for _, r := range res {
		grades := make([]float64, len(r.Positives))
		for i, x := range r.Positives {
			grades[i] = x.Grade
		}
		metrics.Query(r.Ranks, grades, []int{10}, metrics.Exponential)
		pooled = append(pooled, r.Scores...)
	}
	metrics.SummariseInPlace(pooled)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// peakRSS reads the process's peak resident set size (Linux VmHWM).
func peakRSS() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "n/a"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err == nil {
				return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
			}
		}
	}
	return "n/a"
}

// writeProblem stores a synthetic problem as files `retrieval run` reads, so
// the end-to-end path can be timed against the pure scoring path.
func writeProblem(ctx context.Context, dir string, p rank.Problem, stdout io.Writer) error {
	// The three files are one output set (SPEC §6.1): all or none.
	var set outputset.Set
	var paths []string
	for _, f := range []struct {
		name string
		m    matrix.Matrix
	}{{"queries.npy", p.Queries}, {"gallery.npy", p.Gallery}} {
		path := filepath.Join(dir, f.name)
		set.Add("--write", path, func(w io.Writer) error { return npy.WriteDense(w, f.m.(*matrix.Dense)) })
		paths = append(paths, path)
	}
	path := filepath.Join(dir, "qrels.tsv")
	set.Add("--write", path, func(w io.Writer) error {
		for q, ps := range p.Relevance {
			for _, x := range ps {
				if _, err := fmt.Fprintf(w, "%d\t%d\t1\n", q, x.Index); err != nil {
					return err
				}
			}
		}
		return nil
	})
	paths = append(paths, path)
	if err := set.Commit(ctx); err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Fprintln(stdout, p)
	}
	return nil
}

// synthSparse builds an n×d CSR matrix with nnz random columns per row and
// Gaussian float32 values.
func synthSparse(ctx context.Context, n, d, nnz int, seed uint64) (*matrix.CSR, error) {
	r := rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))
	indptr := make([]int64, n+1)
	indices := make([]int32, 0, n*nnz)
	vals := make([]float32, 0, n*nnz)
	cols := make(map[int32]bool, nnz)
	for i := 0; i < n; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		clear(cols)
		for len(cols) < nnz {
			cols[int32(r.IntN(d))] = true
		}
		row := make([]int32, 0, nnz)
		for c := range cols {
			row = append(row, c)
		}
		slices.Sort(row)
		for _, c := range row {
			indices = append(indices, c)
			vals = append(vals, float32(r.NormFloat64()))
		}
		indptr[i+1] = int64(len(indices))
	}
	return matrix.NewCSR32(n, d, indptr, indices, vals)
}

func rate(flops, secs float64) string {
	if flops == 0 {
		return ""
	}
	return fmt.Sprintf(", %.1f GFLOP/s", flops/secs/1e9)
}
