"""The conclusions of a pair sample (`--sample-unit pair`) in words: how many judgments are decided, the estimates
table, and for every pair of systems whether the evidence tells them apart or how many more judgments would.
Pure: the dict of `hiera_dspy.benchmark.pair_conclusions` in, Markdown out.
"""

from __future__ import annotations

from hiera_dspy.conclude.report import estimates_table, machine_values_line
from hiera_dspy.metrics.numbers import number, with_ci

DESIGN_WORDS = {
    "random": "uniformly over the holes",
    "weighted": "with probability in proportion to each hole's weight in the estimated metrics (its rank discounts "
                "summed over the systems that retrieve it; a tenth spread evenly)",
    "active": "with probability half in proportion to each hole's weight in the metrics times the judge's "
              "uncertainty about it, half as the weighted design",
}


def sample_lines(s: dict) -> list[str]:
    """What the pair sample is and where it stands."""
    return [f"Human sample: single holes (--sample-unit pair), {s['judgments']} judgments asked "
            f"(--human-sample {s['requested']}, {s['method']}, seed {s['seed']}), drawn i.i.d. "
            f"{DESIGN_WORDS.get(s['method'], s['method'])}; {s['decided']} judgments decided in sample order "
            f"({s['draws_used']} of {s['draws']} draws counted: those before the first undecided hole), "
            f"{s['remaining']} left to decide.",
            "Each estimate is the machine's value plus the inverse-probability-weighted human corrections "
            "(Hansen-Hurwitz; nDCG linearised, its second-order remainder drawn from the judge's probabilities). "
            "The interval is the confidence sequence, valid after every judgment; once the planned number of "
            "judgments is decided it is the fixed-n Student-t interval, the sequence beside it (summary.json "
            "`sequence`, `fixed_n`)."]


def sentences(c: dict, measure: str) -> list[str]:
    """Every pair on one measure: told apart, or how many more judgments would tell it apart."""
    alpha = 1 - c["level"]
    out = []
    for d in (d for d in c["differences"] if d["measure"] == measure):
        low, high = d["ci"]
        first, second, diff, ci = ((d["a"], d["b"], d["ppi"], (low, high)) if d["ppi"] >= 0
                                   else (d["b"], d["a"], -d["ppi"], (-high, -low)))
        told = f"(difference {with_ci(diff, ci)}, p = {number(d['p'])})"
        if d["p"] is not None and d["p"] < alpha:
            out.append(f"{first} > {second} {told}.")
        elif d.get("more_judgments") is None:
            out.append(f"{d['a']} and {d['b']} cannot be told apart {told}; their estimated difference is zero, so no "
                       "number of judgments can be named.")
        else:
            out.append(f"{d['a']} and {d['b']} cannot be told apart yet {told}; about {d['more_judgments']} more "
                       "judgments would tell them apart (80% power at the difference estimated now, Holm's step).")
    return out


def section(c: dict) -> str:
    """The pair sample's conclusions as report.md's section."""
    pct = f"{c['level']:.0%}"
    s = c["human_sample"]
    lines = ["## Conclusions", "", *sample_lines(s), "",
             f"Estimates of the benchmark's own mean over its {c['queries']} queries: machine-only, the corrected "
             f"estimate with its {pct} interval (the human-only column is empty: a single hole is no query's value).",
             machine_values_line(c), "", *estimates_table(c), ""]
    for m in c["measures"]:
        lines += [f"Ranking by {m}: {' > '.join(c['ranking'][m])}.", "", *[f"- {x}" for x in sentences(c, m)], ""]
    undecided = sum(1 for d in c["differences"] if d["p"] is None or d["p"] >= 1 - c["level"])
    lines.append(f"{undecided} of {len(c['differences'])} pairs (over the measures) are not told apart yet; p-values "
                 "are Holm-adjusted over the pairs of each measure.")
    return "\n".join(lines) + "\n"
