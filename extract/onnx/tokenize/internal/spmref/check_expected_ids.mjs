// check_expected_ids.mjs — dev-only: re-checks ../../testdata/expected_ids.json
// (written by ../refgen/gen.mjs with the pure-JS @huggingface/tokenizers) against
// the official Rust `tokenizers` library through its Node binding (pinned in
// package.json): every case's IDs without truncation and truncated to each
// recorded length. Padding configured in a file is disabled (the Go tests pad
// separately). The reduced LaBSE file has [UNK] only as an added token, which
// Rust rejects ("Missing [UNK] token"); those cases are reported and skipped.
//
//	go mod download github.com/daulet/tokenizers@v1.24.0
//	cd extract/onnx/tokenize/internal/spmref && npm ci --ignore-scripts
//	GOMODCACHE=$(go env GOMODCACHE) node check_expected_ids.mjs
//
// Last run (tokenizers 0.23.2): 117 cases (each also truncated to 16 and
// 128), 0 mismatches; 16 LaBSE cases skipped.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("tokenizers");
const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.resolve(here, "../..");
const exp = JSON.parse(fs.readFileSync(path.join(pkg, "testdata/expected_ids.json"), "utf8"));
const cache = path.join(process.env.GOMODCACHE || "", "github.com/daulet/tokenizers@v1.24.0/test/data");

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
let total = 0, bad = 0, skipped = 0;
for (const t of exp.tokenizers) {
  const file = t.file.startsWith("GOMODCACHE:") ? path.join(cache, t.file.slice("GOMODCACHE:".length)) : path.join(pkg, t.file);
  const tok = Tokenizer.fromFile(file);
  tok.disablePadding();
  for (const c of t.cases) {
    let ids;
    try {
      ids = (await tok.encode(c.text, null, { addSpecialTokens: true })).getIds();
    } catch (e) {
      skipped++;
      console.log(`skip ${t.name}/${c.name}: ${e.message}`);
      continue;
    }
    total++;
    if (!same(ids, c.ids)) {
      bad++;
      console.log(`MISMATCH ${t.name}/${c.name}: rust ${JSON.stringify(ids)} expected ${JSON.stringify(c.ids)}`);
    }
    for (const [n, tr] of Object.entries(c.truncated || {})) {
      tok.setTruncation(Number(n));
      const got = (await tok.encode(c.text, null, { addSpecialTokens: true })).getIds();
      tok.disableTruncation();
      if (!same(got, tr.ids)) {
        bad++;
        console.log(`MISMATCH ${t.name}/${c.name} truncated to ${n}: rust ${JSON.stringify(got)} expected ${JSON.stringify(tr.ids)}`);
      }
    }
  }
}
console.log(`${total} cases, ${bad} mismatches, ${skipped} skipped`);
process.exit(bad ? 1 : 0);
