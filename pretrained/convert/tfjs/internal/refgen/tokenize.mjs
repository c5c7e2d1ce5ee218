// tokenize.mjs — run by gen.mjs in its own process: @energetic-ai/core
// bundles its own TF.js, which must not share a process with
// @tensorflow/tfjs. Reads {"vocab": path, "texts": [...]} on stdin, writes
// the token IDs of each text on stdout.
import { EmbeddingsModel } from "@energetic-ai/embeddings";
import fs from "node:fs";

const req = JSON.parse(fs.readFileSync(0, "utf8"));
const vocabulary = JSON.parse(fs.readFileSync(req.vocab, "utf8"));
const tokenizer = new EmbeddingsModel({ vocabulary, model: null }).tokenizer;
process.stdout.write(JSON.stringify(req.texts.map((t) => tokenizer.encode(t))));
