"""Does the plan ask for what labelling needs? After a first sample, the plan's n for an interval width against the
n at which the product's intervals reach that width; and the calibration check on judges whose plan would under-ask.

    python -m bench.conclusions --plan-check --dataset msrd --samples 200
    python -m bench.conclusions --plan-check --dataset trecdl2020 --trec-qrels QRELS --samples 200

The benchmark is the staged one's (bench/conclusions_staged.py: simulated systems over MSRD's or TREC DL 2020's real
judgments, 40% of the queries judged in full) with four simulated judges: "probabilities" (calibrated, independent
holes), "labels" (the same without a distribution), "overconfident" (states 1 - (1 - c) / 4 where c is its chance
to be right) and "correlated" (calibrated, but its errors on a query's holes go together).

Each of `--samples` repetitions orders the queries at random and labels them in that order. The first `--first`
queries are the first sample: on them the product's calibration check runs (hiera_dspy.conclude.calibration.check,
as `hiera-dspy plan` runs it on the decided holes), and the plan names, for each system and pair, the sampled queries
for a width (hiera_dspy.conclude.sample_size: `plan`'s residual spread from label sets simulated from the judge's
probabilities, as is and times the check's inflation, and `n_width_sample` from the first sample's own residual
spread, as `hiera-dspy plan` prints them), and the plan until 2026-12-06 beside it (no ranges: the t interval with the
betting interval beside it below n_min). The target widths are the median width of the product's interval (certainty
stratum, domain estimator, the confidence sequence over each query's range with its bets tuned for a sample of that
size; bench/conclusions_staged.intervals) when `--widths-at` queries are labelled, so the n that reaches the target
is that n (the median width falls as n grows), and each plan's n over it is 1.0 when the plan is exact.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from bench.conclusions_staged import (
    benchmark,
    columns_of,
    intervals,
    judge_records,
    plan_inputs,
    plan_spans,
    samples_of,
    stage_coverage,
)
from hiera_dspy.conclude.calibration import check
from hiera_dspy.conclude.sample_size import interval_widths, n_for_interval, pair_span, plan, recommended_design

STEP = 1.05
DESIGN_SAMPLES = 400  # samples a design for the measured width and coverage of complete samples
STATS = ("z", "spiegelhalter_z", "brier_ratio", "dispersion", "inflation")


def human_records(b: dict, records: list[dict]) -> list[dict]:
    """The judge's records with a person's label (the true grade) on every hole: what the check reads once decided."""
    labels = b["scheme"].labels
    return [r | {"label": labels[b["holes"][(r["query_id"], r["item_id"])]], "source": "human"} for r in records]


def realised_widths(cols: dict, orders: list[np.ndarray], at: int, level: float = 0.95) -> dict:
    """(measure, column) -> each order's interval width once its first `at` queries are labelled, as the report gives
    it for a sample of `at` (the confidence sequence over each query's range; 0: exact; NaN: fewer than 2 decided
    queries with holes)."""
    out = {}
    for m, c in cols.items():
        for j in range(c["x"].shape[1]):
            hole_q = ~c["certain"][:, j]
            widths = np.full(len(orders), np.nan)
            groups: dict[int, list] = {}
            for i, order in enumerate(orders):
                dec = [int(q) for q in order[:at] if hole_q[q]]
                groups.setdefault(len(dec), []).append((i, dec))
            for n, members in groups.items():
                rows = [i for i, _ in members]
                if n == int(hole_q.sum()):
                    widths[rows] = 0.0
                elif n >= 2:
                    est = intervals(c, j, [dec for _, dec in members], None, level, horizon=at)
                    widths[rows] = est.hi - est.lo
            out[(m, j)] = widths
    return out


def first_sample_spread(c: dict, j: int, order: np.ndarray, first: int) -> float | None:
    """The residual sd of column `j` over the first sample (the `sd` of the product's estimate: slope 1, over the
    decided queries with holes); None below 2 decided queries with holes."""
    hole_q = ~c["certain"][:, j]
    dec = [int(q) for q in order[:first] if hole_q[q]]
    if len(dec) < 2:
        return None
    return float(np.std(c["y"][dec, j] - c["x"][dec, j], ddof=1))


def grid(scale: float) -> float:
    """A scale of the residual's spread on a grid of 5% steps (the widths of the plan memoised across repetitions;
    a step moves the plan's n by about 10% at most, half that on average)."""
    return float(STEP ** round(np.log(max(scale, 1e-6)) / np.log(STEP)))


def column_widths(machine: dict, sims: list[dict], holes: dict, m: str, name: str, n_min: int, big_n: int,
                  spans: dict | None):
    """The plan's `interval_widths` of one system ("s0") or pair ("s0-s1") on measure `m`, as `plan` builds it
    (`spans` None: the plan until 2026-12-06, the t interval with the betting interval beside it below n_min)."""
    a, _, b = name.partition("-")
    x = machine[m][a] - (machine[m][b] if b else 0)
    ys = [sim[m][a] - (sim[m][b] if b else 0) for sim in sims]
    w = holes[m][a] | (holes[m][b] if b else False)
    span = (pair_span(spans, m, a, b) if b else spans[m][a]) if spans is not None else None
    return interval_widths(x[w], [y[w] for y in ys], big_n, n_min, (-1.0, 1.0) if b else (0.0, 1.0),
                           span=None if span is None else (span[0][w], span[1][w]))


def check_judge(b: dict, judge: str, args) -> dict:
    """One judge: per (measure, kind, at) the ratios plan n / true n of every (repetition, column), for the plan as
    is, inflated by the check and from the first sample's spread (scales on `grid`, so the widths are memoised
    across repetitions), and for the plan until 2026-12-06 (no ranges: the switch's widths); and the check's
    statistics per repetition."""
    records = judge_records(b, judge, args.seed + 1)
    cols = columns_of(b, records)
    machine, sims, holes = plan_inputs(b, records, args.plan_draws)
    spans = plan_spans(b)
    start = time.perf_counter()
    lines = {(ln.measure, ln.a if ln.b is None else f"{ln.a}-{ln.b}"): ln
             for ln in plan(machine, sims, holes=holes, spans=spans)}
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    before = {(ln.measure, ln.a if ln.b is None else f"{ln.a}-{ln.b}"): ln for ln in plan(machine, sims, holes=holes)}
    seconds_before = time.perf_counter() - start
    human = human_records(b, records)
    queries, big_n = b["queries"], len(b["queries"])
    rng = np.random.default_rng(args.seed + 3)
    orders = [rng.permutation(big_n) for _ in range(args.samples)]
    checks = [check(human, [queries[i] for i in order[:args.first]], b["scheme"]) for order in orders]
    inflation = [grid(c["inflation"] if c else 1.0) for c in checks]
    ats = [int(x) for x in args.widths_at.split(",")]
    widths = {at: realised_widths(cols, orders, at) for at in ats}
    ratios: dict[tuple, dict[str, list]] = {}
    for m, c in cols.items():
        for j, name in enumerate(c["names"]):
            line = lines[(m, name)]
            width_at = column_widths(machine, sims, holes, m, name, line.n_min, big_n, spans)
            switch_at = column_widths(machine, sims, holes, m, name, before[(m, name)].n_min, big_n, None)
            spread = [first_sample_spread(c, j, order, args.first) for order in orders]
            for at in ats:
                target = float(np.nanmedian(widths[at][(m, j)]))
                if not np.isfinite(target) or target <= 0:
                    continue
                kind = "systems" if j < c["systems"] else "pairs"
                into = ratios.setdefault((m, kind, at), {"plan": [], "inflated": [], "sample": [], "switch": []})
                into["plan"].append(n_for_interval(lambda n: width_at(n, 1.0), big_n, target) / at)
                into["switch"].append(n_for_interval(lambda n: switch_at(n, 1.0), big_n, target) / at)
                for r in range(len(orders)):
                    into["inflated"].append(n_for_interval(lambda n, s=inflation[r]: width_at(n, s), big_n, target) / at)
                    sd = spread[r]
                    if sd is not None and line.sd_holes:
                        # the sequence's widths do not read n_min: the plan's serve every sample
                        into["sample"].append(n_for_interval(lambda n, s=grid(sd / line.sd_holes): width_at(n, s),
                                                             big_n, target) / at)
    return {"ratios": ratios, "checks": [c for c in checks if c], "design": design_check(b, records, cols, args),
            "seconds": (seconds, seconds_before)}


def design_check(b: dict, records: list[dict], cols: dict, args) -> dict:
    """The plan's predicted narrowing by `--sample stratified` (its strata of the judge's uncertainty) and the design
    it recommends, beside what the staged protocol measures on DESIGN_SAMPLES (or `--samples` if more) complete
    samples of `--sample-size` drawn each way: the systems' mean width (with the betting interval, and the t
    interval alone) and the lowest coverage over the systems and pairs."""
    machine, sims, holes = plan_inputs(b, records, args.plan_draws)
    got = {}
    for design in ("random", "stratified"):
        samples, layer = samples_of(b, records, design, args.sample_size, max(args.samples, DESIGN_SAMPLES),
                                    args.seed + 2, args.strata)
        (got[design],) = stage_coverage(cols, samples, layer, every=10 ** 6)
    chosen, gain = recommended_design(plan(machine, sims, holes=holes, strata=layer))
    return {"gain": gain, "chosen": chosen, **got}


def summary(r: list[float]) -> str:
    """median [quartiles], share within +-25%"""
    a = np.asarray(r, dtype=float)
    if not len(a):
        return "-"
    return (f"{np.median(a):.2f} [{np.quantile(a, 0.25):.2f}, {np.quantile(a, 0.75):.2f}], "
            f"{np.mean(np.abs(a - 1) <= 0.25):.0%}")


def run(args) -> list[str]:
    """The Markdown tables: the plan's n over the true n per judge, measure and target; the check per judge."""
    b, said = benchmark(args)
    head = (f"{said}; {args.samples} orders a judge, a first sample of {args.first} queries; target widths: the "
            f"median width when {args.widths_at} queries are labelled.")
    width_rows = ["| judge | measure | estimates | true n | plan / true (before labelling) | inflated by the check: "
                  "median [quartiles], within ±25% | from the first sample's spread: median [quartiles], within ±25% | "
                  "the plan until 2026-12-06 / true |", "|---|---|---|---|---|---|---|---|"]
    design_rows = ["| judge | predicted narrowing (median) | plan's design | width stratified / random (narrower) | "
                   "t alone: stratified / random (narrower) | lowest coverage random / stratified |",
                   "|---|---|---|---|---|---|"]
    check_rows = ["| judge | flagged | z | Spiegelhalter's z | Brier ratio | dispersion | inflation | plan n / needed: "
                  "as is, inflated (systems, median) | the plan's time, s: now / until 2026-12-06 |",
                  "|---|---|---|---|---|---|---|---|---|"]
    for judge in args.judges.split(","):
        start = time.time()
        got = check_judge(b, judge, args)
        for (m, kind, at), r in got["ratios"].items():
            width_rows.append(f"| {judge} | {m} | {kind} | {at} | {np.median(r['plan']):.2f} | "
                              f"{summary(r['inflated'])} | {summary(r['sample'])} | {np.median(r['switch']):.2f} |")
        cs = got["checks"]
        med = {k: float(np.median([c[k] for c in cs])) for k in STATS}
        systems = [r for (m, kind, at), r in got["ratios"].items() if kind == "systems"]
        as_is = np.median([x for r in systems for x in r["plan"]])
        inflated = np.median([x for r in systems for x in r["inflated"]])
        check_rows.append(f"| {judge} | {np.mean([c['flag'] for c in cs]):.0%} | {med['z']:+.2f} | "
                          f"{med['spiegelhalter_z']:+.2f} | {med['brier_ratio']:.2f} | {med['dispersion']:.2f} | "
                          f"{med['inflation']:.2f} | {as_is:.2f}, {inflated:.2f} | "
                          f"{got['seconds'][0]:.1f} / {got['seconds'][1]:.1f} |")
        d = got["design"]
        r, st = d["random"], d["stratified"]
        low = {k: min(x["systems_min"], x["pairs_min"]) for k, x in d.items() if k in ("random", "stratified")}
        design_rows.append(f"| {judge} | {d['gain']:.1%} | {d['chosen']} | {st['width']:.3f} / {r['width']:.3f} "
                           f"({1 - st['width'] / r['width']:.0%}) | {st['t_width']:.3f} / {r['t_width']:.3f} "
                           f"({1 - st['t_width'] / r['t_width']:.0%}) | {low['random']:.3f} / {low['stratified']:.3f} |")
        print(f"{judge}: {time.time() - start:.0f} s", file=sys.stderr)
        print("\n".join(width_rows + [""] + check_rows + [""] + design_rows), file=sys.stderr)
    return [head, "", *width_rows, "", *check_rows, "", *design_rows]
