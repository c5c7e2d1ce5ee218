"""One test per error class; the messages are the CLI's."""

import numpy as np
import pytest

import vertebrae
from vertebrae import _lib


def tiny(nq=6, ng=15, d=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((nq, d)).astype(np.float32), rng.standard_normal((ng, d)).astype(np.float32)


def test_input_error_nan_names_row_and_id(run_cli):
    q, g = tiny()
    q[3, 5] = np.nan
    ids = [f"query-{i}" for i in range(len(q))]
    with pytest.raises(vertebrae.InputError) as e:
        vertebrae.evaluate(q, g, qrels=[(ids[i], i, 1) for i in range(len(q))], query_ids=ids)
    msg = str(e.value)
    assert "row 3" in msg and '"query-3"' in msg and "column 5" in msg and "NaN" in msg, msg
    assert e.value.code == 1 and isinstance(e.value, vertebrae.Error)
    # the CLI's message for the same file, after its file name
    cli = run_cli.run("--queries", run_cli.npy("q.npy", q), "--gallery", run_cli.npy("g.npy", g),
                      "--query-ids", run_cli.file("q.txt", ids),
                      "--qrels", run_cli.file("r.tsv", [f"{ids[i]}\t{i}\t1" for i in range(len(q))]), expect=1)
    assert msg.split(": ", 1)[1] in cli, (msg, cli)


def test_input_error_unknown_id():
    q, g = tiny()
    with pytest.raises(vertebrae.InputError) as e:
        vertebrae.evaluate(q, g, qrels=[(0, "no-such-doc", 1)] + [(i, i, 1) for i in range(1, len(q))])
    assert "no-such-doc" in str(e.value)


def test_usage_error_bad_similarity():
    q, g = tiny()
    with pytest.raises(vertebrae.UsageError) as e:
        vertebrae.evaluate(q, g, qrels=[(i, i, 1) for i in range(len(q))], similarity="manhattan")
    assert "manhattan" in str(e.value) and "cosine" in str(e.value)
    assert str(e.value).startswith("similarity "), str(e.value)  # the keyword, not RetrievalConfig.similarity
    assert isinstance(e.value, ValueError) and e.value.code == 2


def test_usage_error_primary_not_in_k():
    q, g = tiny()
    with pytest.raises(vertebrae.UsageError, match="ndcg@20"):
        vertebrae.evaluate(q, g, qrels=[(i, i, 1) for i in range(len(q))], primary="ndcg@20")


def test_usage_error_unknown_option():
    q, g = tiny()
    # an unknown keyword is Python's TypeError; an unknown request key is the library's usage error
    with pytest.raises(TypeError):
        vertebrae.evaluate(q, g, qrels=[(0, 0, 1)], similarty="dot")
    with pytest.raises(vertebrae.UsageError, match="bogus"):
        _lib.call("vt_compare", b'{"bogus": 1}')


def test_usage_error_two_relevance_sources():
    q, g = tiny()
    with pytest.raises(vertebrae.UsageError, match="exactly one relevance source"):
        vertebrae.evaluate(q, g, qrels=[(0, 0, 1)], query_labels=["a"] * 6, gallery_labels=["a"] * 15)


def test_memory_budget_error(run_cli):
    q, g = tiny(50, 4000, 64)
    with pytest.raises(vertebrae.MemoryBudgetError) as e:
        vertebrae.evaluate(q, g, qrels=[(i, i, 1) for i in range(len(q))], max_memory="1KiB",
                           allow_disk_spill=False)
    assert e.value.code == 3 and isinstance(e.value, MemoryError)
    assert "1024 bytes" in str(e.value), str(e.value)
    cli = run_cli.run("--queries", run_cli.npy("q.npy", q), "--gallery", run_cli.npy("g.npy", g),
                      "--qrels", run_cli.file("r.tsv", [f"{i}\t{i}\t1" for i in range(len(q))]),
                      "--max-memory-bytes", "1KiB", "--no-disk-spill", expect=1)
    assert str(e.value) in cli, (str(e.value), cli)


def test_not_a_matrix():
    with pytest.raises(vertebrae.UsageError, match="2-D"):
        vertebrae.evaluate(np.zeros(8), np.zeros((3, 8)), qrels=[(0, 0, 1)])


def test_report_files_are_written_whole_or_not_at_all(tmp_path):
    q, g = tiny()
    r = vertebrae.evaluate(q, g, qrels=[(i, i, 1) for i in range(len(q))])
    out = tmp_path / "r.json"
    out.write_text("old")
    r.to_json(out)
    assert out.read_text() == r.to_json()
    r.to_markdown(tmp_path / "r.md")
    assert (tmp_path / "r.md").read_text() == r.to_markdown()
    # a target that cannot be written (a directory) fails and leaves no temporary file behind
    with pytest.raises(OSError):
        r.to_json(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.md"]
