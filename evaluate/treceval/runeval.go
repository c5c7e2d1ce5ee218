package treceval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Ties selects the order of equal scores within a query.
type Ties int

// Tie rules of `--ties`.
const (
	TiesTREC Ties = iota // document ID, descending byte order (trec_eval)
	TiesRank             // rank column ascending, then document ID descending
)

func (t Ties) String() string {
	if t == TiesRank {
		return "rank"
	}
	return "trec"
}

// ParseTies parses "trec" or "rank".
func ParseTies(s string) (Ties, error) {
	switch s {
	case "trec":
		return TiesTREC, nil
	case "rank":
		return TiesRank, nil
	}
	return 0, fmt.Errorf("ties must be trec or rank; got %q", s)
}

// Options configure an evaluation. The zero value is not useful on its own;
// start from DefaultOptions.
type Options struct {
	Ks            []int  // cut-offs, order kept (SPEC §3.1)
	PrimaryMetric string // a reported metric: mrr, map, or precision/recall/hit_rate/ndcg@K with K in Ks
	Gain          string // retrieval.GainExponential or retrieval.GainLinear
	Ties          Ties
	Name          string // result name; "" = the tag of the first run line
	WorstQueries  int    // rows in diagnostics.worst_queries (≥ 0)
}

// DefaultOptions returns the SPEC §3.1 defaults: ks 1,5,10, ndcg@10,
// exponential gain, trec ties, 10 worst queries, name from the run tag.
func DefaultOptions() Options {
	def := retrieval.DefaultConfig()
	return Options{Ks: def.Ks, PrimaryMetric: def.PrimaryMetric, Gain: def.Gain, WorstQueries: def.WorstQueries}
}

// config is the retrieval configuration the report records. Similarity and
// precision do not apply to a run; similarity is recorded as "trec_run".
func (o Options) config() (retrieval.Config, error) {
	cfg := retrieval.DefaultConfig()
	cfg.Ks = append([]int(nil), o.Ks...)
	cfg.PrimaryMetric, cfg.Gain, cfg.WorstQueries = o.PrimaryMetric, o.Gain, o.WorstQueries
	if err := cfg.Validate(); err != nil { // with the defaults' valid similarity
		return cfg, err
	}
	cfg.Similarity = similarityName
	return cfg, nil
}

const (
	similarityName = "trec_run"
	extractorType  = "trec_run"
	defaultName    = "trec_run" // for a run without lines and no Name
)

// Stats counts what an evaluation saw.
type Stats struct {
	Lines               int    // run lines read (blank and comment lines excluded)
	RunQueries          int    // distinct query IDs in the run
	EvaluatedQueries    int    // qrels queries with a positive grade
	MissingQueries      int    // evaluated queries without run lines (score 0)
	IgnoredRunQueries   int    // run queries absent from the qrels
	IgnoredQrelsQueries int    // qrels queries without a positive grade
	Positives           int    // positive pairs of the evaluated queries
	MissingPositives    int    // of those, not listed by the run
	Tag                 string // tag of the first run line
	OtherTagLines       int    // lines whose tag differs from Tag
}

// Result is an evaluation's report and counts.
type Result struct {
	// Benchmark holds one extractor result (extractor_type "trec_run") and
	// marshals to the JSON report of SPEC §5.4; see Evaluate for how the
	// fields that need embeddings are filled.
	Benchmark *results.Benchmark
	Stats     Stats
	RunSHA256 string // of the run bytes read
}

// Evaluate scores the run read from r (runPath names it in messages)
// against q (SPEC §6.7).
//
// Every evaluated query (a qrels query with a positive grade) is scored; one
// the run lacks scores 0 on every metric and counts in the means. A positive
// the run does not list counts as never retrieved (metrics.QueryWithMissing).
// Run queries absent from the qrels, and qrels queries without a positive,
// are ignored, each kind with one warning giving its count. Further
// warnings report evaluated queries without run lines, positives the run
// does not list, and lines whose tag differs from the first line's, each
// with its count.
//
// Input errors are *formats.Error values naming runPath and the line: a
// line without exactly 6 fields, a rank that is not an integer, a score
// that is not a finite decimal number, a document listed twice for one
// query (naming both lines), a query whose lines are not contiguous.
// Invalid options fail with a *retrieval.ConfigError. Without any evaluated
// query the evaluation fails.
//
// In the report: per-query rows and means follow the qrels query order (see
// Qrels); score = metrics[primary]; the similarity diagnostics of §4.7 need
// the full candidate set and are omitted as null summaries, while
// eligible_queries (the evaluated query count) and worst_queries (from the
// per-query metrics) are filled. The dataset summary has modality
// "retrieval", query and gallery modality "unknown", n_queries = evaluated
// queries, n_gallery = distinct documents judged in the qrels,
// n_relevance_pairs = positives of the evaluated queries, n_exclusions 0,
// and a "content" identity whose key hashes the evaluated relevance. The
// recipe records the run tag, the tie rule and the SHA-256 of the run bytes;
// the protocol fingerprint covers the qrels identity, the configuration and
// the tie rule. metadata.similarity is "trec_run" and metadata.exact false:
// a run need not rank every candidate.
func Evaluate(ctx context.Context, q *Qrels, r io.Reader, runPath string, opts Options) (*Result, error) {
	return evaluateRun(ctx, q, r, runPath, opts, false, nil)
}

// evaluateRun is Evaluate; numbered streams (from groupByQuery) carry each
// line's original number before a TAB, and runSHA, when set, gives the
// digest of the original bytes.
func evaluateRun(ctx context.Context, q *Qrels, r io.Reader, runPath string, opts Options, numbered bool, runSHA func() string) (*Result, error) {
	t0 := time.Now()
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	if opts.Ties != TiesTREC && opts.Ties != TiesRank {
		return nil, fmt.Errorf("runeval: unknown tie rule %d", int(opts.Ties))
	}
	if q.NumQueries() == 0 {
		return nil, fmt.Errorf("%s: no query has a positive grade; nothing to evaluate", q.path)
	}
	gain := metrics.Exponential
	if cfg.Gain == retrieval.GainLinear {
		gain = metrics.Linear
	}
	h := sha256.New()
	e := &evaluator{
		q: q, ks: cfg.Ks, gain: gain, ties: opts.Ties, path: runPath,
		src:      newLineSource(io.TeeReader(r, h), runPath),
		numbered: numbered,
		set:      newDocSet(),
		docs:     newDocCounter(),
		first:    make([]int, len(q.allIDs)),
		last:     make([]int, len(q.allIDs)),
		unknown:  make(map[string]span),
		rows:     make([]metrics.Values, q.NumQueries()),
		seen:     make([]bool, q.NumQueries()),
	}
	if err := e.read(ctx); err != nil {
		return nil, err
	}
	e.finish()
	res := &Result{Stats: e.stats, RunSHA256: hex.EncodeToString(h.Sum(nil))}
	if runSHA != nil {
		res.RunSHA256 = runSHA()
	}
	name := opts.Name
	if name == "" {
		name = e.stats.Tag
	}
	if name == "" {
		name = defaultName
	}
	res.Benchmark, err = e.benchmark(cfg, name, res.RunSHA256, time.Since(t0))
	if err != nil {
		return nil, err
	}
	return res, nil
}

// span is the first and last line of a query's block.
type span struct{ first, last int }

type evaluator struct {
	q    *Qrels
	ks   []int
	gain metrics.Gain
	ties Ties
	path string
	src  *lineSource
	// numbered: every line is "<original line number>\t<run line>".
	numbered bool

	// The query block being read.
	cur      []byte // its query ID
	curKey   string // its ID when the qrels do not know it
	curAll   int32  // its qrels query index, or -1
	curFirst int
	cands    []cand
	arena    []byte // document IDs of cands
	set      *docSet
	docs     *docCounter // distinct documents of the whole run (n_gallery)

	first, last []int // block lines per qrels query; 0 = not seen
	unknown     map[string]span

	rows []metrics.Values // per evaluated query
	seen []bool

	tag      []byte
	otherTag int // first line with another tag

	// Scratch for scoring one query.
	hits          []int
	diff          []int
	ranks         []int
	grades, gmiss []float64
	found         []bool

	stats Stats
}

func (e *evaluator) read(ctx context.Context) error {
	if err := e.rejectBOM(); err != nil {
		return err
	}
	orig := 0 // original line number of a numbered line
	var f [runFields][]byte
	for {
		line, ok, err := e.src.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if e.src.line%8192 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if e.numbered {
			num, rest, _ := bytes.Cut(line, []byte{'\t'})
			orig, line = atoiBytes(num), rest
		}
		n := splitFields(line, &f)
		if n == 0 || f[0][0] == '#' {
			continue // blank or comment
		}
		ln := e.src.line
		if e.numbered {
			ln = orig
		}
		if n < runFields {
			// Fields after the tag are ignored, as trec_eval does.
			return formats.LineErrorf(e.path, ln, "malformed run line: expected 6 whitespace-separated fields (qid Q0 docid rank score tag), got %d", n)
		}
		e.stats.Lines++
		if e.stats.Lines == 1 {
			e.tag = append([]byte(nil), f[5]...)
		} else if !bytes.Equal(f[5], e.tag) {
			if e.stats.OtherTagLines == 0 {
				e.otherTag = ln
			}
			e.stats.OtherTagLines++
		}
		if !bytes.Equal(f[0], e.cur) { // also true on the first line: IDs are non-empty
			e.endBlock()
			if err := e.startBlock(f[0], ln); err != nil {
				return err
			}
		}
		var rank int64
		if e.ties == TiesRank { // trec_eval never reads the rank column
			if rank, err = parseRank(f[3]); err != nil {
				return e.fieldErr(ln, "rank", f[3], f[0], f[2], err)
			}
		}
		score, err := parseScore(f[4])
		if err != nil {
			return e.fieldErr(ln, "score", f[4], f[0], f[2], err)
		}
		off := len(e.arena)
		e.arena = append(e.arena, f[2]...)
		e.cands = append(e.cands, cand{score: score, rank: rank, off: off, end: len(e.arena), line: ln, pos: -1})
		e.docs.add(f[2])
		if prev := e.set.insert(e.cands, e.arena, len(e.cands)-1); prev >= 0 {
			return formats.LineErrorf(e.path, ln, "document %s is listed twice for query %s (lines %d and %d); a run lists each document at most once per query",
				quoteBytes(f[2]), quoteBytes(f[0]), e.cands[prev].line, ln)
		}
	}
	e.endBlock()
	return nil
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// rejectBOM fails on a leading UTF-8 byte order mark, which would silently
// become part of the first query ID (the qrels readers refuse it too).
func (e *evaluator) rejectBOM() error {
	b, _ := e.src.br.Peek(len(utf8BOM)) // a short or failed peek is reported by the next read
	if bytes.Equal(b, utf8BOM) {
		return formats.LineErrorf(e.path, 1, "file starts with a UTF-8 byte order mark; IDs are compared byte-exactly, so save the file without one")
	}
	return nil
}

func (e *evaluator) fieldErr(line int, what string, text, qid, doc []byte, err error) error {
	return formats.LineErrorf(e.path, line, "malformed %s %s for query %s, document %s: %v",
		what, quoteBytes(text), quoteBytes(qid), quoteBytes(doc), err)
}

// quoteBytes renders an ID or field as a JSON string literal (SPEC §1.3),
// cut at 200 bytes so one bad line cannot flood the terminal.
func quoteBytes(b []byte) string {
	const max = 200
	if len(b) <= max {
		return msgfmt.Quote(string(b))
	}
	return msgfmt.Quote(string(bytes.ToValidUTF8(b[:max], nil))) + "..."
}

// startBlock begins the lines of query qid at line ln, failing when the
// query already had a block.
func (e *evaluator) startBlock(qid []byte, ln int) error {
	e.cur = append(e.cur[:0], qid...)
	e.curFirst = ln
	e.cands, e.arena = e.cands[:0], e.arena[:0]
	e.set.reset()
	e.stats.RunQueries++
	if qi, ok := e.q.index[string(qid)]; ok {
		e.curAll = qi
		if e.first[qi] != 0 {
			return e.notContiguous(ln, e.first[qi], e.last[qi])
		}
		e.first[qi] = ln
		return nil
	}
	e.curAll = -1
	if s, dup := e.unknown[string(qid)]; dup {
		return e.notContiguous(ln, s.first, s.last)
	}
	e.curKey = string(qid)
	e.unknown[e.curKey] = span{first: ln}
	return nil
}

func (e *evaluator) notContiguous(ln, first, last int) error {
	earlier := fmt.Sprintf("lines %d-%d", first, last)
	if first == last {
		earlier = fmt.Sprintf("line %d", first)
	}
	return formats.LineErrorf(e.path, ln,
		"run lines of query %s are not contiguous: other queries' lines separate this line from its %s; group each query's lines together (for example with LC_ALL=C sort -s -k1,1), or pass --presorted=false to evaluate-run",
		quoteBytes(e.cur), earlier)
}

// endBlock scores the query whose lines were just read, if any.
func (e *evaluator) endBlock() {
	if len(e.cands) == 0 {
		return
	}
	last := e.cands[len(e.cands)-1].line
	if e.curAll < 0 {
		e.unknown[e.curKey] = span{e.curFirst, last}
		return
	}
	e.last[e.curAll] = last
	ev := e.q.evalOf[e.curAll]
	if ev < 0 {
		return // a qrels query without a positive
	}
	e.seen[ev] = true
	e.rows[ev] = e.scoreBlock(ev)
}

// cmp orders two candidates of one query: a < 0 means a ranks before b.
// Document IDs are distinct within a query, so distinct candidates never
// compare equal.
func (e *evaluator) cmp(a, b *cand) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	}
	if e.ties == TiesRank && a.rank != b.rank {
		if a.rank < b.rank {
			return -1
		}
		return 1
	}
	// Descending byte order of document IDs.
	return bytes.Compare(e.arena[b.off:b.end], e.arena[a.off:a.end])
}

// scoreBlock computes evaluated query ev's metrics from the current block.
//
// rank(p) = 1 + #{candidates before p}. Rather than sorting the block, the
// retrieved positives are sorted (P log P) and every other candidate is
// placed among them by binary search (n log P): candidate c adds one to the
// rank of every positive from the first one it precedes on.
func (e *evaluator) scoreBlock(ev int32) metrics.Values {
	lo, hi := e.q.positives(ev)
	e.hits = e.hits[:0]
	for i := range e.cands {
		c := &e.cands[i]
		if j := e.q.findPositive(lo, hi, e.arena[c.off:c.end]); j >= 0 {
			c.pos = j
			e.hits = append(e.hits, i)
		}
	}
	e.found = append(e.found[:0], make([]bool, hi-lo)...)
	e.ranks, e.grades, e.gmiss = e.ranks[:0], e.grades[:0], e.gmiss[:0]
	if len(e.hits) > 0 {
		slices.SortFunc(e.hits, func(a, b int) int { return e.cmp(&e.cands[a], &e.cands[b]) })
		e.diff = append(e.diff[:0], make([]int, len(e.hits)+1)...)
		lastHit := &e.cands[e.hits[len(e.hits)-1]]
		for i := range e.cands {
			c := &e.cands[i]
			if c.pos >= 0 || e.cmp(c, lastHit) > 0 {
				continue // a positive, or after every positive
			}
			// The first hit that c precedes (never equal: distinct documents).
			j, _ := slices.BinarySearchFunc(e.hits, c, func(h int, c *cand) int { return e.cmp(&e.cands[h], c) })
			e.diff[j]++
		}
		before := 0
		for j, h := range e.hits {
			before += e.diff[j]
			c := &e.cands[h]
			e.ranks = append(e.ranks, 1+j+before)
			e.grades = append(e.grades, e.q.posGrade[c.pos])
			e.found[c.pos-lo] = true
		}
	}
	for j, ok := range e.found {
		if !ok {
			e.gmiss = append(e.gmiss, e.q.posGrade[lo+j])
		}
	}
	e.stats.MissingPositives += len(e.gmiss)
	return metrics.QueryWithMissing(e.ranks, e.grades, e.gmiss, e.ks, e.gain)
}

// finish scores the evaluated queries the run lacks and fills the counts.
func (e *evaluator) finish() {
	for ev, ok := range e.seen {
		if ok {
			continue
		}
		lo, hi := e.q.positives(int32(ev))
		e.rows[ev] = metrics.QueryWithMissing(nil, nil, e.q.posGrade[lo:hi], e.ks, e.gain)
		e.stats.MissingQueries++
		e.stats.MissingPositives += hi - lo
	}
	e.stats.EvaluatedQueries = e.q.NumQueries()
	e.stats.Positives = e.q.NumPositives()
	e.stats.IgnoredRunQueries = len(e.unknown)
	for _, ev := range e.q.evalOf {
		if ev < 0 {
			e.stats.IgnoredQrelsQueries++
		}
	}
	e.stats.Tag = string(e.tag)
}

// warnings are the §6.7 warnings plus the counts a reader needs to trust a
// result that is lower than expected.
func (e *evaluator) warnings() []string {
	s := e.stats
	var ws []string
	if s.IgnoredRunQueries > 0 {
		ws = append(ws, fmt.Sprintf("%d run query(ies) absent from the qrels were ignored.", s.IgnoredRunQueries))
	}
	if s.IgnoredQrelsQueries > 0 {
		ws = append(ws, fmt.Sprintf("%d qrels query(ies) without a positive grade were ignored.", s.IgnoredQrelsQueries))
	}
	if s.MissingQueries > 0 {
		ws = append(ws, fmt.Sprintf("%d evaluated query(ies) have no run lines and score 0 on every metric.", s.MissingQueries))
	}
	if s.MissingPositives > 0 {
		ws = append(ws, fmt.Sprintf("%d of %d positive(s) are not in the run and count as never retrieved.", s.MissingPositives, s.Positives))
	}
	if s.OtherTagLines > 0 {
		ws = append(ws, fmt.Sprintf("%d run line(s) have a tag other than %s (first at line %d).", s.OtherTagLines, msgfmt.Quote(s.Tag), e.otherTag))
	}
	slices.Sort(ws)
	return ws
}
