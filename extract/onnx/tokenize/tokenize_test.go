package tokenize

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const dauletModule = "github.com/daulet/tokenizers@v1.24.0"

// dauletDir locates the real tokenizer.json files shipped in the test data of
// github.com/daulet/tokenizers (Apache-2.0) in the module cache.
func dauletDir(t testing.TB) string {
	t.Helper()
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err == nil {
			cache = strings.TrimSpace(string(out))
		}
	}
	dir := filepath.Join(cache, filepath.FromSlash(dauletModule), "test", "data")
	if _, err := os.Stat(filepath.Join(dir, "bert-base-uncased.json")); err != nil {
		t.Skipf("real tokenizer files not in the module cache (%v); run: go mod download -json %s", err, dauletModule)
	}
	return dir
}

type expectedFile struct {
	Tokenizers []struct {
		Name  string `json:"name"`
		File  string `json:"file"`
		Cases []struct {
			Name      string  `json:"name"`
			Text      string  `json:"text"`
			IDs       []int64 `json:"ids"`
			TypeIDs   []int64 `json:"type_ids"`
			NPrefix   int     `json:"n_prefix"`
			NSuffix   int     `json:"n_suffix"`
			Truncated map[string]struct {
				IDs     []int64 `json:"ids"`
				TypeIDs []int64 `json:"type_ids"`
			} `json:"truncated"`
		} `json:"cases"`
	} `json:"tokenizers"`
}

var (
	loaded  = map[string]*Tokenizer{}
	loadErr = map[string]error{}
	loadMu  sync.Mutex
)

// loadCached loads each tokenizer file once per test binary.
func loadCached(t testing.TB, path string) *Tokenizer {
	t.Helper()
	loadMu.Lock()
	defer loadMu.Unlock()
	if tk, ok := loaded[path]; ok {
		return tk
	}
	if err, ok := loadErr[path]; ok {
		t.Fatalf("Load(%s): %v", path, err)
	}
	tk, err := Load(path)
	if err != nil {
		loadErr[path] = err
		t.Fatalf("Load(%s): %v", path, err)
	}
	loaded[path] = tk
	return tk
}

func tokenizerPath(t testing.TB, file string) string {
	if rest, ok := strings.CutPrefix(file, "GOMODCACHE:"); ok {
		return filepath.Join(dauletDir(t), rest)
	}
	return filepath.FromSlash(file)
}

// TestExpectedIDs compares every row with testdata/expected_ids.json, made by
// internal/refgen/gen.mjs with the official @huggingface/tokenizers.
func TestExpectedIDs(t *testing.T) {
	data, err := os.ReadFile("testdata/expected_ids.json")
	if err != nil {
		t.Fatal(err)
	}
	var exp expectedFile
	if err := json.Unmarshal(data, &exp); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tkExp := range exp.Tokenizers {
		t.Run(tkExp.Name, func(t *testing.T) {
			tk := loadCached(t, tokenizerPath(t, tkExp.File))
			for _, c := range tkExp.Cases {
				t.Run(c.Name, func(t *testing.T) {
					// Untruncated, PadLongest over a single row: exactly the reference.
					got, err := tk.Encode(ctx, []string{c.Text}, Options{MaxLength: 1 << 20, Padding: PadLongest})
					if err != nil {
						t.Fatal(err)
					}
					checkRow(t, "full", got, 0, c.IDs, c.TypeIDs, 0)
					for ml, tr := range c.Truncated {
						var m int
						if err := json.Unmarshal([]byte(ml), &m); err != nil {
							t.Fatal(err)
						}
						got, err := tk.Encode(ctx, []string{c.Text}, Options{MaxLength: m, Padding: PadMaxLength, PadID: 7})
						if err != nil {
							t.Fatal(err)
						}
						if got.Len != m {
							t.Fatalf("max_length %d: Len = %d", m, got.Len)
						}
						checkRow(t, "max_length "+ml, got, 0, tr.IDs, tr.TypeIDs, 7)
					}
				})
			}
		})
	}
}

// checkRow checks row r of e against want, padded with pad (mask 0, type 0).
func checkRow(t *testing.T, what string, e Encoded, r int, want, wantTypes []int64, pad int64) {
	t.Helper()
	ids := e.IDs[r*e.Len : (r+1)*e.Len]
	mask := e.AttentionMask[r*e.Len : (r+1)*e.Len]
	types := e.TypeIDs[r*e.Len : (r+1)*e.Len]
	if len(want) > e.Len {
		t.Fatalf("%s: row has %d tokens, want %d: %v", what, e.Len, len(want), ids)
	}
	for j := range e.Len {
		wantID, wantMask, wantType := pad, int64(0), int64(0)
		if j < len(want) {
			wantID, wantMask = want[j], 1
			if wantTypes != nil {
				wantType = wantTypes[j]
			}
		}
		if ids[j] != wantID || mask[j] != wantMask || types[j] != wantType {
			t.Fatalf("%s: position %d: got id %d mask %d type %d, want id %d mask %d type %d\n got  %v\n want %v",
				what, j, ids[j], mask[j], types[j], wantID, wantMask, wantType, ids, want)
		}
	}
}

// TestDauletExpectations reuses the IDs asserted in daulet/tokenizers
// v1.24.0 tokenizer_test.go, computed there by the Rust tokenizers crate.
func TestDauletExpectations(t *testing.T) {
	dir := dauletDir(t)
	tests := []struct {
		name, file, text string
		maxLen           int
		want             []int64
	}{
		// TestEncodeWithAndWithoutOptions "with special tokens".
		{"bert sentence", "bert-base-uncased.json", "brown fox jumps over the lazy dog", 512,
			[]int64{101, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 102}},
		// TestEncodeWithAndWithoutOptions "empty string with special tokens".
		{"bert empty", "bert-base-uncased.json", "", 512, []int64{101, 102}},
		// TestEmbeddingConfig "with special tokens" (0x65 = 101 ... 0x66 = 102).
		{"labse sentence", "sentence-transformers-labse.json", "brown fox jumps over the lazy dog", 512,
			[]int64{0x65, 0xca3f, 0x2f304, 0x5185b, 0x3c54, 0x3a89, 0x35fc3, 0x57b4, 0x66}},
		// TestEncodeWithTruncation "with special tokens, right truncation", max 5.
		{"labse truncation", "sentence-transformers-labse.json", "brown fox jumps over the lazy dog", 5,
			[]int64{0x65, 0xca3f, 0x2f304, 0x5185b, 0x66}},
		// TestEncodeSpecialTokens: special tokens in the text are matched.
		{"labse specials in text", "sentence-transformers-labse.json", "[CLS]fox[SEP]", 512,
			[]int64{101, 101, 193284, 102, 102}},
		// TestEncodeWithPadding: "this short sentence" -> 0x7e7, 0x99c, 0x186b.
		{"minilm", "all-minilm-l6-v2.json", "this short sentence", 512,
			[]int64{101, 0x7e7, 0x99c, 0x186b, 102}},
		// BenchmarkEncodeNTimes expected IDs, after <|begin_of_text|> (128000).
		{"llama3", "Meta-Llama-3-8B-Instruct.json", "brown fox jumps over the lazy dog", 512,
			[]int64{128000, 0x10019, 0x9bff, 0x89ec, 0x39f, 0x117, 0x3eb5, 0x162f}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := loadCached(t, filepath.Join(dir, tt.file))
			got, err := tk.Encode(context.Background(), []string{tt.text}, Options{MaxLength: tt.maxLen, Padding: PadLongest})
			if err != nil {
				t.Fatal(err)
			}
			checkRow(t, tt.name, got, 0, tt.want, nil, 0)
		})
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tinyWordPiece is a minimal BERT-like tokenizer.json; extra is spliced in
// at the top level.
func tinyWordPiece(extra string) string {
	return `{` + extra + `
 "added_tokens": [{"id":0,"content":"[PAD]","special":true},{"id":1,"content":"[UNK]","special":true},
   {"id":2,"content":"[CLS]","special":true},{"id":3,"content":"[SEP]","special":true},{"id":9,"content":"<pad>","special":true}],
 "normalizer": {"type":"BertNormalizer","lowercase":true},
 "pre_tokenizer": {"type":"BertPreTokenizer"},
 "post_processor": {"type":"BertProcessing","sep":["[SEP]",3],"cls":["[CLS]",2]},
 "model": {"type":"WordPiece","unk_token":"[UNK]","vocab":{"[PAD]":0,"[UNK]":1,"[CLS]":2,"[SEP]":3,"a":4,"cat":5,"dog":6,"##s":7,"the":8,"<pad>":9}}}`
}

func TestPaddingModes(t *testing.T) {
	dir := t.TempDir()
	tk, err := Load(writeFile(t, dir, "tokenizer.json", tinyWordPiece("")))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	texts := []string{"a cat", "the dogs the cats", ""}
	wants := [][]int64{{2, 4, 5, 3}, {2, 8, 6, 7, 8, 5, 7, 3}, {2, 3}}

	e, err := tk.Encode(ctx, texts, Options{MaxLength: 10, Padding: PadMaxLength, PadID: 9})
	if err != nil {
		t.Fatal(err)
	}
	if e.Rows != 3 || e.Len != 10 || len(e.IDs) != 30 || len(e.AttentionMask) != 30 || len(e.TypeIDs) != 30 {
		t.Fatalf("PadMaxLength shape: %+v", e)
	}
	for i, w := range wants {
		checkRow(t, "PadMaxLength", e, i, w, nil, 9)
	}

	e, err = tk.Encode(ctx, texts, Options{MaxLength: 10, Padding: PadLongest})
	if err != nil {
		t.Fatal(err)
	}
	if e.Rows != 3 || e.Len != 8 {
		t.Fatalf("PadLongest shape: rows %d len %d", e.Rows, e.Len)
	}
	for i, w := range wants {
		checkRow(t, "PadLongest", e, i, w, nil, 0)
	}

	// Truncation keeps [CLS] and [SEP] and cuts content from the end.
	e, err = tk.Encode(ctx, texts, Options{MaxLength: 5, Padding: PadLongest})
	if err != nil {
		t.Fatal(err)
	}
	if e.Len != 5 {
		t.Fatalf("truncated Len = %d", e.Len)
	}
	checkRow(t, "truncated", e, 1, []int64{2, 8, 6, 7, 3}, nil, 0)
	// MaxLength == number of special tokens: content dropped entirely.
	e, err = tk.Encode(ctx, texts[:1], Options{MaxLength: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkRow(t, "only specials", e, 0, []int64{2, 3}, nil, 0)

	// No texts.
	e, err = tk.Encode(ctx, nil, Options{MaxLength: 4, Padding: PadLongest})
	if err != nil || e.Rows != 0 || len(e.IDs) != 0 {
		t.Fatalf("empty batch: %+v, %v", e, err)
	}

	for _, o := range []Options{{MaxLength: 0}, {MaxLength: -1}, {MaxLength: 1}, {MaxLength: 8, Padding: Padding(42)}} {
		if _, err := tk.Encode(ctx, texts, o); err == nil {
			t.Errorf("Encode with %+v: want error", o)
		}
	}
}

func TestPadIDAndMaxLength(t *testing.T) {
	tests := []struct {
		name       string
		extra      string            // top-level tokenizer.json fields
		side       map[string]string // neighbour files
		wantPad    int64
		wantMax    int
		wantModMax int
	}{
		{name: "nothing", wantPad: 0},
		{name: "padding.pad_id wins", extra: `"padding":{"pad_id":5,"pad_token":"x"},"truncation":{"max_length":77},`,
			side:    map[string]string{"tokenizer_config.json": `{"pad_token":"<pad>"}`},
			wantPad: 5, wantMax: 77},
		{name: "tokenizer_config string", side: map[string]string{"tokenizer_config.json": `{"pad_token":"<pad>","model_max_length":512}`},
			wantPad: 9, wantModMax: 512},
		{name: "tokenizer_config object", side: map[string]string{"tokenizer_config.json": `{"pad_token":{"content":"[SEP]","lstrip":false}}`},
			wantPad: 3},
		{name: "tokenizer_config before special_tokens_map", side: map[string]string{
			"tokenizer_config.json":   `{"pad_token":"[CLS]","model_max_length":1000000000000000019884624838656}`,
			"special_tokens_map.json": `{"pad_token":"<pad>"}`}, wantPad: 2},
		{name: "special_tokens_map", side: map[string]string{
			"tokenizer_config.json":   `{"pad_token":null}`,
			"special_tokens_map.json": `{"pad_token":{"content":"the"}}`}, wantPad: 8},
		{name: "unknown pad token", side: map[string]string{"special_tokens_map.json": `{"pad_token":"<nope>"}`}, wantPad: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.side {
				writeFile(t, dir, name, content)
			}
			tk, err := Load(writeFile(t, dir, "tokenizer.json", tinyWordPiece(tt.extra)))
			if err != nil {
				t.Fatal(err)
			}
			if got := tk.PadID(); got != tt.wantPad {
				t.Errorf("PadID = %d, want %d", got, tt.wantPad)
			}
			if got := tk.MaxLength(); got != tt.wantMax {
				t.Errorf("MaxLength = %d, want %d", got, tt.wantMax)
			}
			if got := tk.ModelMaxLength(); got != tt.wantModMax {
				t.Errorf("ModelMaxLength = %d, want %d", got, tt.wantModMax)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"missing.json":  "",
		"bad.json":      `{"model": `,
		"nomodel.json":  `{"normalizer": null}`,
		"badmodel.json": `{"model": {"type": "BPE", "vocab": [1,2], "merges": []}}`,
		"badnorm.json":  strings.Replace(tinyWordPiece(""), `"BertNormalizer"`, `"Frobnicate"`, 1),
		"badregex.json": strings.Replace(tinyWordPiece(""), `{"type":"BertPreTokenizer"}`, `{"type":"Split","pattern":{"Regex":"(?<=a)b"},"behavior":"Isolated","invert":false}`, 1),
		"badpost.json":  strings.Replace(tinyWordPiece(""), `"sep":["[SEP]",3]`, `"sep":["[SEP]"]`, 1),
		"badunk.json":   `{"model": {"type": "BPE", "unk_token": "<unk>", "vocab": {"a": 0}, "merges": []}}`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			if content != "" {
				writeFile(t, dir, name, content)
			}
			_, err := Load(p)
			if err == nil {
				t.Fatal("want error")
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name %s", err, p)
			}
		})
	}
	t.Run("bad side config", func(t *testing.T) {
		d := t.TempDir()
		side := writeFile(t, d, "tokenizer_config.json", `{"pad_token": `)
		_, err := Load(writeFile(t, d, "tokenizer.json", tinyWordPiece("")))
		if err == nil || !strings.Contains(err.Error(), side) {
			t.Fatalf("err = %v, want it to name %s", err, side)
		}
	})
	t.Run("missing wraps ErrNotExist", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "missing.json"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestContextCancelled(t *testing.T) {
	tk, err := Load(writeFile(t, t.TempDir(), "tokenizer.json", tinyWordPiece("")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tk.Encode(ctx, []string{"a cat"}, Options{MaxLength: 8})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestConcurrentEncode(t *testing.T) {
	tk := loadCached(t, "testdata/clip_tiny/tokenizer.json")
	want, err := tk.Encode(context.Background(), []string{"a photo of a cat", "Café naïve"}, Options{MaxLength: 16})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := tk.Encode(context.Background(), []string{"a photo of a cat", "Café naïve"}, Options{MaxLength: 16})
				if err != nil {
					t.Error(err)
					return
				}
				for i := range got.IDs {
					if got.IDs[i] != want.IDs[i] {
						t.Error("concurrent Encode differs")
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "a photo of a cat", "Café naïve résumé", "東京は日本の首都です", "👨‍👩‍👧‍👦 👍🏽",
		"  \t\n x  ", "<|endoftext|>", "</s>", "[CLS]", "\xff\xfe", "it's 1,000,000!!!",
		"e\u0301\u0301 ｶﾞ \ufb01\u0301", "a\r\nb\x00\x01\u0085", "ＡＢＣ①\u00a0ﬁ\u2028"} {
		f.Add(s)
	}
	var tks []*Tokenizer
	for _, p := range []string{"testdata/clip_tiny/tokenizer.json", "testdata/unigram_tiny/tokenizer.json"} {
		tk, err := Load(p)
		if err != nil {
			f.Fatal(err)
		}
		tks = append(tks, tk)
	}
	// SentencePiece Unigram with the real nmt_nfkc / nmt_nfkc_cf charsmaps.
	tks = append(tks, loadGzipped(f, "testdata/spm_tiny/tokenizer.json.gz"),
		loadGzipped(f, "testdata/spm_tiny_cf/tokenizer.json.gz"))
	wp, err := Load(writeFileF(f, "tokenizer.json", tinyWordPiece("")))
	if err != nil {
		f.Fatal(err)
	}
	tks = append(tks, wp)
	f.Fuzz(func(t *testing.T, s string) {
		for _, tk := range tks {
			e, err := tk.Encode(context.Background(), []string{s, s + " " + s}, Options{MaxLength: 12, PadID: 0})
			if err != nil {
				t.Fatal(err)
			}
			if e.Len != 12 || len(e.IDs) != 24 {
				t.Fatalf("Len %d, %d ids", e.Len, len(e.IDs))
			}
			for _, id := range e.IDs {
				if id < 0 || id >= int64(tk.VocabSize()) {
					t.Fatalf("id %d outside vocab of %d", id, tk.VocabSize())
				}
			}
		}
	})
}

func writeFileF(f *testing.F, name, content string) string {
	p := filepath.Join(f.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.Fatal(err)
	}
	return p
}

// Benchmarks of the two costs that grow with input size: a long run of
// letters goes to BPE as one word (merging is O(n log n) per word), and a
// long document is scanned for added tokens at every position.
//
//	go test -run '^$' -bench Encode ./extract/tokenize
func BenchmarkEncodeLongWord(b *testing.B) {
	tok := loadCached(b, filepath.Join(dauletDir(b), "Meta-Llama-3-8B-Instruct.json"))
	word := strings.Repeat("abcdefghij", 1600)
	b.SetBytes(int64(len(word)))
	for b.Loop() {
		if _, err := tok.Encode(context.Background(), []string{word}, Options{MaxLength: 77}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeLongText(b *testing.B) {
	dir := dauletDir(b)
	text, err := os.ReadFile(filepath.Join(dir, "long_text.txt"))
	if err != nil {
		b.Skip(err)
	}
	for _, f := range []string{"bert-base-uncased.json", "Meta-Llama-3-8B-Instruct.json"} {
		tok := loadCached(b, filepath.Join(dir, f))
		b.Run(f, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := tok.Encode(context.Background(), []string{string(text)}, Options{MaxLength: 512}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
