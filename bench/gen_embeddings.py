#!/usr/bin/python3
"""Writes the peer-comparison problem: Q×D queries and G×D gallery rows
(float32, Gaussian clusters so that scores look like real embeddings), one
positive per query (qrels.tsv), and ids.

usage: gen_embeddings.py DIR Q G D [SEED]
"""
import os
import sys

import numpy as np

out, nq, ng, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1
rng = np.random.default_rng(seed)
os.makedirs(out, exist_ok=True)
centres = rng.standard_normal((256, d), dtype=np.float32)
gallery = centres[rng.integers(0, 256, ng)] + 0.8 * rng.standard_normal((ng, d), dtype=np.float32)
pos = rng.integers(0, ng, nq)
queries = gallery[pos] + 0.6 * rng.standard_normal((nq, d), dtype=np.float32)
np.save(os.path.join(out, "queries.npy"), queries.astype(np.float32))
np.save(os.path.join(out, "gallery.npy"), gallery.astype(np.float32))
with open(os.path.join(out, "qrels.tsv"), "w") as f:
    for q, g in enumerate(pos):
        f.write(f"{q}\t{g}\t1\n")
