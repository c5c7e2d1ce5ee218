#!/usr/bin/python3
"""Reference fixtures for extract/imageprep, produced with Pillow and numpy.

Regenerate (from the repository root) with Debian's python3-pil and
python3-numpy, i.e. /usr/bin/python3, not a pyenv interpreter:

    /usr/bin/python3 extract/imageprep/internal/pilref/pilref.py extract/imageprep/testdata

then run `go test ./extract/imageprep/ -run PIL -v` to see the parity figures.
The fixtures were generated with Pillow 9.4.0 / numpy 1.24.2 on x86-64.

Outputs (in the given directory):

pil_resize.bin  PIL Image.resize results for deterministic pseudo-random RGB
                images. Layout (little endian):
                  magic b"PILRSZ1\\n", u32 case count, then per case:
                  u8 filter (2 bilinear, 3 bicubic), u8 kind, u16 in_w,
                  u16 in_h, u16 out_w, u16 out_h, u32 seed,
                  out_w*out_h*3 bytes of RGB output (row major, interleaved).
                The inputs are not stored: image(kind, w, h, seed) below is
                reimplemented bit for bit in the Go test (pilImage).
pil_clip.json   The Hugging Face CLIP slow-processor pipeline (resize shortest
                edge bicubic -> centre crop -> rescale -> normalise) written
                out in numpy the way transformers' image_transforms does it.
                Small-config cases store the whole float32 CHW tensor; the
                224 cases store the SHA-256 of the little-endian float32
                tensor plus every 499th value. Floats are written as JSON strings
                holding the shortest decimal of the float32 value.
"""

import hashlib
import json
import math
import os
import struct
import sys

import numpy as np
from PIL import Image
import PIL


def lcg(seed):
    """Numerical Recipes LCG; yields the top byte of each 32-bit state."""
    state = seed & 0xFFFFFFFF
    while True:
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        yield state >> 24


def image(kind, w, h, seed):
    """kind 0: uniform noise; kind 1: 3x3 blocks of 0/255 per channel."""
    g = lcg(seed)
    if kind == 0:
        data = bytes(next(g) for _ in range(w * h * 3))
        return np.frombuffer(data, dtype=np.uint8).reshape(h, w, 3)
    bw, bh = (w + 2) // 3, (h + 2) // 3
    blocks = [255 if next(g) >= 128 else 0 for _ in range(bw * bh * 3)]
    arr = np.zeros((h, w, 3), dtype=np.uint8)
    for y in range(h):
        for x in range(w):
            for c in range(3):
                arr[y, x, c] = blocks[((y // 3) * bw + x // 3) * 3 + c]
    return arr


RESIZE_INPUTS = [  # (kind, w, h)
    (0, 5, 7), (0, 7, 5), (0, 1, 1), (0, 1, 9), (0, 13, 11), (0, 16, 16),
    (0, 31, 17), (0, 64, 48), (0, 48, 64), (1, 29, 23), (1, 64, 48),
]


def targets(w, h):
    out = [
        (w * 2 + 1, h * 3),                              # upscale, odd ratios
        (max(1, w * 2 // 5), max(1, h * 3 // 7)),        # downscale
        (max(1, w // 3), h * 2),                         # mixed
        (w, max(1, h * 5 // 9)),                         # vertical pass only
        (w * 3 // 2 + 1, h),                             # horizontal pass only
        (1, 1),
        (max(1, w - 1), h + 1),                          # tiny ratios
    ]
    seen, res = set(), []
    for t in out:
        if t not in seen and t[0] * t[1] <= 2600:
            seen.add(t)
            res.append(t)
    return res


def write_resize(path):
    cases = []
    seed = 1
    for kind, w, h in RESIZE_INPUTS:
        seed += 1
        src = Image.fromarray(image(kind, w, h, seed), "RGB")
        for tw, th in targets(w, h):
            for flt in (Image.BILINEAR, Image.BICUBIC):
                out = np.asarray(src.resize((tw, th), resample=flt), dtype=np.uint8)
                assert out.shape == (th, tw, 3)
                cases.append(struct.pack("<BBHHHHI", int(flt), kind, w, h, tw, th, seed) + out.tobytes())
    with open(path, "wb") as f:
        f.write(b"PILRSZ1\n")
        f.write(struct.pack("<I", len(cases)))
        for c in cases:
            f.write(c)
    return len(cases)


CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]
RESCALE = 0.00392156862745098


def hf_resize_shortest(arr, s, resample):
    h, w = arr.shape[:2]
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = s, int(s * long / short)
    oh, ow = (new_long, new_short) if w <= h else (new_short, new_long)
    return np.array(Image.fromarray(arr).resize((ow, oh), resample=resample))


def hf_center_crop(arr, ch, cw):
    """transformers.image_transforms.center_crop on an HWC uint8 array."""
    oh, ow = arr.shape[:2]
    top = (oh - ch) // 2
    left = (ow - cw) // 2
    if top >= 0 and top + ch <= oh and left >= 0 and left + cw <= ow:
        return arr[top:top + ch, left:left + cw]
    nh, nw = max(ch, oh), max(cw, ow)
    new = np.zeros((nh, nw, arr.shape[2]), dtype=arr.dtype)
    tp = math.ceil((nh - oh) / 2)
    lp = math.ceil((nw - ow) / 2)
    new[tp:tp + oh, lp:lp + ow] = arr
    top += tp
    left += lp
    return new[max(0, top):min(nh, top + ch), max(0, left):min(nw, left + cw)]


def clip_pipeline(arr, s, crop):
    arr = hf_resize_shortest(arr, s, Image.BICUBIC)
    arr = hf_center_crop(arr, crop, crop)
    x = (arr.astype(np.float64) * RESCALE).astype(np.float32)   # rescale
    mean = np.array(CLIP_MEAN, dtype=np.float32)
    std = np.array(CLIP_STD, dtype=np.float32)
    x = (x - mean) / std                                        # normalize
    assert x.dtype == np.float32
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def f32str(v):
    """Shortest decimal that round-trips to the float32 v (parse with 32-bit precision)."""
    return repr(np.float32(v)).replace("np.float32(", "").rstrip(")")


def write_clip(path):
    cases = []
    specs = [  # (kind, w, h, seed, shortest_edge, crop, full)
        (0, 61, 47, 101, 224, 224, False),
        (0, 300, 257, 102, 224, 224, False),
        (1, 40, 90, 103, 224, 224, False),
        (0, 37, 29, 104, 24, 24, True),
        (1, 50, 21, 105, 16, 20, True),   # crop larger than the resized width: zero padding
        (0, 9, 30, 106, 12, 10, True),
    ]
    for kind, w, h, seed, s, crop, full in specs:
        t = clip_pipeline(image(kind, w, h, seed), s, crop)
        flat = t.reshape(-1)
        case = {
            "kind": kind, "w": w, "h": h, "seed": seed,
            "shortest_edge": s, "crop": crop,
            "shape": list(t.shape),
            "sha256": hashlib.sha256(flat.astype("<f4").tobytes()).hexdigest(),
        }
        if full:
            case["values"] = [f32str(v) for v in flat]
        else:
            case["sample_step"] = 499
            case["sample"] = [f32str(v) for v in flat[::499]]
        cases.append(case)
    doc = {
        "pillow": PIL.__version__, "numpy": np.__version__,
        "image_mean": CLIP_MEAN, "image_std": CLIP_STD, "rescale_factor": RESCALE,
        "cases": cases,
    }
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    return len(cases)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "testdata")
    n = write_resize(os.path.join(out, "pil_resize.bin"))
    m = write_clip(os.path.join(out, "pil_clip.json"))
    print(f"wrote {n} resize cases and {m} pipeline cases to {out}")


if __name__ == "__main__":
    main()
