// hfref.mjs — dev-only: adds to ../../testdata/spm_expected.json the token IDs
// that the official Hugging Face `tokenizers` library (the Rust crate, through
// its Node binding `tokenizers` 0.23.2, pinned in package.json) produces for
// every row, as "hf_ids" (</s> included), and its normalized + pre-tokenized
// text as "hf_pretokenized". Run it after spmref.py (see the steps at the top of
// spmref.py):
//
//	cd extract/onnx/tokenize/internal/spmref
//	npm ci --ignore-scripts
//	node hfref.mjs
//
// It also records "precompiled_sweep": hashes of what the tokenizers
// Precompiled normalizer alone (the charsmap of the file, no Strip/Replace)
// makes of (1) every code point (surrogates excepted), in blocks of
// sweep.block code points, each code point followed by "\n" (a grapheme
// break), and (2) for each mark M of sweep.marks, every base B of sweep.bases
// as "B M\n" and "B M M\n" (without the spaces). A hash is the first 8 bytes
// of the SHA-256 of the UTF-8 output, in hex. spm_test.go rebuilds the same
// strings from the ranges stored here.
//
// It prints the rows where Hugging Face and SentencePiece disagree; the Go
// test (spm_test.go) lists each of them with the reason.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import crypto from "node:crypto";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("tokenizers");
const version = require("tokenizers/package.json").version;

const here = path.dirname(fileURLToPath(import.meta.url));
const tokdir = path.resolve(here, "../..");
const expPath = path.join(tokdir, "testdata/spm_expected.json");
const exp = JSON.parse(fs.readFileSync(expPath, "utf8"));

// dump writes one case (and one sweep) per line, as spmref.py does.
function dump(exp) {
  const { models, ...top } = exp;
  const kv = (ind, o) => Object.entries(o).map(([k, v]) => `${ind}${JSON.stringify(k)}: ${JSON.stringify(v)},\n`).join("");
  const ms = models.map(({ cases, ...rest }) =>
    "  {\n" + kv("   ", rest) + '   "cases": [\n' + cases.map((c) => "    " + JSON.stringify(c)).join(",\n") + "\n   ]\n  }");
  return "{\n" + kv(" ", top) + ' "models": [\n' + ms.join(",\n") + "\n ]\n}\n";
}

const sweep = {
  block: 4096,
  // [first, last] code point ranges, inclusive.
  bases: [[0x30, 0x39], [0x41, 0x5a], [0x61, 0x7a], [0xc0, 0x17f], [0x391, 0x3c9], [0x410, 0x44f],
    [0x1100, 0x1112], [0x3041, 0x3096], [0x30a1, 0x30fa], [0xfb00, 0xfb06], [0xff21, 0xff3a],
    [0xff66, 0xff9d], [0x2160, 0x216f], [0x2460, 0x2473]],
  marks: [[0x300, 0x36f], [0x483, 0x487], [0x93c, 0x93c], [0x94d, 0x94d], [0x1161, 0x1175],
    [0x11a8, 0x11c2], [0x200d, 0x200d], [0x20d0, 0x20f0], [0x3099, 0x309a], [0xfe0f, 0xfe0f],
    [0xff9e, 0xff9f], [0x1f3fb, 0x1f3ff]],
};

function* codePoints(ranges) {
  for (const [lo, hi] of ranges) for (let c = lo; c <= hi; c++) yield String.fromCodePoint(c);
}

function hash(s) {
  return crypto.createHash("sha256").update(Buffer.from(s, "utf8")).digest("hex").slice(0, 16);
}

function precompiledSweep(json) {
  const only = JSON.parse(json);
  only.normalizer = only.normalizer.normalizers.find((n) => n.type === "Precompiled");
  const norm = Tokenizer.fromString(JSON.stringify(only)).getNormalizer();
  const singles = [];
  for (let lo = 0; lo <= 0x10ffff; lo += sweep.block) {
    let s = "";
    for (let c = lo; c < lo + sweep.block && c <= 0x10ffff; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      s += String.fromCodePoint(c) + "\n";
    }
    singles.push(hash(norm.normalizeString(s)));
  }
  const bases = [...codePoints(sweep.bases)];
  const pairs = [];
  for (const m of codePoints(sweep.marks)) {
    let s = "";
    for (const b of bases) s += b + m + "\n" + b + m + m + "\n";
    pairs.push(hash(norm.normalizeString(s)));
  }
  return { ...sweep, singles, pairs };
}

for (const m of exp.models) {
  const json = zlib.gunzipSync(fs.readFileSync(path.join(tokdir, m.file))).toString("utf8");
  const tk = Tokenizer.fromString(json);
  m.precompiled_sweep = precompiledSweep(json);
  const norm = tk.getNormalizer();
  const pre = tk.getPreTokenizer();
  for (const c of m.cases) {
    const enc = await tk.encode(c.text, null, { addSpecialTokens: true });
    c.hf_ids = Array.from(enc.getIds());
    const n = norm.normalizeString(c.text);
    c.hf_pretokenized = pre.preTokenizeString(n).map(([s]) => s).join("");
    if (JSON.stringify(c.hf_ids) !== JSON.stringify(c.spm_ids)) {
      console.log(`${m.name}/${c.name}: HF ${JSON.stringify(c.hf_ids)} != SPM ${JSON.stringify(c.spm_ids)}`);
      console.log(`   HF  ${JSON.stringify(c.hf_pretokenized)}\n   SPM ${JSON.stringify(c.spm_normalized)}`);
    }
  }
}
exp.generator = "internal/spmref/spmref.py + hfref.mjs";
exp.tokenizers_version = version;
fs.writeFileSync(expPath, dump(exp));
console.log(`wrote ${expPath}`);
