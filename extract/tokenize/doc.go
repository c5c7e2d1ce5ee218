// Package tokenize turns text into token IDs for ONNX text encoders, from a
// Hugging Face tokenizer.json (CLIP: byte-level BPE with "</w>"; SigLIP/T5:
// Unigram with Metaspace; BERT/MiniLM: WordPiece; Llama-3/Cohere-style
// byte-level BPE).
//
// The whole pipeline is implemented here (no network access, no model
// download): added tokens (leftmost-longest, lstrip/rstrip/single_word),
// normalizers (BertNormalizer, NFC/NFD/NFKC/NFKD, Lowercase, Strip,
// StripAccents, Replace, Prepend, Nmt, Sequence; Precompiled is delegated to
// github.com/sugarme/tokenizer/normalizer), pre-tokenizers (BertPreTokenizer,
// ByteLevel, Metaspace, Split, Whitespace, WhitespaceSplit, Punctuation,
// Digits, CharDelimiterSplit, Sequence), models (BPE incl.
// end_of_word_suffix, continuing_subword_prefix, byte_fallback, fuse_unk and
// ignore_merges; WordPiece; Unigram; WordLevel) and single-sequence
// post-processors (TemplateProcessing, BertProcessing, RobertaProcessing,
// ByteLevel, Sequence). Truncation follows tokenizers with
// add_special_tokens=True: content is cut from the end, special tokens kept.
//
// IDs are checked against the official @huggingface/tokenizers (see
// internal/refgen) and against IDs from the Rust crate quoted in
// github.com/daulet/tokenizers' tests.
//
// Known differences from the Rust implementation:
//   - Regexes run on Go's RE2: \s, \S, \d and \w are rewritten to their
//     Unicode meaning and the look-ahead `\s+(?!\S)` of GPT-2/Llama-3 style
//     patterns is emulated; other look-arounds or back-references make Load
//     fail.
//   - Lowercase uses Go's per-rune mapping (e.g. "İ" becomes "i", not "i̇").
//   - BPE dropout is ignored (inference is deterministic); pair inputs,
//     left truncation/padding, stride and offsets are not supported.
//   - UnicodeScripts pre-tokenizer is not supported; the Precompiled
//     normalizer (T5 charsmaps) is not verified against the reference.
//   - Invalid UTF-8 in inputs is replaced by U+FFFD before tokenization.
package tokenize
