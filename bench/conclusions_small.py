"""Small-sample coverage of the conclusions benchmark: which estimates under-cover, and two remedies measured.

    python -m bench.conclusions --lexical --queries 400 --judges embed-lr-allpool-hgb   # builds WORK/built.json
    python -m bench.conclusions_small --work runs/bench-conclusions --judge embed-lr-allpool-hgb --sizes 20,40,80

Reads the benchmark bench/conclusions.py built (WORK/built.json: queries, systems, holes, the judge's labels and
probabilities) and, over `--samples` seeded samples per size, prints per measure: the worst estimates (systems and
pairwise differences) with the share of samples whose interval lies below / above the truth, the human-only
interval's coverage, and the skewness of the human and human-minus-machine values over all queries with Cochran's
n_min (hiera_dspy.conclude.ppi.min_queries); then coverage (min systems / min pairs) and mean width of: the default
Student-t PPI++ interval, a studentized bootstrap of the PPI++ rectifier (lam as tuned on the sample; Efron and
Tibshirani 1993, ch. 12), the default interval on a proportionally stratified sample (strata: quantiles of the
judge's uncertainty, the sum of p(1 - p) over a query's holes: hiera_dspy.conclude.strata, what
eval.holes --sample stratified draws; Cochran 1977, ch. 5), and the human-only interval.
"""

from __future__ import annotations

import argparse
import json
import random
from itertools import combinations
from pathlib import Path

import numpy as np

import bench.conclusions as bc
from hiera_dspy.conclude.ppi import estimate_columns, min_queries
from hiera_dspy.conclude.strata import allocate, query_uncertainty, strata_of


def columns(values: dict, m: str):
    """(names, per-query matrix of the systems then their pairwise differences) of one measure."""
    names = list(values[m])
    mat = np.column_stack([values[m][s] for s in names])
    a, b = (np.array(ix) for ix in zip(*combinations(range(len(names)), 2)))
    labels = names + [f"{names[i]} - {names[j]}" for i, j in zip(a, b)]
    return labels, np.hstack([mat, mat[:, a] - mat[:, b]])


def boot_t(r: np.ndarray, offset: np.ndarray, extra_var: np.ndarray, rng, level: float = 0.95, resamples: int = 999):
    """Studentized bootstrap interval of mean(r) + offset per column of r (n, d); `extra_var` is the fixed variance
    of the offset (the unlabeled queries' term)."""
    n = r.shape[0]
    mean, se = r.mean(0), np.sqrt(r.var(0, ddof=1) / n + extra_var)
    rs = r[rng.integers(0, n, (resamples, n))]  # (B, n, d)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (rs.mean(1) - mean) / np.sqrt(rs.var(1, ddof=1) / n + extra_var)
    lo_q, hi_q = np.quantile(np.nan_to_num(t), [(1 - level) / 2, (1 + level) / 2], axis=0)
    return mean + offset - hi_q * se, mean + offset - lo_q * se


def stratified(strata: list[np.ndarray], n: int, rng) -> np.ndarray:
    """A proportionally allocated stratified sample of n queries (the library's allocation: leftovers at random)."""
    k = allocate([len(s) for s in strata], n, random.Random(int(rng.integers(2 ** 31))))
    return np.concatenate([rng.choice(s, m, replace=False) for s, m in zip(strata, k)])


def sampling_probabilities(uncertainty: np.ndarray, mix: float) -> np.ndarray:
    """Draw probabilities of an active sample (Zrnic and Candes, "Active statistical inference", ICML 2024): in
    proportion to the square root of the judge's uncertainty on a query (its sum of p(1 - p) over the holes: the
    spread of the query's metric under the judge's probabilities, so roughly of its human-minus-machine value),
    mixed with the uniform draw (`mix` of it), which bounds every weight by 1 / mix."""
    root = np.sqrt(np.maximum(uncertainty, 0.0))
    share = root / root.sum() if root.sum() > 0 else np.full(len(root), 1.0 / len(root))
    return (1 - mix) * share + mix / len(root)


def active(t_mat, m_mat, prob: np.ndarray, n: int, rng, level: float = 0.95):
    """The interval from n queries drawn independently with probabilities `prob` (with replacement: the draws are
    i.i.d., which is what ppi_py's weighted estimators assume), weighted by 1 / prob (ppi_py normalises the weights:
    a Hajek estimator), the machine's values of every query as the unlabeled part; Student-t widened as the
    library's (hiera_dspy.conclude.ppi.widen)."""
    from ppi_py import ppi_mean_ci

    from hiera_dspy.conclude.ppi import widen

    rows = rng.choice(len(prob), n, replace=True, p=prob)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo, hi = ppi_mean_ci(t_mat[rows], m_mat[rows], m_mat, alpha=1 - level, lam=None, w=1.0 / prob[rows],
                             lam_optim_mode="element")
    lo, hi = widen(lo, hi, 1 - level, n, fitted=True)
    return np.nan_to_num(np.asarray(lo).ravel(), nan=-np.inf), np.nan_to_num(np.asarray(hi).ravel(), nan=np.inf)


def main(argv: list[str] | None = None) -> None:
    """Print the diagnosis and the remedies' coverage and width."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", required=True)
    p.add_argument("--judge", default="embed-lr-allpool-hgb")
    p.add_argument("--machine-values", default="expected", choices=("labels", "expected"))
    p.add_argument("--sizes", default="20,40,80")
    p.add_argument("--samples", type=int, default=1000)
    p.add_argument("--strata", type=int, default=4)
    p.add_argument("--mix", type=float, default=0.5, help="the active draw's share of the uniform draw (default 0.5)")
    args = p.parse_args(argv)
    built = json.loads((Path(args.work) / "built.json").read_text())
    truth = bc.values_of(built, [g for _, _, g in built["holes"]])
    probs = built["probs"][args.judge]
    machine = (bc.values_of(built, built["judges"][args.judge]) if args.machine_values == "labels"
               else bc.expected_values_of(built, probs))
    # the library's definition, as eval.holes --sample stratified draws: hiera_dspy.conclude.strata
    uncertainty = query_uncertainty(built["queries"], ((q, pr) for (q, _, _), pr in zip(built["holes"], probs)))
    strata = strata_of(uncertainty, args.strata)
    prob = sampling_probabilities(uncertainty, args.mix)
    total = len(built["queries"])
    for m in truth:
        labels, t_mat = columns(truth, m)
        _, m_mat = columns(machine, m)
        target, k = t_mat.mean(0), len(truth[m])
        for n in [int(x) for x in args.sizes.split(",")]:
            hits = {key: [] for key in ("t", "boot-t", "stratified", "active", "human-only")}
            widths = {key: [] for key in hits}
            below, above = np.zeros(len(target)), np.zeros(len(target))
            for seed in range(args.samples):
                rng = np.random.default_rng(seed)
                for design, rows in (("t", rng.choice(total, n, replace=False)),
                                     ("stratified", stratified(strata, n, rng))):
                    picked = np.zeros(total, dtype=bool)
                    picked[rows] = True
                    e = estimate_columns(t_mat[picked], m_mat[picked], m_mat[~picked])
                    found = {design: (e.lo, e.hi)}
                    if design == "t":
                        below += target < e.lo - 1e-12
                        above += target > e.hi + 1e-12
                        unl = m_mat[~picked]
                        found["boot-t"] = boot_t(t_mat[picked] - e.lam * m_mat[picked], e.lam * unl.mean(0),
                                                 e.lam ** 2 * unl.var(0, ddof=1) / len(unl),
                                                 np.random.default_rng(10 ** 6 + seed))
                        found["human-only"] = (e.human_lo, e.human_hi)
                        found["active"] = active(t_mat, m_mat, prob, n, np.random.default_rng(2 * 10 ** 6 + seed))
                    for key, (lo, hi) in found.items():
                        hits[key].append((lo - 1e-12 <= target) & (target <= hi + 1e-12))
                        widths[key].append((hi - lo)[:k])
            cover = {key: np.mean(v, 0) for key, v in hits.items()}
            print(f"== {args.judge} ({args.machine_values}) {m}, {n} sampled queries, {args.samples} samples")
            for i in np.argsort(cover["t"])[:6]:
                rect = t_mat[:, i] - m_mat[:, i]
                print(f"  {labels[i]:28s} coverage {cover['t'][i]:.3f}, truth below / above the interval "
                      f"{below[i] / args.samples:.3f} / {above[i] / args.samples:.3f}, human-only "
                      f"{cover['human-only'][i]:.3f}; skewness human {_skew(t_mat[:, i]):+.2f} / human-minus-machine "
                      f"{_skew(rect):+.2f}, n_min {min_queries(rect)}")
            for key in hits:
                print(f"  {key:11s} coverage min systems / pairs {cover[key][:k].min():.3f} / {cover[key][k:].min():.3f}"
                      f", mean width {np.mean(widths[key]):.4f}")


def _skew(v: np.ndarray) -> float:
    from scipy.stats import skew

    return float(skew(v)) if np.ptp(v) > 1e-12 else 0.0


if __name__ == "__main__":
    main()
