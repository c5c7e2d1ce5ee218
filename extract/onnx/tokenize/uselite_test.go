package tokenize

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/testutil/modelstest"
)

// tinyUSEVocab has the six reserved entries, then pieces chosen to exercise
// the reference implementation's quirks.
const tinyUSEVocab = `[["\ufffd",0],["<s>",0],["</s>",0],["x1",0],["x2",0],["x3",0],
["\u2581",-2],["a",-1],["b",-1],["ab",-1.5],["\u2581a",-1],["c",-3],["bc",-3],["\ud83d\ude00",-1],["\u2581ab",-5]]`

func TestUSELiteTiny(t *testing.T) {
	tok, err := parseUSELite([]byte(tinyUSEVocab))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text string
		want []int64
	}{
		{"", nil},
		// "▁ab": ▁a(-1)+b(-1) = -2 beats ▁ab(-5) and ▁(-2)+ab(-1.5).
		{"ab", []int64{10, 8}},
		// "▁abc": ▁a+bc = -4 beats ▁a+b+c = -5 and ▁+ab+c = -6.5.
		{"abc", []int64{10, 12}},
		// Unknown characters become 0 and consecutive unknowns merge.
		{"a zz", []int64{10, 6, 0}},
		{"zz a", []int64{6, 0, 10}},
		// NFKC: the full-width Ａ becomes a.
		{"\uff21", []int64{6, 0}},
		{"\uff41", []int64{10}},
		// A piece outside the BMP: the backward pass steps back by its
		// UTF-16 length (2), skipping the "▁" before it, as the reference does.
		{"\U0001F600", []int64{13}},
	}
	for _, c := range cases {
		got, err := tok.encodeContent(c.text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.text, got, c.want)
		}
	}
}

func TestUSELiteTruncation(t *testing.T) {
	tok, err := parseUSELite([]byte(tinyUSEVocab))
	if err != nil {
		t.Fatal(err)
	}
	if tok.MaxLength() != USELiteMaxLength || tok.PadID() != 0 {
		t.Fatalf("MaxLength %d PadID %d", tok.MaxLength(), tok.PadID())
	}
	long := strings.Repeat("a ", 200)
	enc, err := tok.Encode(context.Background(), []string{long, "b"}, Options{MaxLength: tok.MaxLength()})
	if err != nil {
		t.Fatal(err)
	}
	if enc.Len != USELiteMaxLength {
		t.Fatalf("Len %d", enc.Len)
	}
	// "▁a▁a…": ▁a repeated; the first row is full, the second has ▁ then b.
	for j := range USELiteMaxLength {
		if enc.IDs[j] != 10 || enc.AttentionMask[j] != 1 {
			t.Fatalf("row 0 position %d: id %d mask %d", j, enc.IDs[j], enc.AttentionMask[j])
		}
	}
	if got := enc.IDs[USELiteMaxLength : USELiteMaxLength+3]; !slices.Equal(got, []int64{6, 8, 0}) {
		t.Fatalf("row 1 starts %v", got)
	}
	if enc.AttentionMask[USELiteMaxLength+2] != 0 {
		t.Fatal("padding is not masked")
	}
}

func TestUSELiteBadVocab(t *testing.T) {
	for _, c := range []struct{ vocab, want string }{
		{`{}`, "want a JSON array"},
		{`[["a",0]]`, "want more than the 6 reserved"},
		{`[["",0],["a",0],["b",0],["c",0],["d",0],["e",0],["f",0]]`, "unknown piece) is empty"},
		{`[["a",0],["a",0],["b",0],["c",0],["d",0],["e",0],["f","x"]]`, "entry 6: want [piece, score]"},
	} {
		_, err := parseUSELite([]byte(c.vocab))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.vocab, err, c.want)
		}
	}
	if _, err := LoadUSELite(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzUSELite(f *testing.F) {
	f.Add([]byte(tinyUSEVocab), "abc zz \U0001F600")
	f.Add([]byte(`[]`), "")
	f.Fuzz(func(t *testing.T, vocab []byte, text string) {
		tok, err := parseUSELite(vocab)
		if err != nil {
			return
		}
		ids, err := tok.encodeContent(text)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
		}
	})
}

// TestUSELiteParity checks the token IDs against those of the TF.js
// tokenizer shipped with the model (testdata/use_lite_tokens.json, made by
// extract/onnx/tfjs/internal/refgen), on the real vocabulary.
func TestUSELiteParity(t *testing.T) {
	dir := modelstest.Dir(t, "use-lite")
	tok, err := LoadUSELite(filepath.Join(dir, "sentencepiece_vocab.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "use_lite_tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Text string  `json:"text"`
			IDs  []int64 `json:"ids"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) < 30 {
		t.Fatalf("%d reference cases, want ≥ 30", len(ref.Cases))
	}
	texts := make([]string, len(ref.Cases))
	truncated := false
	for i, c := range ref.Cases {
		texts[i] = c.Text
		got, err := tok.encodeContent(c.Text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.IDs) && !(len(got) == 0 && len(c.IDs) == 0) {
			t.Errorf("%q:\n got %v\nwant %v", c.Text, got, c.IDs)
		}
		truncated = truncated || len(c.IDs) > USELiteMaxLength
	}
	if !truncated {
		t.Fatal("no reference case is longer than 128 tokens")
	}
	// Encode truncates to the model's 128 tokens.
	enc, err := tok.Encode(context.Background(), texts, Options{MaxLength: tok.MaxLength()})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range ref.Cases {
		want := c.IDs[:min(len(c.IDs), USELiteMaxLength)]
		row := enc.IDs[i*enc.Len : (i+1)*enc.Len]
		n := 0
		for _, m := range enc.AttentionMask[i*enc.Len : (i+1)*enc.Len] {
			n += int(m)
		}
		if !slices.Equal(row[:n], want) {
			t.Errorf("Encode %q: got %v, want %v", c.Text, row[:n], want)
		}
	}
}
