// Computes the reference flatten_1 features of nsfwjs@4.4.0's MobileNetV2
// with the original runtime (TensorFlow.js 4.22.0, pure-JS CPU backend) and
// nsfwjs's own inference path (NSFWJS.infer: int → float, ÷255, no resize
// for 224×224 inputs, intermediate model up to the endpoint layer).
//
//   npm install            (in this directory; versions pinned in package.json)
//   node reference.mjs INPUTS.npy ../mobilenet_v2_flatten_1.npy
//
// INPUTS.npy is the uint8 [n,224,224,3] array written by
// go run ./pretrained/nsfwjs/internal/refgen; the output is float32
// [n,1280] in the same order.
import { readFileSync, writeFileSync } from "node:fs";
import * as tf from "@tensorflow/tfjs";
import * as nsfwjs from "nsfwjs";

function readNpyU8(path) {
  const b = readFileSync(path);
  if (b.toString("latin1", 0, 6) !== "\x93NUMPY") throw new Error(`${path}: not a .npy file`);
  const hlen = b.readUInt16LE(8);
  const header = b.toString("latin1", 10, 10 + hlen);
  if (!header.includes("'|u1'")) throw new Error(`${path}: not uint8`);
  const shape = header.match(/\(([^)]*)\)/)[1].split(",").filter((s) => s.trim()).map(Number);
  return { shape, data: new Uint8Array(b.buffer, b.byteOffset + 10 + hlen) };
}

function npyF32(data, shape) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(", ")}), }`;
  while ((10 + header.length + 1) % 64 !== 0) header += " ";
  header += "\n";
  const head = Buffer.alloc(10);
  head.write("\x93NUMPY\x01\x00", 0, "latin1");
  head.writeUInt16LE(header.length, 8);
  return Buffer.concat([head, Buffer.from(header, "latin1"), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]);
}

const [inPath, outPath] = process.argv.slice(2);
if (!inPath || !outPath) throw new Error("usage: node reference.mjs INPUTS.npy OUT.npy");
await tf.setBackend("cpu");
const model = await nsfwjs.load("MobileNetV2");
const { shape, data } = readNpyU8(inPath);
const [n, h, w, c] = shape;
const plane = h * w * c;
const out = new Float32Array(n * 1280);
for (let i = 0; i < n; i++) {
  const img = tf.tensor3d(data.subarray(i * plane, (i + 1) * plane), [h, w, c], "int32");
  const y = model.infer(img, "flatten_1");
  out.set(await y.data(), i * 1280);
  img.dispose();
  y.dispose();
}
writeFileSync(outPath, npyF32(out, [n, 1280]));
console.log(`wrote ${outPath}: ${n}×1280, tfjs ${tf.version.tfjs}, backend ${tf.getBackend()}`);
