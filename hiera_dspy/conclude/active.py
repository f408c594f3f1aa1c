"""The estimates of an actively drawn human sample: Des Raj's estimator with its Student-t interval, beside the
confidence sequence of `hiera_dspy.conclude.sequence` below n_min, as `hiera_dspy.conclude.finite` does for a random
sample. Pure: arrays in, `Columns` out.
"""

from __future__ import annotations

import numpy as np

from hiera_dspy.conclude.finite import TRUST, Columns
from hiera_dspy.conclude.sequence import FLOOR, des_raj_t, increments, interval, p_value


def columns(y, yhat, unl, weights, level: float = 0.95, bounds=(0.0, 1.0), n_min=None, horizon=None,
            certain=None, floor: float = FLOOR, spans=None) -> Columns:
    """The estimates of an actively drawn sample (`hiera_dspy.conclude.finite.Columns`, every column of (t, d)
    arrays): `y`, `yhat` the human and machine values of the first t queries drawn (in draw order), `unl` the
    machine values of the N - t others, `weights` (N,) the draw's weights in the same order (the drawn first),
    `bounds` a human value's range, `certain` (N, d) the queries no hole can change (residual 0, range 0), `n_min`
    Cochran's rule per column (default the rule's floor, 29), `horizon` the sample's planned size, `spans` (low,
    high), each (N, d): every query's range of the human value (`hiera_dspy.conclude.ranges`; None: `bounds`).

    The interval is the product's rule under this draw: Des Raj's estimate with its Student-t interval, beside the
    confidence sequence below `n_min` decided queries with holes (the hull), from it on each t side widened to the
    sequence's less 30 t half-widths where that is wider (`hiera_dspy.conclude.finite`); clipped to what the
    unlabelled queries' ranges allow. Rule "active"; the p-value of a zero mean the larger of the t test's and the
    sequence's where the sequence set a side. The human-only interval: the same with the machine's values 0."""
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
    decided = int(n) * np.ones(d) - sure[:n].sum(axis=0)
    n_min = np.full(d, 29) if n_min is None else np.asarray(n_min)
    trusted = decided >= n_min
    order = list(range(n))

    def one(x_all, y_s):
        resid = np.where(sure[:n], 0.0, y_s - x_all[:n])
        lo, hi = np.where(sure, 0.0, low - x_all), np.where(sure, 0.0, high - x_all)
        z, a, b = increments(resid, lo, hi, order, weights, floor)
        seen = resid.sum(axis=0)
        possible = (seen + lo[n:].sum(axis=0), seen + hi[n:].sum(axis=0))
        s_lo, s_hi = interval(z, a, b, level, horizon, possible)
        point, half = des_raj_t(z, level)
        down = np.where(trusted, np.maximum(half, point - s_lo - TRUST * half), np.maximum(half, point - s_lo))
        up = np.where(trusted, np.maximum(half, s_hi - point - TRUST * half), np.maximum(half, s_hi - point))
        base = x_all.mean(axis=0)
        ends = [base + np.clip(v, *possible) / big_n for v in (point, point - down, point + up)]
        return ends, (z, a, b, half, (down > half + 1e-12) | (up > half + 1e-12))

    (point, lo, hi), (z, a, b, half, bet) = one(every, y)
    (_, h_lo, h_hi), _ = one(np.zeros_like(every), y)
    null = -every.sum(axis=0)  # the residual total at which the benchmark's mean is 0
    with np.errstate(invalid="ignore", divide="ignore"):
        se = half / student.ppf(1 - (1 - level) / 2, max(n - 1, 1))
        p = np.where(se > 0, 2 * student.sf(np.abs(z.mean(axis=0) - null) / se, max(n - 1, 1)), np.nan)
    p = np.where(bet, np.fmax(p, p_value(z, a, b, null, level, horizon)), p)
    sd = np.sqrt(n) * half / student.ppf(1 - (1 - level) / 2, max(n - 1, 1)) / big_n
    rule = np.where(bet, "active sequence", "active").astype(object)
    return Columns(point, lo, hi, h_lo, h_hi, None, n_min, sd, np.full(d, n - 1.0), p, rule)
