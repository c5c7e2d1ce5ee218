#!/usr/bin/python3
"""The Python API against the CLI and numpy on the same arrays (issue #29):

  (a)  vertebrae.evaluate(q, g, qrels=...) in-process, arrays already in memory
  (a') the same with np.load of the .npy files first (file to report, as the CLI)
  (b)  `vertebrae retrieval run --queries ... --gallery ... --qrels ...` (subprocess wall)
  (c)  bench/numpy_protocol.py: the exact protocol in numpy float64 (subprocess;
       its own timing, loading included, interpreter start excluded)
  (d)  MTEB's exact search (DenseRetrievalExactSearch) reimplemented in numpy,
       in-process: float32 cosine by normalised matmul over corpus chunks of
       50,000, top-k 1,000 per query (argpartition + sort), merged, then
       ndcg@10 from the top-k (what pytrec_eval would read)

run in that order in each round (alternating, so all see the same machine
state); the medians of N rounds and of the per-round ratios are printed.
Target: (a) / (b) <= 1.05 (the Python call costs no more than the CLI).

usage: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/python_overhead.py \
           [--queries 1000] [--gallery 100000] [--dim 384] [--rounds 5] [--dir DIR]
Needs the CLI and the library: built from this checkout into DIR unless
$VERTEBRAE_CLI / $VERTEBRAE_LIB are set.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def build(d):
    env = dict(os.environ, CGO_ENABLED="1")
    cli = os.environ.get("VERTEBRAE_CLI") or os.path.join(d, "vertebrae")
    if not os.environ.get("VERTEBRAE_CLI"):
        subprocess.run(["go", "build", "-o", cli, "./cmd/vertebrae"], cwd=ROOT, env=env, check=True)
    if not os.environ.get("VERTEBRAE_LIB"):
        lib = os.path.join(d, "libvertebrae.so")
        subprocess.run(["go", "build", "-buildmode=c-shared", "-o", lib, "./cmd/libvertebrae"], cwd=ROOT, env=env,
                       check=True)
        os.environ["VERTEBRAE_LIB"] = lib
    return cli


def read_qrels(path):
    rel = np.loadtxt(path, dtype=np.int64, ndmin=2)
    return [(int(a), int(b), int(c)) for a, b, c in rel]


def mteb_exact_search(q, g, pos, top_k=1000, chunk=50_000):
    """MTEB/BEIR DenseRetrievalExactSearch in numpy: cosine scores by corpus
    chunk, the top-k of each chunk, merged into the top-k per query; ndcg@10
    of the single positive from that list."""
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    k = min(top_k, len(g))
    best_s = np.full((len(q), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(q), 0), dtype=np.int64)
    for c0 in range(0, len(g), chunk):
        gc = g[c0:c0 + chunk]
        gc = gc / np.linalg.norm(gc, axis=1, keepdims=True)
        s = q @ gc.T  # sgemm
        kk = min(k, s.shape[1])
        part = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
        best_s = np.concatenate([best_s, np.take_along_axis(s, part, axis=1)], axis=1)
        best_i = np.concatenate([best_i, part + c0], axis=1)
        if best_s.shape[1] > k:
            keep = np.argpartition(-best_s, k - 1, axis=1)[:, :k]
            best_s = np.take_along_axis(best_s, keep, axis=1)
            best_i = np.take_along_axis(best_i, keep, axis=1)
    order = np.argsort(-best_s, axis=1, kind="stable")
    ranked = np.take_along_axis(best_i, order, axis=1)
    hit = ranked[:, :10] == pos[:, None]
    rank = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, 0)
    return np.where(rank > 0, 1 / np.log2(rank + 1), 0).mean()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--gallery", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=os.environ.get("BENCH_DIR", "/tmp/vertebrae-bench"))
    ap.add_argument("--similarity", default="cosine")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    cli = build(args.dir)
    import vertebrae

    data = os.path.join(args.dir, f"py-{args.queries}x{args.gallery}x{args.dim}")
    if not os.path.exists(os.path.join(data, "qrels.tsv")):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_embeddings.py"), data,
                        str(args.queries), str(args.gallery), str(args.dim)], check=True)
    qf, gf, rf = (os.path.join(data, n) for n in ("queries.npy", "gallery.npy", "qrels.tsv"))
    q, g = np.load(qf), np.load(gf)
    qrels = read_qrels(rf)
    pos = np.empty(len(q), dtype=np.int64)
    for a, b, _ in qrels:
        pos[a] = b
    run = [cli, "retrieval", "run", "--queries", qf, "--gallery", gf, "--qrels", rf, "--similarity",
           args.similarity, "--quiet", "--json", os.devnull]

    def a():
        return vertebrae.evaluate(q, g, qrels=qrels, similarity=args.similarity).primary_score

    def a_load():
        return vertebrae.evaluate(np.load(qf), np.load(gf), qrels=read_qrels(rf),
                                  similarity=args.similarity).primary_score

    def b():
        subprocess.run(run, check=True, stdout=subprocess.DEVNULL)

    def c():
        out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "numpy_protocol.py"), data],
                             check=True, capture_output=True, text=True).stdout
        return float(out.split(":")[1].split()[0])  # its own seconds

    def d():
        return mteb_exact_search(q, g, pos)

    # warm-up: page cache, digest cache, library load, BLAS threads
    score = a()
    a_load(), b(), d()
    print(f"Q={args.queries} G={args.gallery} D={args.dim} {args.similarity}, {args.rounds} rounds; "
          f"ndcg@10 {score:.6f} (vertebrae), {d():.6f} (MTEB-style top-1000 search)", flush=True)
    names = ["(a) vertebrae.evaluate, in memory", "(a') np.load + vertebrae.evaluate",
             "(b) vertebrae retrieval run (CLI)", "(c) numpy_protocol.py, float64 exact",
             "(d) MTEB exact search in numpy, top-1000"]
    times = {n: [] for n in names}
    for _ in range(args.rounds):
        for n, f in zip(names, (a, a_load, b, c, d)):
            t0 = time.perf_counter()
            own = f()
            dt = time.perf_counter() - t0
            times[n].append(own if n.startswith("(c)") else dt)
    med = {n: statistics.median(v) for n, v in times.items()}
    for n in names:
        print(f"  {n:42s} {med[n]:8.3f} s   [{' '.join(f'{x:.3f}' for x in times[n])}]")

    def ratio(x, y):
        return statistics.median(p / r for p, r in zip(times[names[x]], times[names[y]]))

    print(f"  per-round ratio (a)  / (b):  {ratio(0, 2):.3f}x   (target <= 1.05)")
    print(f"  per-round ratio (a') / (b):  {ratio(1, 2):.3f}x")
    print(f"  per-round ratio (c)  / (a):  {ratio(3, 0):.3f}x   (numpy float64 exact vs the Python API)")
    print(f"  per-round ratio (d)  / (a):  {ratio(4, 0):.3f}x   (MTEB-style float32 top-k vs the Python API)")


if __name__ == "__main__":
    main()
