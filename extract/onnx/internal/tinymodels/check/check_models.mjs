// Runs every tiny model in ONNX Runtime (onnxruntime-node) on the inputs of
// cases.json (written by `go run ./extract/onnx/internal/tinymodels/check/refcases`)
// and compares each output with the Go reference forward pass.
import { readFileSync } from "node:fs";
import ort from "onnxruntime-node";

// |ort - ref| <= TOLERANCE * max(1, |ref|): ONNX Runtime computes in float32.
const TOLERANCE = 1e-5;
const cases = JSON.parse(readFileSync(process.argv[2] ?? "cases.json", "utf8"));

function toTensor(t) {
  if (t.type === "int64") {
    return new ort.Tensor("int64", BigInt64Array.from(t.data.map((v) => BigInt(v))), t.dims);
  }
  return new ort.Tensor("float32", Float32Array.from(t.data), t.dims);
}

let failed = 0;
let overall = 0;
for (const c of cases.models) {
  const session = await ort.InferenceSession.create(c.model);
  const feeds = {};
  for (const [name, t] of Object.entries(c.inputs)) feeds[name] = toTensor(t);
  const results = await session.run(feeds);
  for (const [name, want] of Object.entries(c.expected)) {
    const got = results[name];
    if (!got) {
      console.log(`FAIL ${c.model}: missing output ${name}`);
      failed++;
      continue;
    }
    const dimsOK = JSON.stringify(got.dims.map(Number)) === JSON.stringify(want.dims);
    let maxDiff = 0;
    let tooFar = false;
    for (let i = 0; i < want.data.length; i++) {
      const d = Math.abs(got.data[i] - want.data[i]);
      maxDiff = Math.max(maxDiff, d);
      if (d > TOLERANCE * Math.max(1, Math.abs(want.data[i]))) tooFar = true;
    }
    overall = Math.max(overall, maxDiff);
    const ok = dimsOK && got.data.length === want.data.length && !tooFar;
    if (!ok) failed++;
    console.log(
      `${ok ? "ok  " : "FAIL"} ${c.model.split("/testdata/")[1]} ${name} dims=${JSON.stringify(got.dims.map(Number))} ` +
        `max|ort-ref|=${maxDiff.toExponential(2)} inputs=[${session.inputNames}] outputs=[${session.outputNames}]`,
    );
  }
}
console.log(`models: max|ort-ref| over all outputs = ${overall.toExponential(2)}`);
console.log(`${failed === 0 ? "PASS" : "FAIL"}: ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
