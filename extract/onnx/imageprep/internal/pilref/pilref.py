#!/usr/bin/python3
"""Reference fixtures for extract/onnx/imageprep, produced with Pillow and numpy.

Regenerate (from the repository root) with Debian's python3-pil and
python3-numpy, i.e. /usr/bin/python3, not a pyenv interpreter:

    /usr/bin/python3 extract/onnx/imageprep/internal/pilref/pilref.py extract/onnx/imageprep/testdata

then run `go test ./extract/onnx/imageprep/ -run PIL -v` to see the parity figures.
The fixtures were generated with Pillow 9.4.0 / numpy 1.24.2 on x86-64
(Debian bookworm; Pillow's JPEG codec is libjpeg-turbo 2.1.5, its WebP codec
libwebp 1.2.4). Every output is deterministic: regenerating with these
versions reproduces the committed files byte for byte.

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
pil_jpeg/*.jpg  Small baseline JPEGs written by PIL (quality 90) with 4:4:4,
                4:2:2 and 4:2:0 chroma subsampling, plus 4:4:0 and 4:1:1 files
                made by relabelling the SOF sampling factors of a PIL 4:2:2 or
                4:2:0 file (see relabel_sof; the coefficients are unchanged, so
                the picture is scrambled but the file is valid) and one
                progressive file. Contents: uniform noise (worst case), a
                smooth gradient, and flat 16x16 colour blocks (DC-only blocks,
                whose IDCT is exact in both decoders).
pil_jpeg.bin    PIL's decoded RGB pixels for each pil_jpeg/*.jpg, i.e.
                np.asarray(Image.open(path).convert("RGB")) through Pillow's
                libjpeg-turbo (default islow IDCT, fancy upsampling).
                Layout (little endian): magic b"PILJPG1\\n", u32 case count, then
                per case: u8 name length, name (file name in pil_jpeg/),
                u16 width, u16 height, width*height*3 bytes of RGB (row major,
                interleaved).
pil_webp/*.webp Small lossy WebPs written by PIL (quality 80, VP8 4:2:0): uniform
                noise and smooth gradients at odd and even sizes (down to 1x1),
                and two RGBA images (VP8X with a losslessly coded ALPH chunk,
                alpha a diagonal ramp, see webp_alpha).
pil_webp.bin    PIL's decoded RGB pixels for each pil_webp/*.webp, i.e.
                np.asarray(Image.open(path).convert("RGB")) through libwebp with
                default options (fancy upsampling; alpha dropped by convert).
                Same layout as pil_jpeg.bin with magic b"PILWEB1\\n".
"""

import hashlib
import io
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


def jpeg_source(kind, w, h, seed):
    """kind "noise": uniform noise; "smooth": sinusoidal gradients;
    "blocks": flat 16x16 blocks of pseudo-random colours."""
    if kind == "noise":
        return image(0, w, h, seed)
    if kind == "smooth":
        y, x = np.mgrid[0:h, 0:w].astype(np.float64)
        r = 127.5 + 110 * np.sin(x * 0.21 + y * 0.07)
        g = 127.5 + 110 * np.cos(x * 0.05 - y * 0.17)
        b = 255 * (x + 2 * y) / max(1, w + 2 * h - 3)
        return np.clip(np.rint(np.stack([r, g, b], axis=-1)), 0, 255).astype(np.uint8)
    g = lcg(seed)
    bw, bh = (w + 15) // 16, (h + 15) // 16
    cols = np.array([next(g) for _ in range(bw * bh * 3)], dtype=np.uint8).reshape(bh, bw, 3)
    return np.ascontiguousarray(cols.repeat(16, axis=0).repeat(16, axis=1)[:h, :w])


def relabel_sof(data, luma_hv, w, h):
    """Rewrite the baseline SOF0 of a 3-component JPEG: new size w x h and
    luma sampling factors luma_hv (chroma stays 1x1). The entropy-coded data
    is untouched, so the caller must keep the number of blocks per MCU and
    the number of MCUs unchanged."""
    data = bytearray(data)
    i = 2
    while True:
        assert data[i] == 0xFF, "marker expected"
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker == 0xC0:
            assert data[i + 9] == 3, "3 components expected"
            struct.pack_into(">HH", data, i + 5, h, w)
            data[i + 11] = luma_hv
            return bytes(data)
        assert marker not in (0xC2, 0xDA), "no baseline SOF0 before SOS"
        i += 2 + length


SUBSAMPLING = {"444": 0, "422": 1, "420": 2}
JPEG_CASES = [  # (kind, w, h, sampling, seed)
    ("noise", 33, 17, "444", 201), ("noise", 33, 17, "422", 201), ("noise", 33, 17, "420", 201),
    ("noise", 48, 32, "444", 202), ("noise", 48, 32, "422", 202), ("noise", 48, 32, "420", 202),
    ("noise", 7, 5, "422", 203), ("noise", 7, 5, "420", 203),
    ("noise", 3, 3, "420", 204),     # downsampled width 2: libjpeg box-filters
    ("noise", 33, 17, "440", 205),   # relabelled 4:2:2
    ("noise", 33, 17, "411", 206),   # relabelled 4:2:0
    ("noise", 33, 17, "420p", 207),  # progressive
    ("smooth", 48, 32, "444", 0), ("smooth", 48, 32, "422", 0), ("smooth", 48, 32, "420", 0),
    ("smooth", 33, 17, "420", 0),
    ("blocks", 48, 32, "444", 208), ("blocks", 48, 32, "422", 208), ("blocks", 48, 32, "420", 208),
    ("blocks", 41, 23, "420", 209), ("blocks", 41, 23, "440", 209),
]


def write_jpeg(dirpath, binpath):
    os.makedirs(dirpath, exist_ok=True)
    cases = []
    for kind, w, h, samp, seed in JPEG_CASES:
        name = f"{kind}_{w}x{h}_{samp}.jpg"
        arr = jpeg_source(kind, w, h, seed)
        buf = io.BytesIO()
        opts = {"quality": 90}
        if samp == "440":    # PIL 4:2:2 at h x w, relabelled to 4:4:0 at w x h
            src = jpeg_source(kind, h, w, seed)
            Image.fromarray(src, "RGB").save(buf, "JPEG", subsampling=1, **opts)
            data = relabel_sof(buf.getvalue(), 0x12, w, h)
        elif samp == "411":  # PIL 4:2:0 at w/2 x 2h, relabelled to 4:1:1 at w x h
            sw, sh = (w + 1) // 2, 2 * h
            src = jpeg_source(kind, sw, sh, seed)
            Image.fromarray(src, "RGB").save(buf, "JPEG", subsampling=2, **opts)
            data = relabel_sof(buf.getvalue(), 0x41, w, h)
        else:
            progressive = samp.endswith("p")
            Image.fromarray(arr, "RGB").save(buf, "JPEG", subsampling=SUBSAMPLING[samp.rstrip("p")],
                                             progressive=progressive, **opts)
            data = buf.getvalue()
        path = os.path.join(dirpath, name)
        with open(path, "wb") as f:
            f.write(data)
        with Image.open(path) as im:
            assert im.size == (w, h), (name, im.size)
            rgb = np.asarray(im.convert("RGB"), dtype=np.uint8)
        assert rgb.shape == (h, w, 3)
        cases.append(struct.pack("<B", len(name)) + name.encode() + struct.pack("<HH", w, h) + rgb.tobytes())
    with open(binpath, "wb") as f:
        f.write(b"PILJPG1\n")
        f.write(struct.pack("<I", len(cases)))
        for c in cases:
            f.write(c)
    return len(cases)


WEBP_CASES = [  # (kind, w, h, seed, alpha)
    ("noise", 33, 17, 301, False), ("noise", 48, 32, 302, False), ("noise", 7, 5, 303, False),
    ("noise", 17, 33, 304, False), ("noise", 2, 3, 305, False), ("noise", 1, 1, 306, False),
    ("smooth", 48, 32, 0, False), ("smooth", 33, 17, 0, False),
    ("noise", 33, 17, 307, True), ("smooth", 48, 32, 0, True),
]


def webp_alpha(w, h):
    """Alpha for the RGBA WebP cases: a diagonal ramp, fully transparent in
    the top-left corner and opaque in the bottom-right one."""
    y, x = np.mgrid[0:h, 0:w]
    return np.clip((x + y) * 255 // max(1, w + h - 2) * 2 - 128, 0, 255).astype(np.uint8)


def write_webp(dirpath, binpath):
    os.makedirs(dirpath, exist_ok=True)
    cases = []
    for kind, w, h, seed, alpha in WEBP_CASES:
        name = f"{kind}_{w}x{h}{'_alpha' if alpha else ''}.webp"
        arr = jpeg_source(kind, w, h, seed)
        if alpha:
            im = Image.fromarray(np.dstack([arr, webp_alpha(w, h)]), "RGBA")
        else:
            im = Image.fromarray(arr, "RGB")
        buf = io.BytesIO()
        im.save(buf, "WEBP", quality=80)  # lossy (VP8), alpha in a lossless ALPH chunk
        data = buf.getvalue()
        assert data[12:16] == (b"VP8X" if alpha else b"VP8 "), (name, data[12:16])
        path = os.path.join(dirpath, name)
        with open(path, "wb") as f:
            f.write(data)
        with Image.open(path) as im:
            assert im.size == (w, h), (name, im.size)
            assert im.mode == ("RGBA" if alpha else "RGB"), (name, im.mode)
            rgb = np.asarray(im.convert("RGB"), dtype=np.uint8)
        assert rgb.shape == (h, w, 3)
        cases.append(struct.pack("<B", len(name)) + name.encode() + struct.pack("<HH", w, h) + rgb.tobytes())
    with open(binpath, "wb") as f:
        f.write(b"PILWEB1\n")
        f.write(struct.pack("<I", len(cases)))
        for c in cases:
            f.write(c)
    return len(cases)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "testdata")
    n = write_resize(os.path.join(out, "pil_resize.bin"))
    m = write_clip(os.path.join(out, "pil_clip.json"))
    k = write_jpeg(os.path.join(out, "pil_jpeg"), os.path.join(out, "pil_jpeg.bin"))
    v = write_webp(os.path.join(out, "pil_webp"), os.path.join(out, "pil_webp.bin"))
    print(f"wrote {n} resize cases, {m} pipeline cases, {k} JPEG cases and {v} WebP cases to {out}")


if __name__ == "__main__":
    main()
