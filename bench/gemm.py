#!/usr/bin/python3
"""OpenBLAS gemm alone on random operands: Q×D times D×G, one thread when
OPENBLAS_NUM_THREADS=1. Prints the median of REPEAT runs.

usage: gemm.py Q G D float64|float32 [REPEAT]
"""
import sys
import time

import numpy as np

nq, ng, d, dt = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rep = int(sys.argv[5]) if len(sys.argv) > 5 else 3
rng = np.random.default_rng(1)
a = rng.standard_normal((nq, d)).astype(dt)
b = rng.standard_normal((ng, d)).astype(dt)
out = np.empty((nq, 8192), dtype=dt)
ts = []
for _ in range(rep):
    t0 = time.perf_counter()
    for g0 in range(0, ng, 8192):  # blocked like a scorer, so the output fits in memory
        blk = b[g0:g0 + 8192]
        np.matmul(a, blk.T, out=out[:, :len(blk)])
    ts.append(time.perf_counter() - t0)
print(f"{'d' if dt == 'float64' else 's'}gemm {nq}x{ng}x{d}: {sorted(ts)[len(ts) // 2]:.3f} s")
