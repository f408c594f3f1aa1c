"""Paired significance testing (McNemar) and multiple-comparison correction (Bonferroni, Holm): pure, no DSPy.

The tests themselves are scipy's (`binomtest`, `chi2`) and statsmodels' (`multipletests`); this module only counts
the paired outcomes and handles the None of a comparison that could not be made.
"""
from __future__ import annotations

from hiera_dspy.errors import HieraError

EXACT_THRESHOLD = 25  # use the exact binomial form when b + c < 25


def mcnemar(gold: list[str], pred_a: list, pred_b: list, exact: bool | None = None) -> dict:
    """McNemar test of two methods' paired correctness against gold.

    b = A right & B wrong, c = A wrong & B right, over every pair (``n``): a None prediction (an error, an
    undecided escalation) is wrong, so no method is credited for the pairs it failed on. ``exact=None`` picks the
    exact two-sided binomial test (p=0.5) when b + c < 25, else chi-square with continuity correction
    max(0, |b-c|-1)^2 / (b+c), 1 dof. The exact form reports statistic = min(b, c). b + c == 0 gives statistic 0
    and p = 1.
    """
    if not len(gold) == len(pred_a) == len(pred_b):
        raise HieraError(f"length mismatch: {len(gold)}, {len(pred_a)}, {len(pred_b)}")
    b = c = 0
    for g, pa, pb in zip(gold, pred_a, pred_b):  # None never equals a gold label: wrong
        b += pa == g and pb != g
        c += pa != g and pb == g
    n = len(gold)
    use_exact = (b + c < EXACT_THRESHOLD) if exact is None else bool(exact)
    method = "exact" if use_exact else "chi2"
    if b + c == 0:
        return {"b": 0, "c": 0, "n": n, "statistic": 0.0, "p_value": 1.0, "method": method}
    from scipy.stats import binomtest, chi2  # SciPy (~0.6 s to import) only where a test is computed

    if use_exact:
        stat = float(min(b, c))
        p = binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    else:
        stat = max(0, abs(b - c) - 1) ** 2 / (b + c)
        p = chi2.sf(stat, df=1)
    return {"b": b, "c": c, "n": n, "statistic": float(stat), "p_value": min(1.0, float(p)), "method": method}


def bonferroni(p_values: list[float | None], m: int | None = None) -> list[float | None]:
    """Bonferroni-adjusted p-values min(1, p * m); m (the number of comparisons in the family) defaults to
    len(p_values). None passes through."""
    m = max(1, len(p_values)) if m is None else m
    if m < 1:
        raise HieraError("m must be >= 1")
    return [None if p is None else min(1.0, float(p) * m) for p in p_values]


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (statsmodels' `multipletests(method="holm")`); None stays None and is not counted."""
    from statsmodels.stats.multitest import multipletests

    present = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    if present:
        adjusted = multipletests([p_values[i] for i in present], method="holm")[1]
        for i, q in zip(present, adjusted):
            out[i] = float(q)
    return out
