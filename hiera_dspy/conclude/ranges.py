"""Each query's range of a run's value: the lowest and highest value its holes allow, whatever a person labels them.

The confidence sequence (`hiera_dspy.conclude.sequence`) needs the range of every query's human-minus-machine
residual, and its width follows that range more than the residual's spread. A metric's [0, 1] is the loosest; the
holes bound it tighter, from what is known before anyone labels (the run's top k, the original grades, which
documents are holes):

- P@k: from (relevant originals in the top k) / k to (those + the holes in the top k) / k, exact;
- nDCG@k: from DCG(every hole at grade 0) / IDCG(every hole at the top grade) to DCG(every hole at the top grade) /
  IDCG(every hole at grade 0), at most 1 (a hole raises the DCG only where the run shows it, the ideal DCG wherever
  it is; each bound takes the worst of both). An ideal DCG of 0 leaves the upper bound 1.

A query no hole can change has lo = hi (`hiera_dspy.conclude.certainty`'s certain queries), and a query the run does
not answer 0 on both. Pure: run lines and keys in, arrays out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from hiera_dspy.conclude.retrieval import measure_key, query_values, top_k
from hiera_dspy.labels import LabelScheme


def value_ranges(lines, queries: Sequence[str], holes: Iterable[tuple[str, str]], originals: dict,
                 scheme: LabelScheme, depth: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"ndcg@depth", "p@depth"} -> (lowest, highest) value per query (in `queries` order); `holes` the (query id,
    doc id) of every hole, `originals` (query id, doc id) -> grade."""
    holes = set(holes)
    per_query: dict[str, list[str]] = {}
    for q, d in holes:
        per_query.setdefault(q, []).append(d)
    known: dict[str, dict[str, int]] = {}
    for (q, d), g in originals.items():
        known.setdefault(q, {})[d] = g
    top = top_k(lines, depth)
    top_gain = scheme.gain(len(scheme.labels) - 1)
    threshold = scheme.labels.index(scheme.threshold)
    keys = (measure_key("ndcg", depth), measure_key("p", depth))
    lo = {k: np.zeros(len(queries)) for k in keys}
    hi = {k: np.zeros(len(queries)) for k in keys}
    for i, q in enumerate(queries):
        grades, open_ = known.get(q, {}), set(per_query.get(q, []))
        shown = top.get(q, [])

        def values(hole_gain: float, hole_rel: float, ideal_hole_gain: float) -> dict[str, float]:
            gains = [hole_gain if d in open_ else float(scheme.gain(grades.get(d, 0))) for d in shown]
            rel = [hole_rel if d in open_ else float(grades.get(d, 0) >= threshold) for d in shown]
            ideal = [float(scheme.gain(g)) for g in grades.values()] + [ideal_hole_gain] * len(open_)
            return query_values(gains, rel, ideal, depth)

        if not grades and not open_:
            continue
        low, high = values(0.0, 0.0, top_gain), values(top_gain, 1.0, 0.0)
        for k in keys:
            lo[k][i], hi[k][i] = low[k], min(high[k], 1.0) if high[k] == high[k] else 1.0
        if not any(d in open_ for d in shown):  # no hole shown: P@k known
            lo[keys[1]][i] = hi[keys[1]][i] = values(0.0, 0.0, 0.0)[keys[1]]
        if not open_:
            for k in keys:
                lo[k][i] = hi[k][i] = values(0.0, 0.0, 0.0)[k]
        ideal_zero = not any(scheme.gain(g) > 0 for g in grades.values())
        if ideal_zero and any(d in open_ for d in shown):
            hi[keys[0]][i] = 1.0
    return {k: (lo[k], np.maximum(hi[k], lo[k])) for k in keys}


def valid_floor(drops, rises, decided: int, big_n: int, level: float = 0.95) -> float:
    """The width below which no interval of a benchmark's mean is valid for every population within the queries'
    ranges, on a random sample of `decided` of the H queries with holes whose residuals all came out 0 (the machine
    right on each): `drops`, `rises` (H,) how far each such query's value can fall below and rise above the machine's,
    `big_n` the benchmark's queries. With k of the H at the bottom of their ranges, a sample misses all k with
    probability C(H - k, n) / C(H, n); while that exceeds 1 - `level`, an interval that left out that population's
    mean would cover it less often than `level`, so it must hold the mean with the k largest drops and the mean with
    the k largest rises: at least (their sums) / N wide, k the largest with C(H - k, n) / C(H, n) > 1 - level.
    Anytime or fixed-n, whatever the estimator: the price of validity from the ranges alone. NaN when every query
    with holes is decided (or none is)."""
    from scipy.special import gammaln

    h, n = len(drops), int(decided)
    if n >= h or n < 1:
        return float("nan")
    ks = np.arange(h - n + 1)
    log_p = (gammaln(h - ks + 1) - gammaln(h - ks - n + 1)) - (gammaln(h + 1) - gammaln(h - n + 1))
    k = int(ks[log_p > np.log(1 - level)].max())
    top = np.sort(np.asarray(drops, dtype=float))[::-1][:k].sum() + np.sort(np.asarray(rises, dtype=float))[::-1][:k].sum()
    return float(top / big_n)

