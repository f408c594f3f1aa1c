"""Plan the human sample of a holes run before anyone labels: how many queries a person must label, per system and
per pair of systems.

    python -m eval.plan --run RUN_ID [--width 0.05] [--power 0.8]     # or: hiera-dspy plan --run RUN_ID

From the filled run alone (the machine's values on all N queries and the judge's label probabilities), per measure:
each system's and each pair's n_min (the sampled queries the normal approximation needs: Cochran's rule on the
skewness over all N of the human-minus-machine values the judge's probabilities predict), the sampled queries for an interval of --width (hi - lo), and per pair
the sampled queries that tell the two apart at 80% power (--power) if the difference is the machine's; which pairs
cannot be told apart at any sample size; and, once a human sample is decided, what it gives now and how many more
queries each undecided pair needs. The predictions simulate the human labels from the judge's own probabilities, so
they are as good as its calibration (docs/conclusions.md measures them). --json prints every number.
"""

from __future__ import annotations

import argparse
import json
import sys

from hiera_dspy.api import PlanRequest, plan
from hiera_dspy.cli.options import cli_main
from hiera_dspy.conclude.calibration import line as calibration_line
from hiera_dspy.conclude.sample_size import STRATIFY, first_sample
from hiera_dspy.metrics.numbers import with_ci


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m eval.plan`."""
    p = argparse.ArgumentParser(prog="python -m eval.plan", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, help="run id of a holes run (printed by eval.holes)")
    p.add_argument("--store", help="run store SQLite file (default: runs/store.sqlite)")
    p.add_argument("--width", type=float, default=0.05, help="target interval width, hi - lo (default 0.05)")
    p.add_argument("--power", type=float, default=0.8, help="power to tell a pair apart (default 0.8)")
    p.add_argument("--draws", type=int, default=20, help="label sets drawn from the judge's probabilities (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws (default 0)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    return p


def lines_of(plan: dict) -> list[str]:
    """The plan in words: a table per measure, systems then pairs."""
    n_total, pct = plan["queries"], f"{plan['level']:.0%}"
    out = [f"Plan of run {plan['run_id']}: {n_total} queries, {plan['decided']} decided sample queries; {pct} "
           f"intervals of width {plan['width']} (hi - lo), {plan['power']:.0%} power (human labels simulated from the "
           f"judge's probabilities, {plan['draws']} draws)."]
    for m in dict.fromkeys(line["measure"] for line in plan["lines"]):
        rows = [line for line in plan["lines"] if line["measure"] == m]
        out += ["", f"== {m}: systems", "| system | machine | n_min | n for width | now |", "|---|---|---|---|---|"]
        out += [f"| {r['a']} | {r['machine']:.3f} | {r['n_min']} | {r['n_width']}{_from_sample(r)} | {_now(r['now'])} |"
                for r in rows if r["b"] is None]
        out += ["", f"== {m}: pairs", "| pair | machine difference | n_min | n to tell apart | now |",
                "|---|---|---|---|---|"]
        out += [f"| {r['a']} - {r['b']} | {r['machine']:+.3f} | {r['n_min']} | {_apart(r, n_total)} | "
                f"{_now(r['now'], pair=True)} |" for r in rows if r["b"] is not None]
        never = [f"{r['a']} - {r['b']}" for r in rows if r["b"] is not None
                 and (r["n_power"] is None or r["n_power"] >= n_total)]
        if never:
            out.append(f"Cannot be told apart at any sample size short of every query: {', '.join(never)}.")
    out += ["", calibration_line(plan.get("calibration")), "", _design(plan), "", _next_step(plan)]
    out += _in_judgments(plan)
    out += ["", "n for width and n to tell apart are the report's interval's (the confidence sequence over each "
            "query's range: valid after every decided query, at any n). n_min: Cochran's rule n > 28 + 25 g^2, g the "
            "skewness over all queries of the human-minus-machine values the judge's probabilities predict: the first "
            "sample whose spread sizes the rest. If the judge is badly calibrated the prediction is wrong: the decided "
            "sample's own residuals raise the figure under now. Pair intervals are per pair: with k pairs, about "
            f"{1 - plan['level']:.0%} of k miss by chance."]
    return out


def _in_judgments(plan: dict) -> list[str]:
    """Both units in judgments: per measure the median over the systems of the judgments for the width (whole
    queries: n for width times the holes a query has on average) and of a pair unit's designs, and which is cheaper."""
    import numpy as np

    pair, units = plan.get("pair"), plan.get("units")
    if not pair or not units or units.get("ratio") is None:
        return []
    per_query = units["holes_per_query"]
    out = ["", f"== in judgments ({pair['holes']} holes, {per_query:.1f} a query on average; median over the systems "
               f"for width {plan['width']}, and over the pairs to tell apart)",
           "| measure | whole queries | " + " | ".join(f"pair, {d}" for d in pair["designs"]) + " |",
           "|---|---|" + "---|" * len(pair["designs"])]
    for m in dict.fromkeys(line["measure"] for line in plan["lines"]):
        q = [r["n_width"] * per_query for r in plan["lines"] if r["measure"] == m and r["b"] is None and r["n_width"]]
        cells = [f"{np.median([r['n_width'] for r in lines if r['measure'] == m and r['b'] is None]):.0f} "
                 f"(apart {_median([r['n_power'] for r in lines if r['measure'] == m and r['b'] is not None])})"
                 for lines in pair["designs"].values()]
        out.append(f"| {m} | {_median(q)} | " + " | ".join(cells) + " |")
    cheaper, ratio = units["cheaper"], units["ratio"]
    out.append(f"Cheaper for this benchmark: {'single holes' if cheaper == 'pair' else 'whole queries'} "
               f"(--sample-unit {cheaper}{', --sample ' + pair['design'] if cheaper == 'pair' else ''}), "
               f"{max(ratio, 1 / ratio):.1f}x fewer judgments for the width (median over the estimates; the pair "
               "unit's figure is its fixed-n interval's at the planned number, from the judge's probabilities).")
    return out


def _median(values) -> str:
    import numpy as np

    got = [v for v in values if v is not None]
    return "-" if not got else f"{np.median(got):.0f}"


def _next_step(plan: dict) -> str:
    """Stein's two stages: before anyone labels, the n for a width is a lower bound (the judge's errors on one
    query's holes go together, which draws from its probabilities miss); a first sample of the largest n_min
    measures the spread the rest is sized by."""
    first = max(first_sample(line["n_min"], line.get("holes"), plan["queries"]) for line in plan["lines"])
    if plan["decided"] == 0:
        return (f"Next: label a first sample of {first} queries (--human-sample {first}: enough to hold every "
                "estimate's n_min of queries with holes), then run plan again: before anyone labels, 'n for width' "
                "assumes the judge's probabilities calibrated (on the benchmarks 0.90-1.12 of the n that reached the width "
                "with calibrated judges, 0.56 with errors that go together within a query), and from a decided first "
                "sample its figure in brackets came within 25% of it in the median (0.77-1.10; docs/conclusions.md).")
    return (f"The decided sample's own spread sizes the rest (the figure in brackets beside 'n for width'); "
            f"{plan['decided']} of the {first} queries every estimate's n_min asks for are decided.")


def _design(plan: dict) -> str:
    """Which sample design the plan recommends: stratified only when it is predicted 10% narrower or more."""
    gain = plan.get("stratified_gain")
    if gain is None:
        return "Design: random (no query with holes to stratify)."
    said = (f"Design: --sample stratified (strata of the judge's uncertainty) is predicted {gain:.0%} narrower than a "
            "random sample (median over the estimates, from the judge's probabilities)")
    active = plan.get("active_gain")
    if active is not None:
        said += (f"; --sample active (queries drawn by the judge's uncertainty, weighted by the inverse) is predicted "
                 f"{active:.0%} narrower once past n_min (the t interval; below it the interval follows the range)")
    if plan.get("design") == "stratified":
        return said + ": draw it with --sample stratified."
    return said + f": under {STRATIFY:.0%}, so draw at random (the default)."


def _from_sample(r: dict) -> str:
    return "" if r.get("n_width_sample") is None else f" ({r['n_width_sample']} from the sample's spread)"


def _apart(r: dict, n_total: int) -> str:
    if r["n_power"] is None:
        return "no n (the machine sees no difference)"
    return f"more than {n_total - 1}" if r["n_power"] >= n_total else str(r["n_power"])


def _now(e: dict | None, pair: bool = False) -> str:
    if not e or e.get("ci") is None:
        return "-" if not e or e.get("ppi") is None else f"{e['ppi']:.3f} ({e.get('note') or 'no interval'})"
    told = with_ci(e["ppi"], e["ci"]) + f", n = {e['n']}"
    if pair and e.get("more_queries"):
        told += f"; label {e['more_queries']} more to tell apart"
    return told


def main(argv: list[str] | None = None) -> dict:
    """Print the plan of a holes run; returns it."""
    args = parser().parse_args(argv)
    planned = plan(PlanRequest(args.run, args.store, args.width, args.power, args.draws, args.seed)).to_dict()
    print(json.dumps(planned, indent=1) if args.json else "\n".join(lines_of(planned)), file=sys.stdout)
    return planned


if __name__ == "__main__":
    cli_main(main)
