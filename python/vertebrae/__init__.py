"""vertebrae: exact retrieval evaluation of embedding backbones, from Python.

A thin ctypes layer over the Go library (libvertebrae): the numbers are the
``vertebrae`` CLI's, the JSON report is the CLI's, byte for byte.

>>> import numpy as np, vertebrae
>>> rng = np.random.default_rng(0)
>>> q, g = rng.standard_normal((4, 8)), rng.standard_normal((10, 8))
>>> r = vertebrae.evaluate(q, g, qrels=[(i, i, 1) for i in range(4)])
>>> round(r.metrics["ndcg@10"], 3) >= 0
True
"""

from ._api import MTEB_K, Entry, Result, compare, evaluate, evaluate_mteb
from ._lib import library_path, version
from .errors import CancelledError, Error, InputError, InternalError, MemoryBudgetError, UsageError

__version__ = "0.1.0"

__all__ = [
    "evaluate",
    "evaluate_mteb",
    "compare",
    "Result",
    "Entry",
    "Error",
    "InputError",
    "UsageError",
    "MemoryBudgetError",
    "CancelledError",
    "InternalError",
    "MTEB_K",
    "library_path",
    "version",
]
