#!/usr/bin/python3
"""FAISS IndexFlatIP top-100 search on the normalised float32 rows: the
search alone, no metrics. Prints the wall seconds (loading included).

usage: faiss_topk.py DIR
"""
import sys
import time

import faiss
import numpy as np

t0 = time.perf_counter()
d = sys.argv[1]
q = np.load(f"{d}/queries.npy").astype(np.float32)
g = np.load(f"{d}/gallery.npy").astype(np.float32)
faiss.normalize_L2(q)
faiss.normalize_L2(g)
index = faiss.IndexFlatIP(g.shape[1])
index.add(g)
index.search(q, 100)
print(f"faiss IndexFlatIP top-100: {time.perf_counter() - t0:.3f} s")
