package tokenize

import (
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// model is the tokenization model stage: one pre-token in, IDs out.
type model interface {
	tokenize(s string) ([]int64, error)
	vocab() map[string]int
}

type modelJSON struct {
	Type                    string          `json:"type"`
	UnkToken                *string         `json:"unk_token"`
	UnkID                   *int            `json:"unk_id"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	MaxInputCharsPerWord    *int            `json:"max_input_chars_per_word"`
	FuseUnk                 *bool           `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

// buildModel builds the model; added maps added-token contents to IDs and is
// used to resolve an unk_token that only exists as an added token.
func buildModel(raw json.RawMessage, added map[string]int) (model, error) {
	if isNull(raw) {
		return nil, errors.New("no model")
	}
	var m modelJSON
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	typ := m.Type
	if typ == "" { // older files (e.g. bert-base-uncased) omit the type
		switch {
		case !isNull(m.Merges):
			typ = "BPE"
		case len(strings.TrimSpace(string(m.Vocab))) > 0 && strings.TrimSpace(string(m.Vocab))[0] == '[':
			typ = "Unigram"
		case m.MaxInputCharsPerWord != nil || m.ContinuingSubwordPrefix != nil:
			typ = "WordPiece"
		default:
			typ = "WordLevel"
		}
	}
	switch typ {
	case "WordPiece":
		return newWordPiece(m, added)
	case "BPE":
		return newBPE(m)
	case "Unigram":
		return newUnigram(m)
	case "WordLevel":
		v, err := mapVocab(m.Vocab)
		if err != nil {
			return nil, err
		}
		w := &wordLevel{v: v, unk: -1}
		if m.UnkToken != nil {
			if id, ok := v[*m.UnkToken]; ok {
				w.unk = id
			}
		}
		return w, nil
	}
	return nil, fmt.Errorf("unsupported model type %q", typ)
}

func mapVocab(raw json.RawMessage) (map[string]int, error) {
	var v map[string]int
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("model vocab: %w", err)
	}
	return v, nil
}

func str(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

// ---- WordLevel ----

type wordLevel struct {
	v   map[string]int
	unk int
}

func (w *wordLevel) vocab() map[string]int { return w.v }
func (w *wordLevel) tokenize(s string) ([]int64, error) {
	if id, ok := w.v[s]; ok {
		return []int64{int64(id)}, nil
	}
	if w.unk < 0 {
		return nil, errors.New("WordLevel: unknown token and no unk_token")
	}
	return []int64{int64(w.unk)}, nil
}

// ---- WordPiece (tokenizers::models::wordpiece) ----

type wordPiece struct {
	v        map[string]int
	unk      int
	prefix   string
	maxChars int
}

func newWordPiece(m modelJSON, added map[string]int) (*wordPiece, error) {
	v, err := mapVocab(m.Vocab)
	if err != nil {
		return nil, err
	}
	w := &wordPiece{v: v, prefix: str(m.ContinuingSubwordPrefix, "##"), maxChars: 100}
	if m.MaxInputCharsPerWord != nil {
		w.maxChars = *m.MaxInputCharsPerWord
	}
	unk := str(m.UnkToken, "[UNK]")
	w.unk = -1
	if id, ok := v[unk]; ok {
		w.unk = id
	} else if id, ok := added[unk]; ok {
		w.unk = id
	}
	return w, nil
}

func (w *wordPiece) vocab() map[string]int { return w.v }

func (w *wordPiece) tokenize(s string) ([]int64, error) {
	unk := func() ([]int64, error) {
		if w.unk < 0 {
			return nil, errors.New("WordPiece: unknown word and unk_token is not in the vocab")
		}
		return []int64{int64(w.unk)}, nil
	}
	if utf8.RuneCountInString(s) > w.maxChars {
		return unk()
	}
	var out []int64
	for start := 0; start < len(s); {
		end, found := len(s), -1
		for start < end {
			sub := s[start:end]
			if start > 0 {
				sub = w.prefix + sub
			}
			if id, ok := w.v[sub]; ok {
				found = id
				break
			}
			_, size := utf8.DecodeLastRuneInString(s[:end])
			end -= size
		}
		if found < 0 {
			return unk()
		}
		out = append(out, int64(found))
		start = end
	}
	return out, nil
}

// ---- BPE (tokenizers::models::bpe) ----

type bpeModel struct {
	v       map[string]int
	ranks   map[[2]string]int
	unk     *string
	prefix  string
	suffix  string
	fuseUnk bool
	byteFB  bool

	ignoreMerges bool
}

func newBPE(m modelJSON) (*bpeModel, error) {
	v, err := mapVocab(m.Vocab)
	if err != nil {
		return nil, err
	}
	b := &bpeModel{v: v, ranks: map[[2]string]int{}, unk: m.UnkToken,
		prefix: str(m.ContinuingSubwordPrefix, ""), suffix: str(m.EndOfWordSuffix, ""),
		fuseUnk: m.FuseUnk != nil && *m.FuseUnk, byteFB: m.ByteFallback, ignoreMerges: m.IgnoreMerges}
	if b.unk != nil {
		if _, ok := v[*b.unk]; !ok {
			return nil, fmt.Errorf("BPE: unk_token %q not in vocab", *b.unk)
		}
	}
	var merges []json.RawMessage
	if !isNull(m.Merges) {
		if err := json.Unmarshal(m.Merges, &merges); err != nil {
			return nil, fmt.Errorf("BPE merges: %w", err)
		}
	}
	for rank, raw := range merges {
		var pair [2]string
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			a, c, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("BPE merge %d: %q is not a pair", rank, s)
			}
			pair = [2]string{a, c}
		} else {
			var arr []string
			if err := json.Unmarshal(raw, &arr); err != nil || len(arr) != 2 {
				return nil, fmt.Errorf("BPE merge %d: not a pair", rank)
			}
			pair = [2]string{arr[0], arr[1]}
		}
		if _, ok := v[pair[0]+strings.TrimPrefix(pair[1], b.prefix)]; !ok {
			continue // tokenizers rejects merges whose result is not in the vocab
		}
		if _, dup := b.ranks[pair]; !dup {
			b.ranks[pair] = rank
		}
	}
	return b, nil
}

func (b *bpeModel) vocab() map[string]int { return b.v }

func (b *bpeModel) tokenize(s string) ([]int64, error) {
	// Initial symbols: one per character, with prefix/suffix as in merge_word.
	var syms []string
	var unkRun bool
	for i, r := range s {
		end := i + utf8.RuneLen(r)
		sym := string(r)
		if i > 0 {
			sym = b.prefix + sym
		}
		if end == len(s) {
			sym += b.suffix
		}
		if _, ok := b.v[sym]; ok {
			syms = append(syms, sym)
			unkRun = false
			continue
		}
		if b.byteFB {
			ok := true
			var bs []string
			for _, c := range []byte(string(r)) {
				t := fmt.Sprintf("<0x%02X>", c)
				if _, found := b.v[t]; !found {
					ok = false
					break
				}
				bs = append(bs, t)
			}
			if ok {
				syms = append(syms, bs...)
				unkRun = false
				continue
			}
		}
		if b.unk == nil {
			continue // tokenizers drops the character
		}
		if b.fuseUnk && unkRun {
			continue
		}
		syms = append(syms, "\x00unk")
		unkRun = true
	}
	syms = b.merge(syms)
	out := make([]int64, len(syms))
	for i, sym := range syms {
		if sym == "\x00unk" {
			out[i] = int64(b.v[*b.unk])
			continue
		}
		out[i] = int64(b.v[sym])
	}
	return out, nil
}

// merge applies the merges: repeatedly the lowest-ranked adjacent pair,
// leftmost on ties, as tokenizers' merge_word does. Pairs wait in a min-heap
// keyed by (rank, left position) over a linked list of symbols, so a word
// of n characters costs O(n log n) rather than O(n²).
func (b *bpeModel) merge(syms []string) []string {
	if len(syms) < 2 {
		return syms
	}
	next := make([]int, len(syms)) // -1 at the end
	prev := make([]int, len(syms)) // -1 at the start
	version := make([]int, len(syms))
	for i := range syms {
		next[i], prev[i] = i+1, i-1
	}
	next[len(syms)-1] = -1
	h := &pairHeap{}
	push := func(l int) {
		if l < 0 || next[l] < 0 {
			return
		}
		r := next[l]
		if rank, ok := b.ranks[[2]string{syms[l], syms[r]}]; ok {
			heap.Push(h, pairEntry{rank: rank, left: l, right: r, lv: version[l], rv: version[r]})
		}
	}
	for i := 0; i+1 < len(syms); i++ {
		push(i)
	}
	for h.Len() > 0 {
		e := heap.Pop(h).(pairEntry)
		l, r := e.left, e.right
		if version[l] != e.lv || version[r] != e.rv || next[l] != r {
			continue // stale: one side has merged since
		}
		syms[l] += strings.TrimPrefix(syms[r], b.prefix)
		version[l]++
		version[r] = -1 // gone
		next[l] = next[r]
		if next[l] >= 0 {
			prev[next[l]] = l
		}
		push(prev[l])
		push(l)
	}
	out := syms[:0]
	for i := 0; i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}

type pairEntry struct{ rank, left, right, lv, rv int }

// pairHeap orders candidate merges by rank, then by left position.
type pairHeap []pairEntry

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].left < h[j].left
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairEntry)) }
func (h *pairHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// ---- Unigram (tokenizers::models::unigram, Viterbi) ----

type unigram struct {
	v        map[string]int
	scores   []float64
	unk      int
	unkScore float64
	maxLen   int // longest piece in bytes
	fuseUnk  bool
	byteFB   bool
}

func newUnigram(m modelJSON) (*unigram, error) {
	var entries [][2]json.RawMessage
	if err := json.Unmarshal(m.Vocab, &entries); err != nil {
		return nil, fmt.Errorf("Unigram vocab: %w", err)
	}
	u := &unigram{v: make(map[string]int, len(entries)), unk: -1, fuseUnk: true, byteFB: m.ByteFallback}
	if m.FuseUnk != nil {
		u.fuseUnk = *m.FuseUnk
	}
	minScore := math.Inf(1)
	for i, e := range entries {
		var piece string
		var score float64
		if err := json.Unmarshal(e[0], &piece); err != nil {
			return nil, fmt.Errorf("Unigram vocab entry %d: %w", i, err)
		}
		if err := json.Unmarshal(e[1], &score); err != nil {
			return nil, fmt.Errorf("Unigram vocab entry %d: %w", i, err)
		}
		u.v[piece] = i // duplicates: the last one wins, as in tokenizers' HashMap
		u.scores = append(u.scores, score)
		minScore = math.Min(minScore, score)
		u.maxLen = max(u.maxLen, len(piece))
	}
	if m.UnkID != nil {
		if *m.UnkID < 0 || *m.UnkID >= len(entries) {
			return nil, fmt.Errorf("Unigram: unk_id %d out of range", *m.UnkID)
		}
		u.unk = *m.UnkID
	}
	u.unkScore = minScore - 10 // kUnkPenalty
	return u, nil
}

func (u *unigram) vocab() map[string]int { return u.v }

func (u *unigram) tokenize(s string) ([]int64, error) {
	if s == "" {
		return nil, nil
	}
	type node struct {
		score float64
		start int
		id    int // -1: unk
		set   bool
	}
	best := make([]node, len(s)+1)
	best[0].set = true
	for st := 0; st < len(s); {
		_, first := utf8.DecodeRuneInString(s[st:])
		if best[st].set {
			single := false
			for en := st + first; en <= len(s) && en-st <= u.maxLen; {
				if id, ok := u.v[s[st:en]]; ok {
					if en-st == first {
						single = true
					}
					c := best[st].score + u.scores[id]
					if !best[en].set || c > best[en].score {
						best[en] = node{score: c, start: st, id: id, set: true}
					}
				}
				if en == len(s) {
					break
				}
				_, size := utf8.DecodeRuneInString(s[en:])
				en += size
			}
			if !single {
				en := st + first
				c := best[st].score + u.unkScore
				if !best[en].set || c > best[en].score {
					best[en] = node{score: c, start: st, id: -1, set: true}
				}
			}
		}
		st += first
	}
	type piece struct {
		start, end, id int
	}
	var rev []piece
	for en := len(s); en > 0; {
		n := best[en]
		rev = append(rev, piece{n.start, en, n.id})
		en = n.start
	}
	var out []int64
	prevUnk := false
	for i := len(rev) - 1; i >= 0; i-- {
		p := rev[i]
		if p.id >= 0 && p.id != u.unk {
			out = append(out, int64(p.id))
			prevUnk = false
			continue
		}
		if u.byteFB {
			okAll := true
			var bs []int64
			for _, c := range []byte(s[p.start:p.end]) {
				id, ok := u.v[fmt.Sprintf("<0x%02X>", c)]
				if !ok {
					okAll = false
					break
				}
				bs = append(bs, int64(id))
			}
			if okAll {
				out = append(out, bs...)
				prevUnk = false
				continue
			}
		}
		if u.unk < 0 {
			return nil, errors.New("Unigram: unknown piece and no unk_id")
		}
		if u.fuseUnk && prevUnk {
			continue
		}
		out = append(out, int64(u.unk))
		prevUnk = true
	}
	return out, nil
}
