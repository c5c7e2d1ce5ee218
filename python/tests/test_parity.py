"""Every result of the Python API equals the CLI's JSON report for the same
inputs (files written with np.save, one ID or label per line, TSV qrels)."""

import json
import os

import numpy as np
import pytest

import vertebrae
from conftest import assert_same_report, normalize, normalized

NQ, NG, D = 9, 23, 16


def problem(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((NG, D)).astype(dtype)
    pos = rng.permutation(NG)[:NQ]
    q = (g[pos] + 0.9 * rng.standard_normal((NQ, D))).astype(dtype)
    qids = [f"q-{i}" for i in range(NQ)]
    gids = [f"doc{i:03d}" for i in range(NG)]
    triples = []
    for i, p in enumerate(pos):
        triples.append((qids[i], gids[p], 2 if i % 3 == 0 else 1))
        triples.append((qids[i], gids[(p + 1) % NG], 1 if i % 2 else 0))
    return q, g, qids, gids, triples


def qrels_file(cli, triples, name="qrels.tsv"):
    return cli.file(name, [f"{a}\t{b}\t{c}" for a, b, c in triples])


def files(cli, q, g, qids, gids, triples):
    return ["--queries", cli.npy("q.npy", q), "--gallery", cli.npy("g.npy", g),
            "--query-ids", cli.file("q.txt", qids), "--gallery-ids", cli.file("g.txt", gids),
            "--qrels", qrels_file(cli, triples)]


def test_qrels_triples(run_cli):
    q, g, qids, gids, triples = problem()
    text = run_cli.run(*files(run_cli, q, g, qids, gids, triples))
    r = vertebrae.evaluate(q, g, qrels=triples, query_ids=qids, gallery_ids=gids)
    assert_same_report(r, text)
    assert r.name == "precomputed"
    assert r.primary_score == r.metrics["ndcg@10"]
    assert r.query_ids == qids
    assert r.per_query["ndcg@10"].shape == (NQ,)
    assert r.per_query["ndcg@10"].dtype == np.float64
    assert r.per_query["mrr"].mean() == pytest.approx(r.metrics["mrr"])


def test_mteb_dict_qrels(run_cli):
    q, g, qids, gids, triples = problem(1)
    text = run_cli.run(*files(run_cli, q, g, qids, gids, triples))
    d = {}
    for a, b, c in triples:
        d.setdefault(a, {})[b] = c
    r = vertebrae.evaluate(q, g, qrels=d, query_ids=qids, gallery_ids=gids)
    assert_same_report(r, text)


def test_row_number_ids(run_cli):
    q, g, _, _, _ = problem(2)
    triples = [(i, (3 * i) % NG, 1) for i in range(NQ)]
    text = run_cli.run("--queries", run_cli.npy("q.npy", q), "--gallery", run_cli.npy("g.npy", g),
                       "--qrels", qrels_file(run_cli, triples))
    assert_same_report(vertebrae.evaluate(q, g, qrels=triples), text)
    # numpy integer IDs and grades are converted with str()/float()
    arr = np.array(triples, dtype=np.int64)
    assert_same_report(vertebrae.evaluate(q, g, qrels=list(map(tuple, arr))), text)


def test_dense_relevance(run_cli):
    q, g, _, _, _ = problem(3)
    rng = np.random.default_rng(3)
    rel = (rng.random((NQ, NG)) < 0.15).astype(np.float64) * rng.integers(1, 3, (NQ, NG))
    rel[np.arange(NQ), np.arange(NQ)] = 1
    text = run_cli.run("--queries", run_cli.npy("q.npy", q), "--gallery", run_cli.npy("g.npy", g),
                       "--qrels", run_cli.npy("rel.npy", rel))
    assert_same_report(vertebrae.evaluate(q, g, qrels=rel), text)
    # an integer or boolean matrix is converted once to float64
    text = run_cli.run("--queries", run_cli.npy("q.npy", q), "--gallery", run_cli.npy("g.npy", g),
                       "--qrels", run_cli.npy("rel.npy", (rel > 0).astype(np.float64)))
    assert_same_report(vertebrae.evaluate(q, g, qrels=rel > 0), text)


def test_labels(run_cli):
    q, g, qids, gids, _ = problem(4)
    ql = [f"c{i % 3}" for i in range(NQ)]
    gl = [f"c{i % 4}" for i in range(NG)]
    text = run_cli.run("--queries", run_cli.npy("q.npy", q), "--gallery", run_cli.npy("g.npy", g),
                       "--query-ids", run_cli.file("q.txt", qids), "--gallery-ids", run_cli.file("g.txt", gids),
                       "--query-labels", run_cli.file("ql.txt", ql), "--gallery-labels", run_cli.file("gl.txt", gl))
    r = vertebrae.evaluate(q, g, query_ids=qids, gallery_ids=gids, query_labels=ql, gallery_labels=gl)
    assert_same_report(r, text)
    assert_same_report(vertebrae.evaluate(q, g, query_ids=qids, gallery_ids=gids, labels=(ql, gl)), text)


def test_leave_one_out(run_cli):
    _, g, _, gids, _ = problem(5)
    labels = np.arange(NG) % 5  # numpy labels: str() of each
    text = run_cli.run("--queries", run_cli.npy("e.npy", g), "--query-ids", run_cli.file("ids.txt", gids),
                       "--query-labels", run_cli.file("l.txt", [str(x) for x in labels]), "--leave-one-out")
    r = vertebrae.evaluate(g, query_ids=gids, query_labels=labels, leave_one_out=True)
    assert_same_report(r, text)
    assert_same_report(vertebrae.evaluate(g, query_ids=gids, labels=labels), text)


def test_exclusions(run_cli):
    q, g, qids, gids, triples = problem(6)
    ex = [(qids[i], gids[(5 * i + 2) % NG]) for i in range(NQ)]
    text = run_cli.run(*files(run_cli, q, g, qids, gids, triples),
                       "--exclusions", run_cli.file("ex.tsv", [f"{a}\t{b}" for a, b in ex]))
    r = vertebrae.evaluate(q, g, qrels=triples, query_ids=qids, gallery_ids=gids, exclusions=ex)
    assert_same_report(r, text)
    assert r.report["dataset_summary"]["n_exclusions"] == len(ex)


def test_bidirectional(run_cli):
    q, g, qids, gids, triples = problem(7)
    text = run_cli.run(*files(run_cli, q, g, qids, gids, triples), "--bidirectional",
                       "--drop-queries-without-positives")
    r = vertebrae.evaluate(q, g, qrels=triples, query_ids=qids, gallery_ids=gids, bidirectional=True,
                           drop_queries_without_positives=True)
    assert_same_report(r, text)
    assert r.reverse_metrics is not None


def test_float32_precision(run_cli):
    q, g, qids, gids, triples = problem(8)
    text = run_cli.run(*files(run_cli, q, g, qids, gids, triples), "--precision", "float32")
    r = vertebrae.evaluate(q, g, qrels=triples, query_ids=qids, gallery_ids=gids, precision="float32")
    assert_same_report(r, text)


@pytest.mark.parametrize("similarity", ["cosine", "dot", "squared_l2"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_similarity(run_cli, similarity, dtype):
    q, g, qids, gids, triples = problem(9, dtype)
    text = run_cli.run(*files(run_cli, q, g, qids, gids, triples), "--similarity", similarity)
    r = vertebrae.evaluate(q, g, qrels=triples, query_ids=qids, gallery_ids=gids, similarity=similarity)
    assert_same_report(r, text)


def test_float16_input(run_cli):
    q, g, qids, gids, triples = problem(10, np.float16)
    text = run_cli.run(*files(run_cli, q, g, qids, gids, triples))
    r = vertebrae.evaluate(q, g, qrels=triples, query_ids=qids, gallery_ids=gids)
    assert_same_report(r, text)


def test_non_contiguous_and_converted_inputs(run_cli):
    q, g, qids, gids, triples = problem(11, np.float64)
    text = run_cli.run(*files(run_cli, q, g, qids, gids, triples))
    want = normalize(text)

    def same(qq, gg):
        r = vertebrae.evaluate(qq, gg, qrels=triples, query_ids=qids, gallery_ids=gids)
        assert normalize(r.to_json()) == want

    wide = np.zeros((NG, D + 5))
    wide[:, 2:2 + D] = g
    same(q, wide[:, 2:2 + D])  # padded rows: passed with their row stride
    same(np.asfortranarray(q), g)  # column-major: converted
    same(q[::-1][::-1], g[::-1].copy()[::-1])  # negative row stride: converted
    same(q.astype(">f8"), g)  # big-endian: converted
    same(q.tolist(), g.tolist())  # nested lists
    spaced = np.zeros((NQ, 2 * D))
    spaced[:, ::2] = q
    same(spaced[:, ::2], g)  # strided columns: converted
    # integer embeddings are converted to float64
    qi, gi = np.round(q * 10).astype(np.int32), np.round(g * 10).astype(np.int32)
    text = run_cli.run(*files(run_cli, qi.astype(np.float64), gi.astype(np.float64), qids, gids, triples))
    r = vertebrae.evaluate(qi, gi, qrels=triples, query_ids=qids, gallery_ids=gids)
    assert normalize(r.to_json()) == normalize(text)


def test_options(run_cli):
    q, g, qids, gids, triples = problem(12)
    text = run_cli.run(*files(run_cli, q, g, qids, gids, triples), "--name", "my-model", "--k", "1,3,7",
                       "--primary", "mrr", "--gain", "linear", "--worst-queries", "3",
                       "--dataset-id", "toy", "--dataset-revision", "r1", "--query-batch-size", "4",
                       "--gallery-batch-size", "5", "--threads", "1", "--no-per-query",
                       "--max-memory-bytes", "1GiB")
    r = vertebrae.evaluate(q, g, qrels=triples, query_ids=qids, gallery_ids=gids, name="my-model", k=(1, 3, 7),
                           primary="mrr", gain="linear", worst_queries=3, dataset_id="toy",
                           dataset_revision="r1", query_batch_size=4, gallery_batch_size=5, threads=1,
                           per_query=False, max_memory="1GiB")
    assert_same_report(r, text)
    assert r.name == "my-model" and r.primary_metric == "mrr"
    assert r.per_query is None


def test_drop_queries_without_positives(run_cli):
    q, g, qids, gids, triples = problem(13)
    triples = [t for t in triples if t[0] != qids[4]] + [(qids[4], gids[0], 0)]
    text = run_cli.run(*files(run_cli, q, g, qids, gids, triples), "--drop-queries-without-positives")
    r = vertebrae.evaluate(q, g, qrels=triples, query_ids=qids, gallery_ids=gids,
                           drop_queries_without_positives=True)
    assert_same_report(r, text)
    assert qids[4] not in r.query_ids


def same_tree(a, b):
    names = sorted(os.listdir(a))
    assert names and sorted(os.listdir(b)) == names
    for n in names:
        assert (b / n).read_bytes() == (a / n).read_bytes(), n


def test_renderings(run_cli, tmp_path):
    q, g, qids, gids, triples = problem(14)
    args = files(run_cli, q, g, qids, gids, triples)
    out = tmp_path / "cli"
    out.mkdir()
    run_cli.run(*args, "--markdown", out / "r.md", "--csv", out / "r.csv",
                "--html", out / "r.html", "--plots", out / "plots", "--plot-format", "both")
    r = vertebrae.evaluate(q, g, qrels=triples, query_ids=qids, gallery_ids=gids)
    py = tmp_path / "py"
    py.mkdir()
    assert r.to_markdown() == (out / "r.md").read_text()
    r.to_markdown(py / "r.md")
    assert (py / "r.md").read_bytes() == (out / "r.md").read_bytes()
    r.to_csv(py / "r.csv")
    assert (py / "r.csv").read_bytes() == (out / "r.csv").read_bytes()
    r.to_html(py / "r.html")
    assert (py / "r.html").read_bytes() == (out / "r.html").read_bytes()
    r.plots(py / "plots", format="both")
    same_tree(out / "plots", py / "plots")


def test_html_and_plots_equal_retrieval_run(run_cli, tmp_path):
    q, g, qids, gids, triples = problem(14)
    out = tmp_path / "cli"
    out.mkdir()
    run_cli.run(*files(run_cli, q, g, qids, gids, triples), "--html", out / "r.html", "--plots", out / "plots")
    r = vertebrae.evaluate(q, g, qrels=triples, query_ids=qids, gallery_ids=gids)
    r.plots(tmp_path / "plots")
    same_tree(out / "plots", tmp_path / "plots")
    r.to_html(tmp_path / "r.html")
    assert (tmp_path / "r.html").read_bytes() == (out / "r.html").read_bytes()


def test_compare(run_cli, tmp_path):
    q, g, qids, gids, triples = problem(15)
    rng = np.random.default_rng(15)
    q2 = q + 0.5 * rng.standard_normal(q.shape).astype(np.float32)
    args = files(run_cli, q, g, qids, gids, triples)
    a = run_cli.run(*args, "--name", "a")
    (tmp_path / "a.json").write_text(a)
    args[1] = run_cli.npy("q2.npy", q2)
    b = run_cli.run(*args, "--name", "b")
    (tmp_path / "b.json").write_text(b)
    ra = vertebrae.evaluate(q, g, qrels=triples, query_ids=qids, gallery_ids=gids, name="a")
    rb = vertebrae.evaluate(q2, g, qrels=triples, query_ids=qids, gallery_ids=gids, name="b")
    assert_same_report(ra, a)
    assert_same_report(rb, b)

    text = run_cli.run(tmp_path / "a.json", tmp_path / "b.json", cmd=("retrieval", "compare"))
    c = vertebrae.compare(ra, rb)
    assert_same_report(c, text)
    assert c.comparison is not None
    assert c.names == ["a", "b"] or sorted(c.names) == ["a", "b"]
    assert c["a"].metrics == ra.metrics
    with pytest.raises(ValueError):
        c.primary_score  # two results: pick one

    text = run_cli.run(tmp_path / "a.json", tmp_path / "b.json", "--test", "ttest", "--bootstrap", "300",
                       "--ci-method", "percentile", "--permutations", "200", "--seed", "7",
                       "--compare-metrics", "mrr,recall@5", "--baseline", "a", "--alpha", "0.1",
                       cmd=("retrieval", "compare"))
    c = vertebrae.compare(ra, rb, test="ttest", bootstrap=300, ci_method="percentile", permutations=200, seed=7,
                          metrics=["mrr", "recall@5"], baseline="a", alpha=0.1)
    assert_same_report(c, text)
    # report files work too
    c = vertebrae.compare(tmp_path / "a.json", str(tmp_path / "b.json"), test="ttest", bootstrap=300,
                          ci_method="percentile", permutations=200, seed=7, metrics=["mrr", "recall@5"],
                          baseline="a", alpha=0.1)
    assert normalized(c.report) == normalized(json.loads(text))
