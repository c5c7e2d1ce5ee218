// Encodes the designed texts of cases.json with every tokenizer.json through
// tokenizers.js (@huggingface/tokenizers) and compares the ids with the ones
// exported by the Go package tinymodels.
//
// tokenizers.js 0.2.0 does not apply the "truncation" and "padding" sections
// of tokenizer.json (the Rust tokenizers library does), so this script
// applies them itself for single sequences, like the Rust library: the
// content is truncated to max_length minus the special tokens the
// post-processor adds, and Fixed padding appends pad_id on the right.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";

const cases = JSON.parse(readFileSync(process.argv[2] ?? "cases.json", "utf8"));
const cache = new Map();
function load(dir) {
  if (!cache.has(dir)) {
    const json = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8"));
    const cfgPath = join(dir, "tokenizer_config.json");
    const cfg = existsSync(cfgPath) ? JSON.parse(readFileSync(cfgPath, "utf8")) : {};
    cache.set(dir, { tokenizer: new Tokenizer(json, cfg), json });
  }
  return cache.get(dir);
}

function encode(dir, text) {
  const { tokenizer, json } = load(dir);
  const full = tokenizer.encode(text);
  let ids = Array.from(full.ids, Number);
  let tokens = Array.from(full.tokens);
  const content = Array.from(tokenizer.encode(text, { add_special_tokens: false }).ids, Number);
  const added = ids.length - content.length;
  const t = json.truncation;
  if (t && ids.length > t.max_length) {
    if (t.direction !== "Right") throw new Error("only Right truncation is emulated");
    // ids = prefix specials + content + suffix specials
    let pre = 0;
    while (pre < ids.length && ids[pre] !== content[0]) pre++;
    const keep = t.max_length - added;
    const post = ids.length - pre - content.length;
    ids = [...ids.slice(0, pre + keep), ...ids.slice(ids.length - post)];
    tokens = [...tokens.slice(0, pre + keep), ...tokens.slice(tokens.length - post)];
  }
  const p = json.padding;
  if (p && p.strategy && p.strategy.Fixed) {
    if (p.direction !== "Right") throw new Error("only Right padding is emulated");
    while (ids.length < p.strategy.Fixed) {
      ids.push(p.pad_id);
      tokens.push(p.pad_token);
    }
  }
  return { ids, tokens };
}

let failed = 0;
for (const c of cases.tokenizers) {
  const enc = encode(c.dir, c.text);
  const got = enc.ids;
  const ok = JSON.stringify(got) === JSON.stringify(c.ids);
  if (!ok) failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${c.dir.split("/testdata/")[1]} ${JSON.stringify(c.text)} -> [${got}] tokens=${JSON.stringify(enc.tokens)}` +
    (ok ? "" : ` want [${c.ids}]`));
}
console.log(`${failed === 0 ? "PASS" : "FAIL"}: ${cases.tokenizers.length - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
