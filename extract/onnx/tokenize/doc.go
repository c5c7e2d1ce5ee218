// Package tokenize is the text tokenization of the ONNX text extractors
// (package extract/onnx): it turns text into token IDs from a Hugging Face
// tokenizer.json (CLIP: byte-level BPE with "</w>"; SigLIP/T5: Unigram with
// Metaspace; BERT/MiniLM: WordPiece; Llama-3/Cohere-style byte-level BPE).
//
// The whole pipeline is implemented here (no network access, no model
// download): added tokens (leftmost-longest, lstrip/rstrip/single_word),
// normalizers (BertNormalizer, NFC/NFD/NFKC/NFKD, Lowercase, Strip,
// StripAccents, Replace, Prepend, Nmt, Precompiled, Sequence),
// pre-tokenizers (BertPreTokenizer, ByteLevel, Metaspace, Split, Whitespace,
// WhitespaceSplit, Punctuation, Digits, CharDelimiterSplit, Sequence),
// models (BPE incl. end_of_word_suffix, continuing_subword_prefix,
// byte_fallback, fuse_unk and ignore_merges; WordPiece; Unigram; WordLevel)
// and single-sequence post-processors (TemplateProcessing, BertProcessing,
// RobertaProcessing, ByteLevel, Sequence). Truncation follows tokenizers with
// add_special_tokens=True: content is cut from the end, special tokens kept.
//
// IDs are checked against the official @huggingface/tokenizers (see
// internal/refgen) and against IDs from the Rust crate quoted in
// github.com/daulet/tokenizers' tests. SentencePiece Unigram models with the
// real nmt_nfkc and nmt_nfkc_cf charsmaps (what T5, SigLIP and XLM-R
// tokenizer.json files carry), converted as transformers' SpmConverter does,
// are checked against SentencePiece 0.1.97 itself and the tokenizers crate
// 0.23.2, and the Precompiled normalizer against the crate's on every code
// point (see internal/spmref).
//
// Precompiled follows the tokenizers crate, which by design differs from
// SentencePiece on rare input: a grapheme cluster shorter than 6 bytes is
// replaced by the rule of its shortest matching prefix, the rest of the
// cluster being dropped ("e" + two acute accents gives "é"); longer clusters
// are mapped code point by code point, so multi-code-point rules (half-width
// "ｶﾞ" to "ガ", conjoining jamo to a Hangul syllable) do not apply. With
// SpmConverter's normalizer, trailing Unicode whitespace that the charsmap
// keeps (U+0085) is stripped, and "</s>", "<unk>" or "<pad>" in the text are
// special tokens, which SentencePiece never matches in input.
//
// Known differences from the Rust implementation:
//   - Regexes run on Go's RE2: \s, \S, \d and \w are rewritten to their
//     Unicode meaning and the look-ahead `\s+(?!\S)` of GPT-2/Llama-3 style
//     patterns is emulated; other look-arounds or back-references make Load
//     fail.
//   - Lowercase uses Go's per-rune mapping (e.g. "İ" becomes "i", not "i̇").
//   - BPE dropout is ignored (inference is deterministic); pair inputs,
//     left truncation/padding, stride and offsets are not supported.
//   - UnicodeScripts pre-tokenizer is not supported.
//   - Precompiled splits grapheme clusters with github.com/rivo/uniseg
//     (Unicode 15.0); the crate's unicode-segmentation may follow a later
//     Unicode version, which matters only for clusters under 6 bytes.
//   - Invalid UTF-8 in inputs is replaced by U+FFFD before tokenization.
package tokenize
