#!/usr/bin/python3
"""Writes a label-derived retrieval problem for the many-positives benchmark.

usage: gen_labels.py DIR NQ NG D MODE [SEED]
MODE one-class:    every query and gallery row has label "c" (NG positives per query);
     one-positive: gallery row j has label "c<j>", query i has label "c<i>" (1 positive);
     classes-K:    query i has label "c<i mod K>", gallery row j "c<j mod K>" (NG/K positives
                   and NG - NG/K negatives per query, interleaved in the gallery).
Files: queries.npy, gallery.npy (float32, Gaussian), query_labels.txt, gallery_labels.txt.
"""
import os
import sys

import numpy as np

out, nq, ng, d, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
seed = int(sys.argv[6]) if len(sys.argv) > 6 else 1
rng = np.random.default_rng(seed)
os.makedirs(out, exist_ok=True)
np.save(os.path.join(out, "queries.npy"), rng.standard_normal((nq, d), dtype=np.float32))
np.save(os.path.join(out, "gallery.npy"), rng.standard_normal((ng, d), dtype=np.float32))
if mode == "one-class":
    ql, gl = ["c"] * nq, ["c"] * ng
elif mode == "one-positive":
    ql, gl = [f"c{i % ng}" for i in range(nq)], [f"c{j}" for j in range(ng)]
elif mode.startswith("classes-"):
    k = int(mode[len("classes-"):])
    ql, gl = [f"c{i % k}" for i in range(nq)], [f"c{j % k}" for j in range(ng)]
else:
    sys.exit(f"unknown mode {mode}")
for name, labels in (("query_labels.txt", ql), ("gallery_labels.txt", gl)):
    with open(os.path.join(out, name), "w") as f:
        f.write("\n".join(labels) + "\n")
