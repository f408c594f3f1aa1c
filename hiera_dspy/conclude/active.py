"""The estimates of an actively drawn human sample: Des Raj's estimator and the confidence sequence of
`hiera_dspy.conclude.sequence`. Pure: arrays in, `Columns` out.
"""

from __future__ import annotations

import numpy as np

from hiera_dspy.conclude.finite import Columns
from hiera_dspy.conclude.sequence import FLOOR, des_raj_t, increments, interval, p_value


def columns(y, yhat, unl, weights, level: float = 0.95, bounds=(0.0, 1.0), n_min=None, horizon=None,
            certain=None, floor: float = FLOOR, spans=None) -> Columns:
    """The estimates of an actively drawn sample (`hiera_dspy.conclude.finite.Columns`, every column of (t, d)
    arrays): `y`, `yhat` the human and machine values of the first t queries drawn (in draw order), `unl` the
    machine values of the N - t others, `weights` (N,) the draw's weights in the same order (the drawn first),
    `bounds` a human value's range, `certain` (N, d) the queries no hole can change (residual 0, range 0), `n_min`
    Cochran's rule per column (default the rule's floor, 29), `horizon` the sample's planned size, `spans` (low,
    high), each (N, d): every query's range of the human value (`hiera_dspy.conclude.ranges`; None: `bounds`).

    The interval is the confidence sequence (valid after every decided query, no n_min switch), clipped to what the
    unlabelled queries' ranges allow; the point Des Raj's estimate; rule "active". The p-value of a zero mean the
    sequence's; `sd` the spread behind Des Raj's Student-t interval (for planning). The human-only interval: the
    same with the machine's values 0."""
    from scipy.stats import t as student

    y, yhat, unl = (np.asarray(a, dtype=float) for a in (y, yhat, unl))
    n, d = y.shape
    every = np.vstack([yhat, unl])
    big_n = every.shape[0]
    sure = np.zeros((big_n, d), dtype=bool) if certain is None else np.asarray(certain, dtype=bool)
    if spans is None:
        low, high = (np.broadcast_to(np.asarray(v, dtype=float), (d,)) for v in bounds)
    else:
        low, high = (np.asarray(v, dtype=float) for v in spans)
    n_min = np.full(d, 29) if n_min is None else np.asarray(n_min)
    order = list(range(n))

    def one(x_all, y_s):
        resid = np.where(sure[:n], 0.0, y_s - x_all[:n])
        lo, hi = np.where(sure, 0.0, low - x_all), np.where(sure, 0.0, high - x_all)
        z, a, b = increments(resid, lo, hi, order, weights, floor)  # the sequence's (aligned ranges)
        plain, _, _ = increments(resid, lo, hi, order, weights, floor, aligned=False)  # Des Raj's point
        seen = resid.sum(axis=0)
        possible = (seen + lo[n:].sum(axis=0), seen + hi[n:].sum(axis=0))
        s_lo, s_hi = interval(z, a, b, level, horizon, possible)
        point, half = des_raj_t(plain, level)
        base = x_all.mean(axis=0)
        ends = [base + np.clip(v, *possible) / big_n for v in (point, s_lo, s_hi)]
        return ends, (z, a, b, half)

    (point, lo, hi), (z, a, b, half) = one(every, y)
    point = np.clip(point, lo, hi)  # the interval's point nearest Des Raj's estimate
    (_, h_lo, h_hi), _ = one(np.zeros_like(every), y)
    p = p_value(z, a, b, -every.sum(axis=0), level, horizon)  # at the residual total where the mean is 0
    sd = np.sqrt(n) * half / student.ppf(1 - (1 - level) / 2, max(n - 1, 1)) / big_n
    rule = np.full(d, "active", dtype=object)
    return Columns(point, lo, hi, h_lo, h_hi, None, n_min, sd, np.full(d, n - 1.0), p, rule)
