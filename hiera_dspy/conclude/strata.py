"""Strata of a benchmark's queries by the judge's uncertainty, and a proportional allocation of a sample over them.

A query's uncertainty is the sum of p(1 - p) over its holes, p the judge's probability that the hole is relevant (at the
scheme's threshold): the variance of the number of relevant holes if each were an independent coin with the judge's
probability, so a query with many holes the judge is unsure of scores high and one whose holes it is sure of (or that
has none) scores 0. The strata are its quantiles: the queries sorted by uncertainty (stable: ties keep the benchmark's
order) and cut into `k` groups of as equal size as possible (`numpy.array_split`). A sample of `n` is allocated
proportionally: stratum h gets the whole part of n * N_h / N, and the queries left over go to strata at random, each
stratum one more with probability equal to its fractional part (systematic sampling of the remainders, strata in a
random order, so the counts still sum to n and each is within one query of n * N_h / N). Every stratum's expected
count is then exactly n * N_h / N, so every query is drawn with probability n / N, as in a simple random sample: the
sample is self-weighting and its plain mean unbiased (Cochran, *Sampling Techniques*, 3rd ed. 1977, ch. 5, sections
5.3 and 5.7). Largest remainders, the rule before 2026-12-03, gave the leftovers always to the least uncertain strata
(`allocate([100] * 4, 10)` was [3, 3, 2, 2] for every seed), so inclusion probabilities differed by stratum and the
plain mean was biased in a fixed direction. The estimators of `hiera_dspy.conclude.ppi` and their variance for a
simple random sample therefore stay valid on such a sample (conservative: they ignore the gain from stratifying).
Measured in docs/conclusions.md (bench/conclusions_small.py).

Pure: per-hole probabilities in, arrays out.

Example:
    >>> u = query_uncertainty(["q1", "q2", "q3", "q4"], [("q1", 0.5), ("q1", 0.9), ("q3", 0.2)])
    >>> [round(float(x), 2) for x in u]
    [0.34, 0.0, 0.16, 0.0]
    >>> [s.tolist() for s in strata_of(u, 2)]
    [[1, 3], [2, 0]]
    >>> allocate([2, 2], 2, random.Random(0)).tolist()
    [1, 1]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from hiera_dspy.conclude.expected import gains
from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme

UNKNOWN = 0.5  # the relevance probability of a hole whose judgment says nothing of how sure it is: the least sure


def query_uncertainty(queries: Sequence[str], holes: Iterable[tuple[str, float]]) -> np.ndarray:
    """Per query (in `queries` order) the sum of p(1 - p) over its holes, `holes` = (query id, p) with p the judge's
    probability that the hole is relevant; holes of queries outside `queries` are ignored."""
    index = {q: i for i, q in enumerate(queries)}
    out = np.zeros(len(index))
    for q, p in holes:
        if q in index:
            out[index[q]] += p * (1 - p)
    return out


def strata_of(uncertainty: np.ndarray, k: int) -> list[np.ndarray]:
    """The query indices cut into `k` strata of (nearly) equal size by increasing uncertainty."""
    if k < 1:
        raise HieraError(f"the number of strata must be at least 1, got {k}")
    return np.array_split(np.argsort(np.asarray(uncertainty), kind="stable"), k)


def stratum_labels(queries: Sequence[str], records: Iterable[dict], scheme: LabelScheme, k: int) -> np.ndarray:
    """Each query's stratum (0 = least uncertain) of `k` by the judge's uncertainty over the records of its holes:
    the strata a stratified sample was drawn from (`hiera_dspy.benchmark.draws`), recomputed for the estimator."""
    u = query_uncertainty(queries, ((r["query_id"], relevance_probability(r, scheme)) for r in records))
    out = np.zeros(len(queries), dtype=int)
    for h, group in enumerate(strata_of(u, k)):
        out[group] = h
    return out


def allocate(sizes: Sequence[int], n: int, rng) -> np.ndarray:
    """How many of a sample of `n` each stratum of `sizes` gets: the whole part of its proportional share, and the
    leftover queries to strata at random with probability equal to their fractional parts (systematic sampling over
    the strata in a random order; `rng` a `random.Random`, used only when there are leftovers), so each stratum's
    expected count is exactly its share n * N_h / N."""
    sizes = np.asarray(sizes)
    total = int(sizes.sum())
    if not 0 <= n <= total:
        raise HieraError(f"cannot allocate a sample of {n} over {total} queries")
    share = sizes * n / total
    k = np.floor(share + 1e-9).astype(int)
    left = n - int(k.sum())
    if left:
        order = rng.sample(range(len(k)), len(k))  # the strata in random order: any set of them can get one
        ends = np.cumsum(np.clip(share - k, 0.0, None)[order])
        ends *= left / ends[-1]  # the fractional parts sum to `left`; make it exact
        points = rng.random() + np.arange(left)  # one point in each unit interval of the remainders' sum
        hit = np.minimum(np.searchsorted(ends, points, side="right"), len(k) - 1)
        k[np.asarray(order)[hit]] += 1
    return k


def relevance_probability(record: dict, scheme: LabelScheme) -> float:
    """The judge's probability that a judged hole (a record of `hiera_dspy.review.exports.record`) is relevant:
    from its label distribution, else from its confidence in its machine label, else (no machine label: escalated or
    failed; or no confidence) `UNKNOWN`."""
    dist = record.get("distribution")
    if isinstance(dist, dict) and dist:
        try:
            return gains(dist, scheme)[1]
        except ValueError:  # no probability on any of the scheme's labels
            pass
    label, conf = record.get("machine_label"), record.get("confidence")
    if not label or conf is None or label not in scheme.labels:
        return UNKNOWN
    return float(conf) if scheme.is_relevant(label) else 1.0 - float(conf)


def label_distribution(record: dict, scheme: LabelScheme) -> dict[str, float]:
    """The judge's label distribution of a judged hole: its record's distribution (the scheme's labels) when usable;
    else its label with its confidence and the rest spread evenly over the other labels (a graded scheme's "Exact"
    at 0.95 stays near "Exact", not split between the threshold and the lowest grade); with no confidence,
    `UNKNOWN` on its label; with no machine label (escalated or failed), every label alike."""
    dist = record.get("distribution")
    if isinstance(dist, dict) and record.get("machine_label"):
        try:
            gains(dist, scheme)
            return {k: float(v) for k, v in dist.items() if k in scheme.labels}
        except ValueError:  # no probability on any of the scheme's labels
            pass
    label, conf = record.get("machine_label"), record.get("confidence")
    if not label or label not in scheme.labels:
        return {k: 1.0 / len(scheme.labels) for k in scheme.labels}
    p = UNKNOWN if conf is None else min(max(float(conf), 0.0), 1.0)
    rest = (1.0 - p) / (len(scheme.labels) - 1)
    return {k: p if k == label else rest for k in scheme.labels}
