#!/usr/bin/python3
"""A straightforward numpy float64 implementation of the same protocol:
cosine in float64 (OpenBLAS dgemm for the products, in gallery blocks),
exact rank of each query's positive with the tie rule (higher score first,
then lower gallery index), nearest negative, and ndcg@10 / recall@10 / mrr.
Prints the wall seconds of the whole job (loading included).

usage: numpy_protocol.py DIR
"""
import sys
import time

import numpy as np

t0 = time.perf_counter()
d = sys.argv[1]
q = np.load(f"{d}/queries.npy").astype(np.float64)
g = np.load(f"{d}/gallery.npy").astype(np.float64)
rel = np.loadtxt(f"{d}/qrels.tsv", dtype=np.int64, ndmin=2)
pos = np.empty(len(q), dtype=np.int64)
pos[rel[:, 0]] = rel[:, 1]
q /= np.linalg.norm(q, axis=1, keepdims=True)
g /= np.linalg.norm(g, axis=1, keepdims=True)
sp = np.einsum("ij,ij->i", q, g[pos])  # the positives' scores
ahead = np.zeros(len(q), dtype=np.int64)
nearest = np.full(len(q), -np.inf)
block = 8192
idx = np.arange(len(g))
for g0 in range(0, len(g), block):
    s = q @ g[g0:g0 + block].T  # dgemm
    gi = idx[g0:g0 + block]
    ispos = gi[None, :] == pos[:, None]
    ahead += ((s > sp[:, None]) | ((s == sp[:, None]) & (gi[None, :] < pos[:, None]))).sum(axis=1)
    s[ispos] = -np.inf
    nearest = np.maximum(nearest, s.max(axis=1))
rank = 1 + ahead
ndcg10 = np.where(rank <= 10, 1 / np.log2(rank + 1), 0).mean()
recall10 = (rank <= 10).mean()
mrr = (1 / rank).mean()
dt = time.perf_counter() - t0
print(f"numpy float64 protocol: {dt:.3f} s (ndcg@10 {ndcg10:.6f}, recall@10 {recall10:.6f}, mrr {mrr:.6f})")
