"""The plan in judgments: how many single holes a person must judge (`--sample-unit pair`) for an interval of a width
and to tell each pair of systems apart, beside what whole queries cost in judgments, from the judge's own
probabilities before anyone labels.

Under a design with probabilities p (`hiera_dspy.conclude.pair_sample`), a draw's correction Z = w (y - yhat) / p
has variance sum_i w_i^2 v_i / p_i when the judge's probabilities are right (v_i the variance of hole i's value
under them, yhat_i its mean). The fixed-n interval after D draws is 2 z sd / sqrt(D) wide, so D = (2 z sd / W)^2
draws give width W, and D draws decide sum_i 1 - (1 - p_i)^D distinct holes (the judgments). To tell a pair apart at
its Holm step with `power`: D = ((z_{alpha / 2 step} + z_power) sd / |difference|)^2, the difference the machine's.
A whole query costs its holes: n queries cost n * H / N judgments on average.
Pure: a `Population` and probabilities in, numbers out.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from hiera_dspy.conclude import pair_sample as ps


def judgments_after(p: np.ndarray, draws: float) -> int:
    """The distinct holes `draws` i.i.d. draws decide, on average: sum 1 - (1 - p_i)^D."""
    return int(math.ceil(float(np.sum(1 - (1 - p) ** max(draws, 0.0)))))


def draws_for_width(sd: np.ndarray, width: float, level: float) -> np.ndarray:
    """Draws for a fixed-n interval of `width` per column (at least 2)."""
    z = norm.ppf(1 - (1 - level) / 2)
    return np.maximum(2.0, (2 * z * sd / width) ** 2)


def predicted_width(sd: np.ndarray, draws: float, level: float) -> np.ndarray:
    """The fixed-n interval's width after `draws` draws per column."""
    return 2 * norm.ppf(1 - (1 - level) / 2) * sd / math.sqrt(max(draws, 1.0))


def draws_for(p: np.ndarray, judgments: int) -> float:
    """The draws that decide `judgments` distinct holes on average (bisection on `judgments_after`)."""
    lo, hi = 0.0, 1.0
    while judgments_after(p, hi) < judgments and hi < 1e9:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if judgments_after(p, mid) < judgments else (lo, mid)
    return hi


def plan_lines(pop: ps.Population, design: str, width: float, level: float = 0.95, power: float = 0.8) -> list[dict]:
    """Per measure and column (systems, then pairs): the predicted sd of a draw's correction, the judgments for an
    interval of `width`, and for a pair the judgments to tell it apart at `power` (None where the machine sees no
    difference)."""
    names, mat = ps.columns(pop)
    p = ps.design_probabilities(pop, design)
    holes = len(pop.keys)
    s = len(pop.systems)
    out = []
    for m in pop.measures:
        w = pop.weights[m] @ mat
        sd = ps.predicted_sd(w, pop.spread[m], p)
        need = draws_for_width(sd, width, level)
        diff = pop.machine[m] @ mat
        steps = len(names) - s
        for c, (a, b) in enumerate(names):
            line = {"measure": m, "a": a, "b": b, "sd": float(sd[c]), "machine": float(diff[c]),
                    "n_width": min(holes, judgments_after(p, float(need[c]))), "n_power": None}
            if b is not None and abs(diff[c]) > 1e-12:
                alpha = (1 - level) / max(steps, 1)
                d = ((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd[c] / abs(diff[c])) ** 2
                line["n_power"] = min(holes, judgments_after(p, float(d)))
            out.append(line)
    return out


def compare_units(pair_lines: list[dict], query_lines: list[dict], holes: int, queries: int) -> dict:
    """Which unit is cheaper for a width: the median over the estimates of (judgments for whole queries, n for
    width * H / N) over (judgments for single holes)."""
    per_query = holes / max(queries, 1)
    index = {(q["measure"], q["a"], q["b"]): q for q in query_lines}
    ratios = [index[k]["n_width"] * per_query / max(line["n_width"], 1) for line in pair_lines
              if (k := (line["measure"], line["a"], line["b"])) in index and index[k].get("n_width")]
    if not ratios:
        return {"cheaper": None, "ratio": None}
    r = float(np.median(ratios))
    return {"cheaper": "pair" if r > 1 else "query", "ratio": r, "holes_per_query": per_query}
