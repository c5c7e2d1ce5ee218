#!/usr/bin/python3
"""Reference values for the stats package's golden tests (SPEC §13).

Run once with Debian's python3-scipy / python3-numpy:
    /usr/bin/python3 evaluate/compare/stats/testdata/make_golden.py > evaluate/compare/stats/testdata/golden.json
The Go tests compare against the committed golden.json; they never run
Python.

- ttest: scipy.stats.ttest_rel (two-sided). Where scipy returns NaN (every
  difference zero) the SPEC §13 value p = 1 is recorded, flagged.
- signflip: the exact sign-flip p-value by full enumeration of the 2^n sign
  vectors, in exact rational arithmetic (Fraction), count / 2^n.
- bootstrap: an independent numpy implementation of the BCa and percentile
  intervals of the mean, over resample indices drawn here and stored, so the
  Go test feeds the same resamples. The bias-correction count compares exact
  sums (Fraction), the rest is numpy float64. z0 uses the mid-rank of the
  estimate, (#below + #equal/2)/B, as scipy.stats.bootstrap does (SPEC §13);
  the reference's BCa quantile levels are checked here against scipy's own
  scipy.stats._resampling._bca_interval on the same bootstrap distribution
  wherever float comparison decides the ties as exactly as Fraction does.
- bootstrap cases named "scipy …": tie-heavy samples (a point mass of the
  bootstrap distribution at the estimate) whose intervals are the output of
  the public scipy.stats.bootstrap(method="BCa" and "percentile") with a
  seeded numpy Generator; the stored indices are that Generator's draws
  (scipy 1.10 draws them as rng.integers(0, n, (B, n)); the script asserts
  that they reproduce scipy's bootstrap distribution bit for bit).
"""
import itertools
import json
import sys
from fractions import Fraction

import numpy as np
import scipy
import scipy.stats
from scipy.special import ndtr, ndtri


def ttest_cases(rng):
    cases = []
    def add(name, a, b):
        a = [float(v) for v in a]
        b = [float(v) for v in b]
        r = scipy.stats.ttest_rel(a, b)
        p = float(r.pvalue)
        note = ""
        if np.isnan(p):
            p, note = 1.0, "scipy gives nan (all differences zero); SPEC 13 defines p = 1"
        cases.append({"name": name, "a": a, "b": b, "p": p, "t": float(r.statistic) if np.isfinite(r.statistic) else None, "note": note})
    x = rng.random(20)
    add("identical", x, x)
    add("n=2", [0.5, 1.0], [0.25, 0.5])
    add("n=2 opposite", [1.0, 0.0], [0.0, 0.5])
    add("heavy ties", [1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1], [1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 1])
    add("ties mrr", [1, 0.5, 1, 1/3, 0.25, 1, 0.5, 1, 1, 0.2], [0.5, 0.5, 1, 1/3, 0.5, 1, 1, 0.25, 1/3, 0.2])
    out = rng.random(30)
    add("huge outlier", np.append(out, 1e6), np.append(rng.random(30), 0.0))
    add("normal n=50", rng.normal(0.6, 0.2, 50), rng.normal(0.55, 0.2, 50))
    add("small effect n=1000", rng.random(1000), rng.random(1000) * 0.98)
    add("strong effect n=200", rng.random(200) + 0.3, rng.random(200))
    add("tiny p", np.arange(40) / 40 + 1.0, np.arange(40) / 40 + 0.02 * rng.random(40))
    return cases


def exact_signflip(d):
    fr = [Fraction(v) for v in d]
    obs = abs(sum(fr))
    n = len(fr)
    count = 0
    for signs in itertools.product((1, -1), repeat=n):
        s = sum(si * v for si, v in zip(signs, fr))
        if abs(s) >= obs:
            count += 1
    return count, 2 ** n


def signflip_cases(rng):
    vecs = {
        "n=1": [0.5],
        "n=2 tie": [0.5, -0.5],
        "n=3 float near-tie": [0.1, 0.2, -0.3],
        "n=5 ties": [1, -1, 1, 1, 0],
        "n=8 mrr diffs": [0.5, -0.5, 1/3 - 1/2, 2/3, 0.25, -0.25, 0, 1 - 1/3],
        "n=10 decimals": [0.1, 0.2, 0.3, -0.6, 0.7, -0.1, 0.05, 0.15, -0.2, 0.4],
        "n=12 random": list(rng.normal(0.1, 0.3, 12)),
        "n=14 hit ties": [1, 0, 1, -1, 1, 1, 0, 1, -1, 1, 0, 1, 1, -1],
        "n=16 ndcg diffs": [float(v) for v in (rng.random(16) - 0.3) / np.log2(np.arange(2, 18))],
        "n=16 all positive": [0.01 * (i + 1) for i in range(16)],
    }
    cases = []
    for name, d in vecs.items():
        d = [float(v) for v in d]
        count, total = exact_signflip(d)
        cases.append({"name": name, "d": d, "count": count, "total": total, "p": count / total})
    return cases


def quantile(sorted_vals, q):
    q = min(max(q, 0.0), 1.0)
    h = q * (len(sorted_vals) - 1)
    lo = int(np.floor(h))
    if lo >= len(sorted_vals) - 1:
        return float(sorted_vals[-1])
    return float(sorted_vals[lo] + (h - lo) * (sorted_vals[lo + 1] - sorted_vals[lo]))


def bootstrap_ref(x, idx, level):
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    B = len(idx)
    fr = [Fraction(float(v)) for v in x]
    obs = sum(fr)
    means = np.empty(B)
    below = equal = 0
    for b, row in enumerate(idx):
        s = sum(fr[i] for i in row)
        if s < obs:
            below += 1
        elif s == obs:
            equal += 1
        means[b] = float(s) / n
    srt = np.sort(means)
    alpha = 1 - level
    pct = (quantile(srt, alpha / 2), quantile(srt, 1 - alpha / 2))
    total = float(obs)
    jack = (total - x) / (n - 1)
    jm = np.sum(jack) / n
    dd = jm - jack
    s2, s3 = np.sum(dd * dd), np.sum(dd ** 3)
    a = 0.0 if s2 == 0 else s3 / (6 * s2 ** 1.5)
    # Mid-rank (scipy's _percentile_of_score), clamped to [1, 2B - 1] / 2B.
    c = min(max(2 * below + equal, 1), 2 * B - 1)
    z0 = ndtri(c / (2 * B))
    def adj(z):
        return ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))
    za = ndtri(alpha / 2)
    q1, q2 = adj(za), adj(-za)
    bca = (quantile(srt, q1), quantile(srt, q2))
    return pct, bca, below, equal, means, (q1, q2)


def check_against_scipy_bca(name, x, means, level, q):
    """Asserts the reference's BCa quantile levels equal scipy's."""
    from scipy.stats._resampling import _bca_interval
    a1, a2, _ = _bca_interval((np.asarray(x),), np.mean, axis=-1, alpha=(1 - level) / 2,
                              theta_hat_b=means[None, :], batch=None)
    if abs(float(a1) - q[0]) > 1e-12 or abs(float(a2) - q[1]) > 1e-12:
        raise SystemExit(f"{name}: BCa levels {q} differ from scipy's {(float(a1), float(a2))}")


def exact_float_ties(x, idx):
    """Float means decide "below"/"equal" as Fraction sums do."""
    x = np.asarray(x, dtype=np.float64)
    fr = [Fraction(float(v)) for v in x]
    obs = sum(fr)
    m = np.mean(x[idx], axis=-1)
    th = np.mean(x)
    for b, row in enumerate(idx):
        s = sum(fr[i] for i in row)
        if (s < obs) != (m[b] < th) or (s == obs) != (m[b] == th):
            return False
    return True


def bootstrap_cases(rng):
    vecs = {
        "uniform n=25": rng.random(25),
        "skewed n=30": rng.exponential(1.0, 30),
        "hit rate n=40": (rng.random(40) < 0.7).astype(float),
        "mrr n=20": 1.0 / rng.integers(1, 6, 20),
        "paired diffs n=35": (1.0 / rng.integers(1, 4, 35)) - (1.0 / rng.integers(1, 4, 35)),
        "outlier n=15": np.append(rng.random(14), 50.0),
    }
    cases = []
    for name, x in vecs.items():
        n, B = len(x), 1000
        idx = rng.integers(0, n, size=(B, n))
        pct, bca, below, equal, means, q = bootstrap_ref(x, idx, 0.95)
        if exact_float_ties(x, idx):
            check_against_scipy_bca(name, x, means, 0.95, q)
        cases.append({"name": name, "x": [float(v) for v in x], "idx": idx.tolist(), "level": 0.95,
                      "percentile": list(pct), "bca": list(bca), "below": below, "equal": equal})
    return cases


def scipy_cases():
    """Tie-heavy samples through the public scipy.stats.bootstrap."""
    # Per-query differences of two results on a binary metric (hit rate):
    # mean 0 and a large point mass at 0.
    hit_diffs = [1.0, -1.0, 1.0, -1.0, 1.0, -1.0] + [0.0] * 10
    # Differences of mrr values 1, 1/2, 1/4, 0 (dyadic: float sums exact).
    mrr = [1.0, 0.5, 0.25, 0.0]
    mrr_a = [mrr[i] for i in [0, 0, 1, 2, 0, 3, 1, 0, 0, 2, 1, 0, 0, 3, 0, 1, 0, 0, 2, 0]]
    mrr_b = [mrr[i] for i in [0, 1, 1, 2, 0, 3, 0, 0, 1, 2, 1, 0, 2, 3, 0, 1, 0, 0, 2, 1]]
    mrr_diffs = [a - b for a, b in zip(mrr_a, mrr_b)]
    vecs = [
        ("scipy tie-heavy hit diffs n=16", hit_diffs, 101),
        ("scipy tie-heavy mrr diffs n=20", mrr_diffs, 102),
        ("scipy tie-heavy mrr n=20", mrr_a, 103),
    ]
    cases = []
    for name, x, seed in vecs:
        x = np.asarray(x, dtype=np.float64)
        n, B, level = len(x), 1000, 0.95
        out = {}
        for method in ("BCa", "percentile"):
            res = scipy.stats.bootstrap((x,), np.mean, n_resamples=B, confidence_level=level,
                                        method=method, vectorized=True,
                                        random_state=np.random.default_rng(seed))
            out[method] = res
        idx = np.random.default_rng(seed).integers(0, n, (B, n))
        dist = out["BCa"].bootstrap_distribution
        if not np.array_equal(np.mean(x[idx], axis=-1), dist):
            raise SystemExit(f"{name}: the indices do not reproduce scipy's bootstrap distribution")
        if not exact_float_ties(x, idx):
            raise SystemExit(f"{name}: float ties differ from exact ties")
        pct, bca, below, equal, means, q = bootstrap_ref(x, idx, level)
        check_against_scipy_bca(name, x, means, level, q)
        ci = out["BCa"].confidence_interval
        pci = out["percentile"].confidence_interval
        sp_bca = [float(ci.low), float(ci.high)]
        sp_pct = [float(pci.low), float(pci.high)]
        for got, want in ((bca, sp_bca), (pct, sp_pct)):
            if max(abs(got[0] - want[0]), abs(got[1] - want[1])) > 1e-12:
                raise SystemExit(f"{name}: reference {got} differs from scipy {want}")
        cases.append({"name": name, "x": [float(v) for v in x], "idx": idx.tolist(), "level": level,
                      "percentile": sp_pct, "bca": sp_bca, "below": below, "equal": equal,
                      "scipy_seed": seed})
    return cases


def main():
    rng = np.random.default_rng(20261201)
    out = {
        "generator": "evaluate/compare/stats/testdata/make_golden.py",
        "scipy": scipy.__version__, "numpy": np.__version__,
        "ttest": ttest_cases(rng),
        "signflip": signflip_cases(rng),
        "bootstrap": bootstrap_cases(rng) + scipy_cases(),
    }
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
