"""evaluate, evaluate_mteb, compare and Result over the Go library."""

import json
import math
import os
import tempfile
import weakref
from collections.abc import Mapping

import numpy as np

from . import _lib
from .errors import UsageError, InputError

# dtype codes of the C ABI
_DTYPE_CODES = {np.dtype(np.float32): 1, np.dtype(np.float64): 2, np.dtype(np.float16): 3}

MTEB_K = (1, 3, 5, 10, 20, 100, 1000)


def _to_numpy(a):
    """numpy view of a (torch tensors via .detach().cpu().numpy(), which shares
    the memory of a CPU tensor)."""
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "detach") and hasattr(a, "cpu") and hasattr(a, "numpy"):
        t = a.detach().cpu()
        try:
            return t.numpy()
        except (TypeError, RuntimeError):  # bfloat16 and friends have no numpy dtype
            return t.float().numpy()
    return np.asarray(a)


def _matrix(a, what):
    """(array kept alive, pointer, rows, cols, row stride in bytes, dtype code).

    float32, float64 and float16 arrays in native byte order whose rows are
    contiguous are passed as they are (no copy); anything else is converted
    once: other dtypes to float64, other layouts to a C-contiguous copy."""
    a = _to_numpy(a)
    if a.ndim != 2:
        raise UsageError(f"{what}: expected a 2-D array (rows × dimensions), got shape {a.shape}")
    dt = a.dtype
    if dt.kind == "f" and dt.itemsize in (2, 4, 8):
        target = dt.newbyteorder("=")
    elif dt.kind in "biu" or dt.kind == "f":
        target = np.dtype(np.float64)
    else:
        raise UsageError(f"{what}: embeddings must be numeric, got dtype {dt}")
    if target != dt:
        a = a.astype(target)
    rows, cols = a.shape
    item = a.itemsize
    stride = a.strides[0] if rows > 1 else cols * item
    ok = (
        (cols <= 1 or a.strides[1] == item)
        and stride >= cols * item
        and stride % item == 0
        and a.ctypes.data % item == 0
    )
    if not ok:
        a = np.ascontiguousarray(a)
        stride = cols * item
    return a, a.ctypes.data, rows, cols, stride, _DTYPE_CODES[a.dtype]


def _strs(seq, what):
    if seq is None:
        return None
    if isinstance(seq, (str, bytes)):
        raise UsageError(f"{what}: expected a sequence of IDs or labels, got a single string")
    return [str(x) for x in _to_numpy(seq).tolist()] if _is_arraylike(seq) else [str(x) for x in seq]


def _is_arraylike(x):
    return isinstance(x, np.ndarray) or (hasattr(x, "detach") and hasattr(x, "numpy"))


def _grade(g, qid, did):
    try:
        v = float(g)
    except (TypeError, ValueError):
        raise InputError(f"qrels: grade {g!r} of ({qid}, {did}) is not a number") from None
    if not math.isfinite(v):
        raise InputError(f"qrels: grade {g!r} of ({qid}, {did}) is not finite")
    return int(v) if v.is_integer() and abs(v) < 2**53 else v


def _qrels(qrels):
    """(qrels columns dict or None, dense float64 matrix or None)."""
    if qrels is None:
        return None, None
    if _is_arraylike(qrels):
        a = _to_numpy(qrels)
        if a.ndim == 2 and a.dtype.kind in "biuf":
            return None, np.ascontiguousarray(a, dtype=np.float64)
        if a.ndim != 2 or a.shape[1] not in (2, 3):
            raise UsageError(f"qrels: expected a dense relevance matrix (queries × gallery) or rows of (query_id, gallery_id, grade), got shape {a.shape}")
        qrels = a.tolist()
    qs, gs, grades = [], [], []
    if isinstance(qrels, Mapping):
        for qid, docs in qrels.items():
            if isinstance(docs, Mapping):
                for did, g in docs.items():
                    qs.append(str(qid)); gs.append(str(did)); grades.append(_grade(g, qid, did))
            else:
                for did in docs:  # a collection of relevant IDs: grade 1
                    qs.append(str(qid)); gs.append(str(did)); grades.append(1)
    else:
        rows = qrels.itertuples(index=False) if hasattr(qrels, "itertuples") else qrels
        for row in rows:
            row = tuple(row)
            if len(row) == 2:
                (qid, did), g = row, 1
            elif len(row) == 3:
                qid, did, g = row
            else:
                raise UsageError(f"qrels: expected (query_id, gallery_id, grade) triples, got {row!r}")
            qs.append(str(qid)); gs.append(str(did)); grades.append(_grade(g, qid, did))
    return {"query_ids": qs, "gallery_ids": gs, "grades": grades}, None


def _exclusions(ex):
    if ex is None:
        return None
    qs, gs = [], []
    if isinstance(ex, Mapping):
        for qid, dids in ex.items():
            for did in ([dids] if isinstance(dids, str) else dids):
                qs.append(str(qid)); gs.append(str(did))
    else:
        for row in (_to_numpy(ex).tolist() if _is_arraylike(ex) else ex):
            qid, did = row
            qs.append(str(qid)); gs.append(str(did))
    return {"query_ids": qs, "gallery_ids": gs}


def _ks(k):
    if isinstance(k, str):
        return [int(x) for x in k.split(",") if x.strip()]
    if isinstance(k, (int, np.integer)):
        return [int(k)]
    return [int(x) for x in k]


def _memory(m):
    """max_memory: None (derived from the machine), bytes, or a size string such as "8GiB"."""
    if m is None:
        return None
    if isinstance(m, (int, np.integer)) and not isinstance(m, bool):
        return int(m)
    if isinstance(m, str):
        return m
    raise UsageError(f"max_memory must be a whole number of bytes or a size such as \"8GiB\", got {m!r}")


def _dumps(req):
    try:
        return json.dumps(req, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except ValueError as e:
        raise UsageError(f"options: {e}") from None


def evaluate(
    queries,
    gallery=None,
    *,
    qrels=None,
    query_ids=None,
    gallery_ids=None,
    labels=None,
    query_labels=None,
    gallery_labels=None,
    leave_one_out=False,
    exclusions=None,
    k=(1, 5, 10),
    similarity="cosine",
    primary="ndcg@10",
    gain="exponential",
    precision="float64",
    bidirectional=False,
    drop_queries_without_positives=False,
    name="precomputed",
    threads=0,
    per_query=True,
    dataset_id=None,
    dataset_revision=None,
    max_memory=None,
    allow_disk_spill=True,
    spill_dir=None,
    worst_queries=10,
    query_batch_size=128,
    gallery_batch_size=10000,
    max_pairwise_comparisons=None,
):
    """Evaluates one query/gallery embedding pair under the exact retrieval
    protocol, like ``vertebrae retrieval run`` with the same options, and
    returns a :class:`Result` whose report equals the CLI's JSON report.

    Relevance comes from exactly one of ``qrels`` (a ``{qid: {docid: grade}}``
    dict, an iterable of ``(qid, docid, grade)`` triples, or a dense
    queries × gallery numpy matrix), or ``labels=(query_labels, gallery_labels)``
    (``labels=item_labels`` without a gallery: one collection, leave-one-out),
    or ``query_labels``/``gallery_labels``
    (label-derived relevance; with ``leave_one_out=True`` and no gallery the
    queries are the gallery and self pairs are excluded)."""
    if labels is not None:
        if query_labels is not None or gallery_labels is not None:
            raise UsageError("labels= replaces query_labels= and gallery_labels=; give one form")
        if gallery is None:  # one collection: its labels, each item querying the others
            query_labels = labels
            leave_one_out = True
        else:
            if not isinstance(labels, (tuple, list)) or len(labels) != 2:
                raise UsageError("labels= takes (query_labels, gallery_labels) when a gallery is given")
            query_labels, gallery_labels = labels
    arrays = []
    q = _matrix(queries, "queries")
    arrays.append(q[0])
    if gallery is None:
        g = (None, None, 0, 0, 0, 0)
    else:
        g = _matrix(gallery, "gallery")
        arrays.append(g[0])
    rel, dense = _qrels(qrels)
    req = {
        "name": name,
        "query_ids": _strs(query_ids, "query_ids"),
        "gallery_ids": _strs(gallery_ids, "gallery_ids"),
        "leave_one_out": bool(leave_one_out),
        "similarity": similarity,
        "k": _ks(k),
        "primary": primary,
        "gain": gain,
        "precision": precision,
        "bidirectional": bool(bidirectional),
        "drop_queries_without_positives": bool(drop_queries_without_positives),
        "worst_queries": worst_queries,
        "query_batch_size": query_batch_size,
        "gallery_batch_size": gallery_batch_size,
        "max_pairwise_comparisons": max_pairwise_comparisons,
        "threads": threads,
        "per_query": bool(per_query),
        "max_memory_bytes": _memory(max_memory),
        "allow_disk_spill": bool(allow_disk_spill),
    }
    if spill_dir is not None:
        req["spill_dir"] = os.fspath(spill_dir)
    if rel is not None:
        req["qrels"] = rel
    if query_labels is not None:
        req["query_labels"] = _strs(query_labels, "query_labels")
    if gallery_labels is not None:
        req["gallery_labels"] = _strs(gallery_labels, "gallery_labels")
    ex = _exclusions(exclusions)
    if ex is not None:
        req["exclusions"] = ex
    if dataset_id is not None:
        req["dataset_id"] = str(dataset_id)
    if dataset_revision is not None:
        req["dataset_revision"] = str(dataset_revision)
    if dense is not None:
        arrays.append(dense)
        rel_args = (dense.ctypes.data, dense.shape[0], dense.shape[1])
    else:
        rel_args = (None, 0, 0)
    text, held = _lib.call("vt_evaluate", _dumps(req), *q[1:], *g[1:], *rel_args, keep_result=True)
    del arrays  # kept alive until Go returned
    return Result(text, _held=held)


def evaluate_mteb(query_emb, corpus_emb, qrels, query_ids, corpus_ids, *, ignore_identical_ids=False, **kw):
    """MTEB/BEIR-style evaluation: ``qrels`` is ``{qid: {docid: grade}}``,
    ``query_ids``/``corpus_ids`` name the rows of the arrays in order.
    Defaults as MTEB's retrieval evaluation (pytrec_eval / trec_eval):
    cosine, linear NDCG gain, queries without a positive dropped,
    k = 1, 3, 5, 10, 20, 100, 1000, primary ndcg@10. Any keyword of
    :func:`evaluate` overrides them. ``ignore_identical_ids=True`` excludes a
    document from the ranking of the query with the same ID (MTEB's option of
    that name)."""
    kw.setdefault("similarity", "cosine")
    kw.setdefault("gain", "linear")
    kw.setdefault("drop_queries_without_positives", True)
    kw.setdefault("k", MTEB_K)
    kw.setdefault("primary", "ndcg@10")
    query_ids = _strs(query_ids, "query_ids")
    corpus_ids = _strs(corpus_ids, "corpus_ids")
    if ignore_identical_ids:
        corpus = set(corpus_ids)
        same = [(q, q) for q in query_ids if q in corpus]
        if same:
            ex = _exclusions(kw.pop("exclusions", None)) or {"query_ids": [], "gallery_ids": []}
            ex["query_ids"] += [q for q, _ in same]
            ex["gallery_ids"] += [q for q, _ in same]
            kw["exclusions"] = list(zip(ex["query_ids"], ex["gallery_ids"]))
    return evaluate(query_emb, corpus_emb, qrels=qrels, query_ids=query_ids, gallery_ids=corpus_ids, **kw)


def compare(
    *results,
    metrics=None,
    baseline=None,
    test="randomization",
    alpha=0.05,
    bootstrap=None,
    ci_method="bca",
    permutations=None,
    seed=0,
    threads=0,
    per_query=True,
):
    """Merges the reports of results evaluated under one protocol on one
    dataset and adds the comparison section (bootstrap intervals, paired
    t-test, randomization test, Holm-adjusted p-values, effect sizes), like
    ``vertebrae retrieval compare a.json b.json``. Each argument is a
    :class:`Result` or the path of a JSON report; the results need distinct
    names. ``bootstrap``/``permutations`` of None take the CLI's defaults."""
    if len(results) == 1 and isinstance(results[0], (list, tuple)):
        results = tuple(results[0])
    reports, sources = [], []
    for r in results:
        if isinstance(r, Result):
            reports.append(r.to_json())
            sources.append(", ".join(r.names) or "result")
        elif isinstance(r, (str, os.PathLike)):
            with open(r, encoding="utf-8") as f:
                reports.append(f.read())
            sources.append(os.fspath(r))
        else:
            raise UsageError(f"compare: expected Result objects or report paths, got {type(r).__name__}")
    req = {"reports": reports, "sources": sources, "test": test, "alpha": alpha, "ci_method": ci_method, "seed": int(seed), "threads": threads, "per_query": bool(per_query)}
    if metrics is not None:
        req["metrics"] = [metrics] if isinstance(metrics, str) else list(metrics)
    if baseline is not None:
        req["baseline"] = baseline
    if bootstrap is not None:
        req["bootstrap"] = int(bootstrap)
    if permutations is not None:
        req["permutations"] = int(permutations)
    return Result(_lib.call("vt_compare", _dumps(req)))


def _write_atomic(path, text):
    """Writes text to path as the CLI writes its outputs: in full to a
    temporary file beside it, synced, then renamed over it, so a failure
    creates or replaces nothing."""
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".vertebrae-tmp-", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class Entry:
    """One result (one embedding backbone) of a report."""

    def __init__(self, d):
        self.raw = d

    @property
    def name(self):
        return self.raw["name"]

    @property
    def primary_score(self):
        return self.raw["primary_score"]

    @property
    def primary_metric(self):
        return self.raw["forward"]["primary_metric"]

    @property
    def metrics(self):
        """Aggregate metrics of the forward direction (queries → gallery)."""
        return dict(self.raw["forward"]["metrics"])

    @property
    def reverse_metrics(self):
        """Aggregate metrics of the reverse direction (bidirectional only), else None."""
        rev = self.raw.get("reverse")
        return dict(rev["metrics"]) if rev else None

    @property
    def per_query(self):
        """Forward per-query values, metric → float64 array in the order of
        :attr:`query_ids`; None when evaluated with per_query=False."""
        pq = self.raw["forward"].get("per_query")
        if not pq:
            return None
        return {m: np.asarray(v, dtype=np.float64) for m, v in pq["metrics"].items()}

    @property
    def query_ids(self):
        """The IDs of the evaluated queries (rows of the per-query arrays)."""
        pq = self.raw["forward"].get("per_query")
        return list(pq["query_ids"]) if pq else None

    def __repr__(self):
        return f"<vertebrae result {self.name!r}: {self.primary_metric} = {self.primary_score:.6f}>"


class Result:
    """A vertebrae report: the JSON text the Go library produced (exactly
    the CLI's ``--json`` file) and accessors over it."""

    def __init__(self, text, _held=0):
        self._text = text
        # An evaluation's benchmark stays in Go until this Result goes: the
        # HTML report and the figures then show what the JSON report holds
        # no data for (the margin distributions), as the CLI's --html does.
        self._held = _held
        if _held:
            weakref.finalize(self, _lib.free_result, _held)
        self.report = json.loads(text)
        self.results = {d["name"]: Entry(d) for d in self.report.get("extractor_results") or []}

    @property
    def names(self):
        return list(self.results)

    def _one(self):
        if len(self.results) != 1:
            raise ValueError(
                f"this report holds {len(self.results)} results ({', '.join(self.names)}); "
                "pick one with result.results[name]"
            )
        return next(iter(self.results.values()))

    def __getitem__(self, name):
        return self.results[name]

    name = property(lambda self: self._one().name, doc="The result's name.")
    primary_score = property(lambda self: self._one().primary_score, doc="The primary metric's value.")
    primary_metric = property(lambda self: self._one().primary_metric, doc="The primary metric's name.")
    metrics = property(lambda self: self._one().metrics, doc=Entry.metrics.__doc__)
    reverse_metrics = property(lambda self: self._one().reverse_metrics, doc=Entry.reverse_metrics.__doc__)
    per_query = property(lambda self: self._one().per_query, doc=Entry.per_query.__doc__)
    query_ids = property(lambda self: self._one().query_ids, doc=Entry.query_ids.__doc__)

    @property
    def ranking(self):
        """[(name, primary score)] best first."""
        return [(r["name"], r["primary_score"]) for r in self.report.get("ranking") or []]

    @property
    def comparison(self):
        """The comparison block of a compared report (None otherwise)."""
        return self.report.get("comparison")

    def to_json(self, path=None):
        """The JSON report text (the CLI's --json file); written to path when given."""
        if path is not None:
            _write_atomic(path, self._text)
        return self._text

    def _render(self, fmt, path=None, **extra):
        req = {"result": self._held} if self._held else {"report": self._text}
        req["format"] = fmt
        if path is not None:
            req["path"] = os.fspath(path)
        req.update(extra)
        return _lib.call("vt_render", _dumps(req))

    def to_markdown(self, path=None):
        """The Markdown report (the CLI's --markdown); written to path when given."""
        text = self._render("markdown")
        if path is not None:
            _write_atomic(path, text)
        return text

    def to_html(self, path):
        """Writes the self-contained HTML report (the CLI's --html) to path."""
        self._render("html", path)
        return os.fspath(path)

    def to_csv(self, path):
        """Writes the per-query metrics as CSV (the CLI's --csv) to path."""
        self._render("csv", path)
        return os.fspath(path)

    def plots(self, directory, format="svg"):
        """Writes the figures into directory (the CLI's --plots, --plot-format svg|png|both)."""
        self._render("plots", directory, plot_format=format)
        return os.fspath(directory)

    def __repr__(self):
        inner = ", ".join(f"{n}: {e.primary_metric} = {e.primary_score:.6f}" for n, e in self.results.items())
        return f"<vertebrae.Result {inner}>"
