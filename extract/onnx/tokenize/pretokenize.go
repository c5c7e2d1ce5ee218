package tokenize

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// preTokenizerFunc splits the pieces of one normalized segment further.
// first is true when the segment starts at the beginning of the input (used
// by Metaspace's prepend_scheme "first").
type preTokenizerFunc func(pieces []string, first bool) []string

type preTokenizerJSON struct {
	Type             string            `json:"type"`
	AddPrefixSpace   *bool             `json:"add_prefix_space"`
	UseRegex         *bool             `json:"use_regex"`
	Replacement      *string           `json:"replacement"`
	PrependScheme    *string           `json:"prepend_scheme"`
	Split            *bool             `json:"split"`
	Pattern          *patternJSON      `json:"pattern"`
	Behavior         string            `json:"behavior"`
	Invert           bool              `json:"invert"`
	IndividualDigits bool              `json:"individual_digits"`
	Delimiter        string            `json:"delimiter"`
	PreTokenizers    []json.RawMessage `json:"pretokenizers"`
}

type behavior int

const (
	bRemoved behavior = iota
	bIsolated
	bMergedWithPrevious
	bMergedWithNext
	bContiguous
)

func parseBehavior(s string, def behavior) (behavior, error) {
	switch s {
	case "":
		return def, nil
	case "Removed":
		return bRemoved, nil
	case "Isolated":
		return bIsolated, nil
	case "MergedWithPrevious":
		return bMergedWithPrevious, nil
	case "MergedWithNext":
		return bMergedWithNext, nil
	case "Contiguous":
		return bContiguous, nil
	}
	return 0, fmt.Errorf("unsupported split behavior %q", s)
}

// gpt2Pattern is the regex of tokenizers' ByteLevel pre-tokenizer.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func buildPreTokenizer(raw json.RawMessage) (preTokenizerFunc, error) {
	if isNull(raw) {
		return nil, nil
	}
	var p preTokenizerJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch p.Type {
	case "BertPreTokenizer":
		return eachPiece(func(s string) []string {
			var out []string
			for _, w := range splitRunes(s, isBertWhitespace, bRemoved) {
				out = append(out, splitRunes(w, isBertPunct, bIsolated)...)
			}
			return out
		}), nil
	case "Whitespace":
		pat, err := compileRegex(`\w+|[^\w\s]+`)
		if err != nil {
			return nil, err
		}
		return eachPiece(func(s string) []string { return splitPattern(s, pat, bRemoved, true) }), nil
	case "WhitespaceSplit":
		return eachPiece(func(s string) []string { return strings.FieldsFunc(s, unicode.IsSpace) }), nil
	case "Punctuation":
		b, err := parseBehavior(p.Behavior, bIsolated)
		if err != nil {
			return nil, err
		}
		return eachPiece(func(s string) []string { return splitRunes(s, isBertPunct, b) }), nil
	case "Digits":
		b := bContiguous
		if p.IndividualDigits {
			b = bIsolated
		}
		return eachPiece(func(s string) []string { return splitRunes(s, unicode.IsDigit, b) }), nil
	case "CharDelimiterSplit", "Delimiter":
		d := []rune(p.Delimiter)
		if len(d) != 1 {
			return nil, fmt.Errorf("pre_tokenizer %s: delimiter must be one character", p.Type)
		}
		return eachPiece(func(s string) []string {
			return splitRunes(s, func(r rune) bool { return r == d[0] }, bRemoved)
		}), nil
	case "Split":
		if p.Pattern == nil {
			return nil, fmt.Errorf("pre_tokenizer Split: missing pattern")
		}
		pat, err := compilePattern(*p.Pattern)
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		b, err := parseBehavior(p.Behavior, bRemoved)
		if err != nil {
			return nil, err
		}
		return eachPiece(func(s string) []string { return splitPattern(s, pat, b, p.Invert) }), nil
	case "ByteLevel":
		prefix, useRegex := boolOr(p.AddPrefixSpace, true), boolOr(p.UseRegex, true)
		pat, err := compileRegex(gpt2Pattern)
		if err != nil {
			return nil, err
		}
		return func(pieces []string, _ bool) []string {
			var out []string
			for _, s := range pieces {
				if prefix && !strings.HasPrefix(s, " ") {
					s = " " + s
				}
				subs := []string{s}
				if useRegex {
					subs = splitPattern(s, pat, bIsolated, false)
				}
				for _, sub := range subs {
					out = append(out, byteLevelMap(sub))
				}
			}
			return out
		}, nil
	case "Metaspace":
		repl := "▁"
		if p.Replacement != nil && *p.Replacement != "" {
			repl = *p.Replacement
		}
		scheme := "always"
		if p.PrependScheme != nil {
			scheme = strings.ToLower(*p.PrependScheme)
		} else if p.AddPrefixSpace != nil && !*p.AddPrefixSpace {
			scheme = "never"
		}
		if scheme != "always" && scheme != "first" && scheme != "never" {
			return nil, fmt.Errorf("pre_tokenizer Metaspace: unknown prepend_scheme %q", scheme)
		}
		split := boolOr(p.Split, true)
		rr := []rune(repl)
		return func(pieces []string, first bool) []string {
			var out []string
			for i, s := range pieces {
				s = strings.ReplaceAll(s, " ", repl)
				if !strings.HasPrefix(s, repl) && (scheme == "always" || (scheme == "first" && first && i == 0)) {
					s = repl + s
				}
				if split && len(rr) == 1 {
					out = append(out, splitRunes(s, func(r rune) bool { return r == rr[0] }, bMergedWithNext)...)
				} else if s != "" {
					out = append(out, s)
				}
			}
			return out
		}, nil
	case "Sequence":
		var fs []preTokenizerFunc
		for _, sub := range p.PreTokenizers {
			f, err := buildPreTokenizer(sub)
			if err != nil {
				return nil, err
			}
			if f != nil {
				fs = append(fs, f)
			}
		}
		return func(pieces []string, first bool) []string {
			for _, f := range fs {
				pieces = f(pieces, first)
			}
			return pieces
		}, nil
	default:
		return nil, fmt.Errorf("unsupported pre_tokenizer type %q", p.Type)
	}
}

func eachPiece(f func(string) []string) preTokenizerFunc {
	return func(pieces []string, _ bool) []string {
		var out []string
		for _, s := range pieces {
			out = append(out, f(s)...)
		}
		return out
	}
}

// isBertPunct is tokenizers' is_bert_punc / is_punctuation.
func isBertPunct(r rune) bool {
	return (r < 128 && unicode.IsPunct(r)) || (r < 128 && unicode.IsSymbol(r)) || unicode.In(r, unicode.P)
}

// splitRunes splits s at runes matching delim (each one its own span) with
// the given behavior.
func splitRunes(s string, delim func(rune) bool, b behavior) []string {
	var spans []span
	for i, r := range s {
		end := i + utf8RuneLen(r)
		if delim(r) {
			spans = append(spans, span{i, end, true})
			continue
		}
		if n := len(spans); n > 0 && !spans[n-1].match {
			spans[n-1].end = end
		} else {
			spans = append(spans, span{i, end, false})
		}
	}
	return applyBehavior(s, spans, b)
}

func splitPattern(s string, p *pattern, b behavior, invert bool) []string {
	spans := p.findMatches(s)
	if invert {
		for i := range spans {
			spans[i].match = !spans[i].match
		}
	}
	return applyBehavior(s, spans, b)
}

// applyBehavior turns contiguous spans into pieces as tokenizers'
// SplitDelimiterBehavior does. Empty pieces are dropped.
func applyBehavior(s string, spans []span, b behavior) []string {
	var out []string
	add := func(p string) {
		if p != "" {
			out = append(out, p)
		}
	}
	switch b {
	case bRemoved:
		for _, sp := range spans {
			if !sp.match {
				add(s[sp.start:sp.end])
			}
		}
	case bIsolated:
		for _, sp := range spans {
			add(s[sp.start:sp.end])
		}
	case bContiguous:
		for i := 0; i < len(spans); i++ {
			st, en := spans[i].start, spans[i].end
			for spans[i].match && i+1 < len(spans) && spans[i+1].match {
				i++
				en = spans[i].end
			}
			add(s[st:en])
		}
	case bMergedWithPrevious:
		var cur strings.Builder
		for _, sp := range spans {
			cur.WriteString(s[sp.start:sp.end])
			if sp.match {
				add(cur.String())
				cur.Reset()
			}
		}
		add(cur.String())
	case bMergedWithNext:
		var cur strings.Builder
		for _, sp := range spans {
			if sp.match && cur.Len() > 0 {
				add(cur.String())
				cur.Reset()
			}
			cur.WriteString(s[sp.start:sp.end])
		}
		add(cur.String())
	}
	return out
}

var byteToRune = func() [256]rune {
	var t [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			t[b] = rune(b)
		} else {
			t[b] = rune(256 + n)
			n++
		}
	}
	return t
}()

// byteLevelMap maps each byte of s to the GPT-2 printable alphabet.
func byteLevelMap(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteToRune[s[i]])
	}
	return b.String()
}
