package tokenize

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenizer is loaded from a tokenizer.json; it is safe for concurrent
// Encode calls.
type Tokenizer struct {
	path      string
	normalize normalizerFunc
	preTok    preTokenizerFunc
	post      postProcessor
	added     []addedToken // sorted by decreasing content length
	// addedByFirst lists, per first byte, the indices into added of the
	// tokens starting with it (in added's order), so that splitting a text
	// looks at a handful of candidates per position instead of all.
	addedByFirst [256][]int
	vocabSize    int // max id + 1 over model vocab and added tokens

	maxLength      int
	modelMaxLength int
	padID          int64

	ignoreMerges bool
	model        model // read-only after Load
}

type addedToken struct {
	id                   int
	content              string
	normalized           bool
	lstrip, rstrip, word bool
}

type fileJSON struct {
	AddedTokens []struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Truncation    *struct {
		MaxLength int `json:"max_length"`
	} `json:"truncation"`
	Padding *struct {
		PadID int64 `json:"pad_id"`
	} `json:"padding"`
	Model json.RawMessage `json:"model"`
}

// Load reads path (a tokenizer.json). If tokenizer_config.json or
// special_tokens_map.json sit next to it they are read for pad_token and
// model_max_length. Errors name the file.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenize: read %s: %w", path, err)
	}
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenize: load %s: %w", path, err)
	}
	t.path = path
	if err := t.readSideConfigs(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return t, nil
}

func parse(data []byte) (t *Tokenizer, err error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse JSON: %w", err)
	}
	t = &Tokenizer{}
	if f.Truncation != nil && f.Truncation.MaxLength > 0 {
		t.maxLength = f.Truncation.MaxLength
	}
	if t.normalize, err = buildNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.preTok, err = buildPreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if t.post, err = buildPostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	addedIDs := make(map[string]int, len(f.AddedTokens))
	for _, a := range f.AddedTokens {
		addedIDs[a.Content] = a.ID
	}
	if t.model, err = buildModel(f.Model, addedIDs); err != nil {
		return nil, err
	}
	if bm, ok := t.model.(*bpeModel); ok && bm.ignoreMerges {
		t.ignoreMerges = true
	}
	for _, id := range t.model.vocab() {
		t.vocabSize = max(t.vocabSize, id+1)
	}
	for _, a := range f.AddedTokens {
		if a.Content == "" {
			continue
		}
		t.vocabSize = max(t.vocabSize, a.ID+1)
		at := addedToken{id: a.ID, content: a.Content, normalized: a.Normalized && !a.Special,
			lstrip: a.LStrip, rstrip: a.RStrip, word: a.SingleWord}
		if a.Normalized && !a.Special && t.normalize != nil {
			// HF matches normalized added tokens on the normalized text, so
			// their content is normalized too.
			if c, err := t.normalize(a.Content); err == nil && c != "" {
				at.content = c
			}
		}
		t.added = append(t.added, at)
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].content) > len(t.added[j].content) })
	for i, a := range t.added {
		t.addedByFirst[a.content[0]] = append(t.addedByFirst[a.content[0]], i)
	}
	for _, id := range t.post.ids() {
		t.vocabSize = max(t.vocabSize, id+1)
	}
	if f.Padding != nil {
		t.padID = f.Padding.PadID
	} else {
		t.padID = -1 // resolved from side configs
	}
	return t, nil
}

type sideConfig struct {
	PadToken       json.RawMessage `json:"pad_token"`
	ModelMaxLength json.RawMessage `json:"model_max_length"`
}

func (t *Tokenizer) readSideConfigs(dir string) error {
	var padTokens []string
	for _, name := range []string{"tokenizer_config.json", "special_tokens_map.json"} {
		p := filepath.Join(dir, name)
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("tokenize: read %s: %w", p, err)
		}
		var c sideConfig
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("tokenize: parse %s: %w", p, err)
		}
		if tok := tokenString(c.PadToken); tok != "" {
			padTokens = append(padTokens, tok)
		}
		if t.modelMaxLength == 0 && !isNull(c.ModelMaxLength) {
			var v float64
			if err := json.Unmarshal(c.ModelMaxLength, &v); err == nil && v > 0 && v <= math.MaxInt32 {
				t.modelMaxLength = int(v)
			}
		}
	}
	if t.padID >= 0 {
		return nil
	}
	t.padID = 0
	for _, tok := range padTokens {
		if id, ok := t.tokenID(tok); ok {
			t.padID = int64(id)
			break
		}
	}
	return nil
}

// tokenString reads a special token given as a string or {"content": ...}.
func tokenString(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Content
	}
	return ""
}

func (t *Tokenizer) tokenID(tok string) (int, bool) {
	for _, a := range t.added {
		if a.content == tok {
			return a.id, true
		}
	}
	id, ok := t.model.vocab()[tok]
	return id, ok
}

// MaxLength is truncation.max_length of tokenizer.json, 0 when absent.
func (t *Tokenizer) MaxLength() int { return t.maxLength }

// ModelMaxLength is model_max_length of tokenizer_config.json (or
// special_tokens_map.json), 0 when absent or a "no limit" sentinel.
func (t *Tokenizer) ModelMaxLength() int { return t.modelMaxLength }

// PadID is padding.pad_id of tokenizer.json; else the pad_token of
// tokenizer_config.json / special_tokens_map.json looked up in the vocabulary
// and added tokens; else 0.
func (t *Tokenizer) PadID() int64 { return t.padID }

// VocabSize is one more than the largest token ID the tokenizer can produce.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// Padding selects the padded length of the rows of one Encode call.
type Padding int

const (
	// PadMaxLength pads every row to Options.MaxLength.
	PadMaxLength Padding = iota
	// PadLongest pads every row to the longest row of the call.
	PadLongest
)

// Options configure Encode.
type Options struct {
	MaxLength int // > 0 required; rows are truncated to it
	Padding   Padding
	PadID     int64
}

// Encoded holds Rows rows of Len tokens each, row-major.
type Encoded struct {
	Rows, Len                   int
	IDs, AttentionMask, TypeIDs []int64
}

// Encode tokenizes texts with special tokens added (the post-processor),
// truncating each row to o.MaxLength the way HF does with
// add_special_tokens=True and truncation=True (the special tokens are kept,
// content is cut from the end), and pads on the right with o.PadID (mask 0,
// type 0).
func (t *Tokenizer) Encode(ctx context.Context, texts []string, o Options) (Encoded, error) {
	if o.MaxLength <= 0 {
		return Encoded{}, fmt.Errorf("tokenize: MaxLength must be > 0, got %d", o.MaxLength)
	}
	if o.Padding != PadMaxLength && o.Padding != PadLongest {
		return Encoded{}, fmt.Errorf("tokenize: unknown padding mode %d", o.Padding)
	}
	nAdded := t.post.added()
	if o.MaxLength < nAdded {
		return Encoded{}, fmt.Errorf("tokenize: MaxLength %d is less than the %d special tokens added", o.MaxLength, nAdded)
	}
	type row struct{ ids, types []int64 }
	rows := make([]row, len(texts))
	longest := 0
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return Encoded{}, fmt.Errorf("tokenize: %w", err)
		}
		content, err := t.encodeContent(text)
		if err != nil {
			return Encoded{}, fmt.Errorf("tokenize: text %d: %w", i, err)
		}
		if keep := o.MaxLength - nAdded; len(content) > keep {
			content = content[:keep]
		}
		ids, types := t.post.apply(content)
		rows[i] = row{ids, types}
		longest = max(longest, len(ids))
	}
	n := o.MaxLength
	if o.Padding == PadLongest {
		n = longest
	}
	e := Encoded{Rows: len(texts), Len: n,
		IDs: make([]int64, len(texts)*n), AttentionMask: make([]int64, len(texts)*n), TypeIDs: make([]int64, len(texts)*n)}
	for i, r := range rows {
		base := i * n
		copy(e.IDs[base:base+n], r.ids)
		copy(e.TypeIDs[base:base+n], r.types)
		for j := range n {
			if j < len(r.ids) {
				e.AttentionMask[base+j] = 1
			} else {
				e.IDs[base+j] = o.PadID
			}
		}
	}
	return e, nil
}

// encodeContent returns the IDs of text without special tokens.
func (t *Tokenizer) encodeContent(text string) ([]int64, error) {
	text = strings.ToValidUTF8(text, "\uFFFD")
	var ids []int64
	var pieces []string
	// 1. Added tokens that are not normalized are matched on the raw text.
	for _, seg := range t.splitAdded(text, false) {
		if seg.id >= 0 {
			ids = append(ids, int64(seg.id))
			continue
		}
		s := seg.text
		if t.normalize != nil {
			var err error
			if s, err = t.normalize(s); err != nil {
				return nil, err
			}
		}
		// 2. Normalized added tokens are matched on the normalized text.
		for _, sub := range t.splitAdded(s, true) {
			if sub.id >= 0 {
				ids = append(ids, int64(sub.id))
				continue
			}
			pieces = pieces[:0]
			pieces = append(pieces, sub.text)
			if t.preTok != nil {
				pieces = t.preTok(pieces, seg.start == 0 && sub.start == 0)
			}
			for _, p := range pieces {
				got, err := t.modelTokenize(p)
				if err != nil {
					return nil, err
				}
				ids = append(ids, got...)
			}
		}
	}
	return ids, nil
}

func (t *Tokenizer) modelTokenize(p string) (ids []int64, err error) {
	if p == "" {
		return nil, nil
	}
	if t.ignoreMerges {
		if id, ok := t.model.vocab()[p]; ok {
			return []int64{int64(id)}, nil
		}
	}
	ids, err = t.model.tokenize(p)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return ids, nil
}

type segment struct {
	text  string
	start int // byte offset in the split string
	id    int // added token id, or -1 for text
}

// splitAdded extracts added tokens (leftmost-longest) whose normalized flag
// equals normalized.
func (t *Tokenizer) splitAdded(s string, normalized bool) []segment {
	var out []segment
	textStart := 0
	emit := func(end int) {
		if end > textStart {
			out = append(out, segment{text: s[textStart:end], start: textStart, id: -1})
		}
	}
	for i := 0; i < len(s); {
		matched := false
		for _, ai := range t.addedByFirst[s[i]] {
			a := t.added[ai]
			if a.normalized != normalized || !strings.HasPrefix(s[i:], a.content) {
				continue
			}
			st, en := i, i+len(a.content)
			if a.word && !isWordBoundary(s, st, en) {
				continue
			}
			if a.lstrip {
				st = len(strings.TrimRightFunc(s[:st], unicode.IsSpace))
				st = max(st, textStart)
			}
			if a.rstrip {
				en = len(s) - len(strings.TrimLeftFunc(s[en:], unicode.IsSpace))
			}
			emit(st)
			out = append(out, segment{text: s[st:en], start: st, id: a.id})
			textStart, i, matched = en, en, true
			break
		}
		if !matched {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
	}
	emit(len(s))
	return out
}

func isWordBoundary(s string, st, en int) bool {
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
	if st > 0 {
		if r, _ := utf8.DecodeLastRuneInString(s[:st]); isWord(r) {
			return false
		}
	}
	if en < len(s) {
		if r, _ := utf8.DecodeRuneInString(s[en:]); isWord(r) {
			return false
		}
	}
	return true
}

// isNull reports an absent or JSON-null field.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

func utf8RuneLen(r rune) int {
	// Inputs are made valid UTF-8 before tokenization, so RuneLen is never -1.
	return max(utf8.RuneLen(r), 1)
}
