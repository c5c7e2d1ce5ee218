"""evaluate_mteb equals the CLI on a BEIR-layout fixture (corpus.jsonl,
queries.jsonl, qrels/test.tsv with its header), read the way BEIR's
GenericDataLoader reads it."""

import csv
import json
import os

import numpy as np

import vertebrae
from conftest import assert_same_report


def write_beir(root, rng):
    os.makedirs(os.path.join(root, "qrels"), exist_ok=True)
    corpus = [f"d{i}" for i in range(40)]
    queries = [f"q{i}" for i in range(12)]
    with open(os.path.join(root, "corpus.jsonl"), "w") as f:
        for i, d in enumerate(corpus):
            f.write(json.dumps({"_id": d, "title": f"title {i}", "text": f"text of document {i}"}) + "\n")
    with open(os.path.join(root, "queries.jsonl"), "w") as f:
        for i, q in enumerate(queries):
            f.write(json.dumps({"_id": q, "text": f"question {i}"}) + "\n")
    with open(os.path.join(root, "qrels", "test.tsv"), "w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for i, q in enumerate(queries[:10]):
            for d in rng.choice(len(corpus), size=1 + i % 3, replace=False):
                f.write(f"{q}\t{corpus[d]}\t{1 + (i + d) % 3}\n")
            f.write(f"{q}\t{corpus[(7 * i + 1) % 40]}\t0\n")  # a judged non-relevant pair
        f.write(f"{queries[10]}\t{corpus[5]}\t0\n")  # q10: judged, without positives
        # q11 has no judgement at all
    return corpus, queries


def load_beir(root):
    """BEIR GenericDataLoader: corpus and queries in file order, qrels as {qid: {docid: int score}}."""
    with open(os.path.join(root, "corpus.jsonl")) as f:
        corpus = {json.loads(l)["_id"]: json.loads(l) for l in f}
    with open(os.path.join(root, "queries.jsonl")) as f:
        queries = {json.loads(l)["_id"]: json.loads(l)["text"] for l in f}
    qrels = {}
    with open(os.path.join(root, "qrels", "test.tsv")) as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        next(reader)
        for qid, did, score in reader:
            qrels.setdefault(qid, {})[did] = int(score)
    return corpus, queries, qrels


def test_evaluate_mteb_equals_cli(run_cli, tmp_path):
    rng = np.random.default_rng(42)
    root = str(tmp_path / "beir")
    write_beir(root, rng)
    corpus, queries, qrels = load_beir(root)
    corpus_ids, query_ids = list(corpus), list(queries)
    c = rng.standard_normal((len(corpus_ids), 24)).astype(np.float32)
    q = rng.standard_normal((len(query_ids), 24)).astype(np.float32)
    text = run_cli.run("--queries", run_cli.npy("q.npy", q), "--gallery", run_cli.npy("c.npy", c),
                       "--query-ids", run_cli.file("q.txt", query_ids),
                       "--gallery-ids", run_cli.file("c.txt", corpus_ids),
                       "--qrels", os.path.join(root, "qrels", "test.tsv"), "--gain", "linear",
                       "--drop-queries-without-positives", "--k", "1,3,5,10,20,100,1000",
                       "--similarity", "cosine", "--primary", "ndcg@10")
    r = vertebrae.evaluate_mteb(q, c, qrels, query_ids, corpus_ids)
    assert_same_report(r, text)
    assert r.metrics.keys() >= {"ndcg@10", "recall@100", "mrr", "map"}
    assert "q10" not in r.query_ids and "q11" not in r.query_ids and len(r.query_ids) == 10


def test_evaluate_mteb_ignore_identical_ids(run_cli, tmp_path):
    rng = np.random.default_rng(1)
    ids = [f"x{i}" for i in range(20)]
    e = rng.standard_normal((20, 8))
    qrels = {ids[i]: {ids[(i + 1) % 20]: 1} for i in range(20)}
    text = run_cli.run("--queries", run_cli.npy("e.npy", e), "--gallery", run_cli.npy("e.npy", e),
                       "--query-ids", run_cli.file("ids.txt", ids), "--gallery-ids", run_cli.file("ids.txt", ids),
                       "--qrels", run_cli.file("r.tsv", [f"{a}\t{b}\t1" for a, d in qrels.items() for b in d]),
                       "--exclusions", run_cli.file("ex.tsv", [f"{a}\t{a}" for a in ids]),
                       "--gain", "linear", "--drop-queries-without-positives", "--k", "1,3,5,10,20,100,1000")
    r = vertebrae.evaluate_mteb(e, e, qrels, ids, ids, ignore_identical_ids=True)
    assert_same_report(r, text)
