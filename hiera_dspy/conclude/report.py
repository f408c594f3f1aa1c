"""The conclusions in words: a Markdown section with the estimates table and what the evidence allows.

"A > B (difference 0.05 [0.02, 0.08], p = 0.003)" where the Holm-adjusted p-value is below 1 - level; otherwise
"B and C cannot be told apart at this sample size; label about 23 more sampled queries to tell B from C" (80% power
at the difference estimated now and the pair's Holm step, `hiera_dspy.conclude.sample_size.more_queries`). Below an
estimate's n_min the caution names it with its own n (the betting interval stands there); a value no hole can
change is reported exactly; the calibration check of the decided holes is quoted.
Pure: the dict of `hiera_dspy.conclude.holes.conclusions` in, lines of text out.
"""

from __future__ import annotations

from hiera_dspy.conclude import calibration
from hiera_dspy.metrics.numbers import number, with_ci


def sample_lines(s: dict | None) -> list[str]:
    """What the human sample is and where it stands."""
    if s is None:
        return ["No human sample: the values below are the machine's alone, without a confidence interval. Draw one "
                "with --human-sample N|P% (whole queries, seeded) to get PPI estimates and intervals."]
    lines = [(f"Human sample: {s['queries']} queries (--human-sample {s['requested']}, {s['method']}, seed "
              f"{s['seed']}), {s['pairs']} pairs; {s['decided']} queries decided, {len(s['pending'])} pending "
              f"({s['remaining_pairs']} sample pairs left to label)."), design_line(s)]
    if s["partial"]:
        lines.append(f"Partly labelled, not counted until every pair is decided: "
                     f"{', '.join(f'{q} ({n} left)' for q, n in s['pending'].items() if q in s['partial'])}.")
    if s["no_holes"]:
        lines.append(f"{len(s['no_holes'])} sampled queries have no holes ({', '.join(s['no_holes'][:5])}"
                     f"{', ...' if len(s['no_holes']) > 5 else ''}): their existing judgments are human already, so "
                     "they count as decided with nothing to label.")
    return lines


def design_line(s: dict) -> str:
    """How the sample was drawn, in words."""
    if s.get("method") == "stratified":
        return (f"The sample is stratified: the queries were cut into {s['strata']} strata of (nearly) equal size "
                "by the judge's uncertainty on them (the sum of p(1 - p) over a query's holes) and the sample "
                f"allocated in proportion, {' / '.join(map(str, s['allocation']))} queries from the least to the most "
                "uncertain stratum, each drawn at random. Proportional allocation keeps the sample self-weighting, so "
                "the intervals below are computed as for a random sample, which is conservative (Cochran 1977, ch. 5).")
    if s.get("method") == "active":
        return ("The sample is active: queries were drawn one at a time, each with a probability half in proportion "
                "to the judge's uncertainty about it and half even (Zrnic and Candes 2024); the estimates weight each "
                "decided query by the inverse of its probability (Des Raj's estimator), counting the decided queries "
                "in draw order up to the first pending one, and the intervals are the confidence sequence, valid "
                "after every decided query (hiera_dspy.conclude.sequence).")
    return "The sample was drawn uniformly at random from the queries."


def estimates_table(c: dict) -> list[str]:
    """One row per system: machine-only, PPI with its CI, human-only with its CI, per measure."""
    pct = f"{c['level']:.0%}"
    head = " | ".join(f"{m} machine | {m} PPI [{pct} CI] | {m} human-only [{pct} CI]" for m in c["measures"])
    lines = [f"| run | {head} |", "|---|" + "---|" * (3 * len(c["measures"]))]
    for run, per in c["estimates"].items():
        cells = []
        for m in c["measures"]:
            e = per[m]
            cells += [number(e["machine"]), with_ci(e["ppi"], e["ci"]), with_ci(e["human_only"], e["human_only_ci"])]
        lines.append(f"| {run} | " + " | ".join(cells) + " |")
    return lines


def sentences(c: dict, measure: str) -> list[str]:
    """What the evidence allows about every pair on one measure."""
    alpha = 1 - c["level"]
    out = []
    for d in (d for d in c["differences"] if d["measure"] == measure):
        if d.get("rule") == "exact" and d["ppi"] is not None:  # no query left that a hole can change: known
            first, second = (d["a"], d["b"]) if d["ppi"] >= 0 else (d["b"], d["a"])
            why = d.get("note") or "every query is decided"
            out.append(f"{first} > {second} by exactly {number(abs(d['ppi']))} ({why})."
                       if abs(d["ppi"]) > 1e-12 else f"{d['a']} and {d['b']} are equal ({why}).")
            continue
        if d["ppi"] is None or d["ci"] is None:
            out.append(f"{d['a']} vs {d['b']}: no interval yet ({d['note']}).")
            continue
        low, high = d["ci"]
        if d["ppi"] >= 0:
            hi, lo, diff, ci = d["a"], d["b"], d["ppi"], (low, high)
        else:  # say it the way round that makes the difference positive
            hi, lo, diff, ci = d["b"], d["a"], -d["ppi"], (-high, -low)
        told = f"(difference {with_ci(diff, ci)}, {_p(d['p'])})"
        if d["p"] is not None and d["p"] < alpha:
            out.append(f"{hi} > {lo} {told}.")
        elif d["more_queries"] is None:
            out.append(f"{d['a']} and {d['b']} cannot be told apart {told}; their difference is zero on the sample, "
                       "so no number of sampled queries can be named.")
        elif d["more_queries"] == 0:
            out.append(f"{d['a']} and {d['b']} cannot be told apart after Holm's correction over the pairs {told}.")
        else:
            more = d["more_queries"]
            room = c["queries"] - d["n"]
            tail = (f"label about {more} more sampled queries to tell {d['a']} from {d['b']}" if more < room else
                    f"only labelling all {room} unsampled queries would tell {d['a']} from {d['b']}")
            out.append(f"{d['a']} and {d['b']} cannot be told apart at this sample size {told}; {tail} (80% power "
                       "at the difference estimated now).")
    return out


SEQUENCE = ("sequence", "active")  # the rules whose interval is the confidence sequence (no n_min)


def small_sample_note(c: dict) -> str | None:
    """A caution naming the estimates whose decided sample (queries with holes, each estimate's own n) is smaller
    than the normal approximation needs (each estimate's `n_min`: Cochran's rule as refined by Sugden, Smith and
    Jones 2000, the larger of what the skewness of the human-minus-machine values over the queries with holes that
    the judge's probabilities predict and that of the sample's own residuals ask for;
    hiera_dspy.conclude.finite.columns): there the betting interval stands beside the t one. None when every
    estimate has enough."""
    short = [(f"{run} {m}", e) for run, per in c["estimates"].items() for m, e in per.items()]
    short += [(f"{d['a']} - {d['b']} {d['measure']}", d) for d in c["differences"]]
    short = [(name, e) for name, e in short if e.get("n_min") and e.get("n") and e["n"] < e["n_min"]
             and e.get("rule") not in SEQUENCE]  # a confidence sequence holds at every n: no caution
    if not short:
        return None
    total = sum(len(per) for per in c["estimates"].values()) + len(c["differences"])
    worst = sorted(short, key=lambda x: -x[1]["n_min"])
    named = ", ".join(f"{name} (n = {e['n']} of {e['n_min']})" for name, e in worst[:5]) + (
        ", ..." if len(worst) > 5 else "")
    return (f"Caution: for {len(short)} of the {total} estimates the decided queries with holes are fewer than the "
            f"normal approximation behind the t interval needs (n > 28 + 25 g^2, g the skewness of the "
            f"human-minus-machine values over the queries with holes as the judge's probabilities predict them, or "
            f"of the sample's own if larger: Cochran's rule as refined by Sugden, Smith and Jones 2000); the most "
            f"needed: {named}. Their intervals are the hull of the t interval and the betting interval, which holds "
            f"at every sample size and is wider (docs/conclusions.md measures the coverage at every stage of "
            f"labelling); label more sampled queries (hiera-dspy plan says how many).")


BETTING = ("betting",)  # the rule under which the betting interval set a side


def betting_note(c: dict) -> str | None:
    """Which intervals the betting interval set (below n_min, or a residual whose spread is small against its
    range)."""
    named = [f"{run} {m}" for run, per in c["estimates"].items() for m, e in per.items() if e.get("rule") in BETTING]
    named += [f"{d['a']} - {d['b']} {d['measure']}" for d in c["differences"] if d.get("rule") in BETTING]
    if not named:
        return None
    return (f"{len(named)} interval{'s' if len(named) != 1 else ''} ({', '.join(named[:5])}"
            f"{', ...' if len(named) > 5 else ''}) come from the betting interval (Waudby-Smith and Ramdas), valid "
            "at every sample size for values in a known range: their sample is below n_min, or its "
            "human-minus-machine gaps vary too little against their range to trust the t interval "
            "(hiera_dspy.conclude.finite).")


def blind_spot_note(n: int, level: float) -> str:
    """What no interval from `n` randomly sampled queries can allow for: a machine error confined to a share p of
    the queries is absent from the sample with probability (1 - p)^n, which exceeds 1 - `level` for every p below
    1 - (1 - level)^(1/n) (about 3 / n at 95%: the "rule of three", Hanley and Lippman-Hand, JAMA 249, 1983). A
    sample that saw none of such an error shows no sign of it, so neither its interval nor the caution above can."""
    share = 1 - (1 - level) ** (1 / n)
    return (f"Blind spot: a machine error confined to fewer than {share:.1%} of the queries is missed entirely by "
            f"more than {1 - level:.0%} of random samples of {n} queries, and an interval cannot allow for an error "
            "its sample never shows (docs/conclusions.md measures this on MSRD).")


def machine_values_line(c: dict) -> str:
    """Which machine values the estimates use."""
    if c.get("machine_values") == "labels":
        return "Machine values: each query's metric under the judge's labels (--machine-values labels)."
    return (f"Machine values: each query's metric expected under the judge's label probabilities "
            f"(--machine-values expected; {c.get('soft_holes', 0)} holes carried probabilities, the others count "
            "their label).")


def section(c: dict) -> str:
    """The conclusions as a Markdown section of report.md."""
    pct = f"{c['level']:.0%}"
    lines = ["## Conclusions", "", *sample_lines(c["human_sample"]), "",
             f"Estimates of the benchmark's own mean over its {c['queries']} queries (a query a run does not answer "
             f"counts 0): machine-only (every hole labelled by the judge), PPI (machine labels corrected by the human "
             f"sample, ppi_py) with its {pct} CI, and the human sample alone with its {pct} CI (Student-t intervals "
             "with the finite-population variance, the betting interval beside them where the t one is not yet "
             "trusted, clipped to the metric's range). Queries no hole can change are known exactly; a value that "
             "no hole can change is exact.", machine_values_line(c), "",
             *estimates_table(c), ""]
    if c["human_sample"] and c["human_sample"]["decided"]:
        caution = small_sample_note(c)
        lines += [caution, ""] if caution else []
        ranged = betting_note(c)
        lines += [ranged, ""] if ranged else []
        lines += [calibration.line(c.get("calibration")), ""]
        lines += [blind_spot_note(c["human_sample"]["decided"], c["level"]), ""]
        for m in c["measures"]:
            lines += [f"Ranking by {m} (PPI): {' > '.join(c['ranking'][m])}.", "", *[f"- {s}" for s in sentences(c, m)],
                      ""]
        n_pairs = len({(d["a"], d["b"]) for d in c["differences"]})
        lines.append(f"p-values are two-sided tests of a zero difference (paired by query), Holm-adjusted over "
                     f"the {n_pairs} pair{'s' if n_pairs != 1 else ''} of each measure; intervals are "
                     f"per pair at {pct}, not simultaneous: about {(1 - c['level']) * n_pairs:.1f} of the {n_pairs} "
                     f"miss by chance. 'More sampled queries' assumes the difference stays where it is: a planning "
                     f"figure.")
    first = next(iter(c["estimates"].values()), {}) if c["human_sample"] else {}
    notes = sorted({e["note"] for e in first.values() if e.get("note")})
    lines += [f"Note: {n}." for n in notes]
    return "\n".join(lines) + "\n"


def _p(p: float | None) -> str:
    if p is None:
        return "p unknown"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"
