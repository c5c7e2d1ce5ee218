package tokenize

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// USELiteMaxLength is the number of tokens the Universal Sentence Encoder
// Lite graph reads per sentence (its ClipToMaxLength step drops the rest).
const USELiteMaxLength = 128

// useReserved is the number of leading vocabulary entries (unknown, <s>,
// </s>, three extra IDs) that never match text.
const useReserved = 6

// LoadUSELite reads the SentencePiece vocabulary of the Universal Sentence
// Encoder Lite (a JSON array of [piece, score] pairs, as shipped in
// vocab.json of the TF.js model) and returns a tokenizer equal to the one
// the TF.js model ships with (@tensorflow-models/universal-sentence-encoder,
// also in @energetic-ai/embeddings):
//
//   - the text is NFKC-normalised; a non-empty result gets a leading "▁" and
//     every space becomes "▁";
//   - the pieces are found by a Viterbi search over the piece scores on code
//     points, with that implementation's quirks kept: a best score of exactly
//     0 counts as unset, ties go to the later start, and the backward pass
//     steps back by each piece's UTF-16 length;
//   - a character no piece covers becomes ID 0, and consecutive unknowns
//     merge into one.
//
// No special tokens are added; rows are truncated to [USELiteMaxLength] and
// padded with ID 0. Errors name the file.
func LoadUSELite(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenize: read %s: %w", path, err)
	}
	t, err := parseUSELite(data)
	if err != nil {
		return nil, fmt.Errorf("tokenize: load %s: %w", path, err)
	}
	t.path = path
	return t, nil
}

func parseUSELite(data []byte) (*Tokenizer, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("USE-lite vocabulary: want a JSON array of [piece, score] pairs: %w", err)
	}
	if len(raw) <= useReserved {
		return nil, fmt.Errorf("USE-lite vocabulary has %d entries; want more than the %d reserved ones", len(raw), useReserved)
	}
	m := &useModel{pieces: make([]string, len(raw)), utf16: make([]int, len(raw)), v: make(map[string]int, len(raw)), root: &useTrieNode{}}
	for i, r := range raw {
		var pair []json.RawMessage
		var piece string
		var score float64
		if err := json.Unmarshal(r, &pair); err != nil || len(pair) != 2 ||
			json.Unmarshal(pair[0], &piece) != nil || json.Unmarshal(pair[1], &score) != nil {
			return nil, fmt.Errorf("USE-lite vocabulary entry %d: want [piece, score], got %.80s", i, r)
		}
		m.pieces[i] = piece
		for _, c := range piece {
			m.utf16[i]++
			if c >= 0x10000 {
				m.utf16[i]++
			}
		}
		if _, dup := m.v[piece]; !dup {
			m.v[piece] = i
		}
		if i >= useReserved {
			m.insert(piece, score, i)
		}
	}
	if m.utf16[0] < 1 {
		return nil, fmt.Errorf("USE-lite vocabulary entry 0 (the unknown piece) is empty")
	}
	return &Tokenizer{
		normalize: useNormalize,
		model:     m,
		vocabSize: len(raw),
		maxLength: USELiteMaxLength,
		padID:     0,
	}, nil
}

// useNormalize is NFKC, then "▁" in front and in place of every space.
func useNormalize(s string) (string, error) {
	n := norm.NFKC.String(s)
	if n == "" {
		return "", nil
	}
	return "\u2581" + strings.ReplaceAll(n, " ", "\u2581"), nil
}

type useTrieNode struct {
	children map[rune]*useTrieNode
	end      bool
	score    float64
	index    int
}

// useModel is the USE-lite Viterbi segmenter over one normalised string.
type useModel struct {
	pieces []string
	utf16  []int // UTF-16 length of each piece
	v      map[string]int
	root   *useTrieNode
}

func (m *useModel) vocab() map[string]int { return m.v }

func (m *useModel) insert(piece string, score float64, index int) {
	n := m.root
	rs := []rune(piece)
	for i, r := range rs {
		if n.children == nil {
			n.children = map[rune]*useTrieNode{}
		}
		c := n.children[r]
		if c == nil {
			c = &useTrieNode{}
			n.children[r] = c
		}
		n = c
		if i == len(rs)-1 { // a later duplicate piece overwrites, as in the reference
			n.end, n.score, n.index = true, score, index
		}
	}
}

type useArc struct {
	start int
	score float64
	index int
}

func (m *useModel) tokenize(s string) ([]int64, error) {
	sym := []rune(s)
	n := len(sym)
	// arcs[e] lists the pieces ending at e in increasing start order.
	arcs := make([][]useArc, n+1)
	for i := range n {
		found := false
		node := m.root.children[sym[i]]
		for j := i; j < n && node != nil; j++ {
			if node.end {
				arcs[j+1] = append(arcs[j+1], useArc{i, node.score, node.index})
				found = true
			}
			if j+1 < n {
				node = node.children[sym[j+1]]
			}
		}
		if !found {
			arcs[i+1] = append(arcs[i+1], useArc{i, 0, 0})
		}
	}
	best := make([]float64, n+1)
	words := make([]int, n+1)
	for e := 0; e <= n; e++ {
		for _, a := range arcs[e] {
			score := a.score + best[a.start]
			if best[e] == 0 || score >= best[e] {
				best[e], words[e] = score, a.index
			}
		}
	}
	var rev []int64
	for it := n; it > 0; it -= m.utf16[words[it]] {
		rev = append(rev, int64(words[it]))
	}
	out := make([]int64, 0, len(rev))
	prevUnk := false
	for _, id := range rev {
		if !(prevUnk && id == 0) {
			out = append(out, id)
		}
		prevUnk = id == 0
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
