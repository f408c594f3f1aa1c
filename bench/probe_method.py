"""Issue 21's headline as a user gets it: the shipped probe-stacked method fitted on the MSRD judgments pool, as
`optimize.compile --dataset msrd --split pool --method probe-stacked --set probe_pairs=N --set model=hgb
--set features=query+prior --set class_weight=balanced` fits it, scored on bench/probe_heldout.py's held-out pairs.

    flock /work/model.lock nice -n -5 python -m bench.probe_method --probe-pairs 3000    # hidden states: the model
    python -m bench.probe_method --probe-pairs 3000 --load /tmp/probe_method/fit.json   # rescore a saved fit
    python -m bench.probe_method --method embed-lr       # the scorer alone (no model): the same two held-out sets

The only difference from the command: the train split is the pool minus the held-out queries (the command's pool
holds them; a judge must never have seen the pairs it is scored on). Two held-out sets: bench/probe_heldout.py's 400
pairs (seed 21; about ten configurations were scored on them on 2026-12-01, so some selection) and a fresh set of
as many (`--fresh-seed`, default 22: other queries, outside every earlier measurement), scored for the first time by
this script. Everything else is the method's own code path:
`prepare` draws `probe_pairs` pairs balanced within queries (`methods.probe.probed_sample`), reads their hidden states,
fits the stacker on 5 query-grouped out-of-fold folds (each fold's scorer fitted on the whole pool minus the fold's
queries), then the scorer on the whole split; judging calls `prefetch` (batched hidden states, as `eval.label` does)
and `forward` per pair. Nothing was chosen on the held-out pairs: the scorer's options are bench/pool_select.py's
winner on a pool dev split, probe_pairs is fixed before the run.

Rows: embed-lr 300 (today's judge, the McNemar reference) and the fitted method, each with n, kappa and its bootstrap
95% CI, accuracy, McNemar, and seconds a judged pair: the hidden states of the held-out pairs uncached (wall and CPU
seconds of `prefetch`, the load average beside it) plus `forward`. Fit time (wall, CPU) and peak memory are printed.
Writes bench/results/probe_method.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bench.common import (
    OUT,
    POOL_OPTIONS,
    fresh_pairs,
    heldout_pairs,
    mcnemar_cell,
    metrics_row,
    peak_rss_mb,
    write_result,
)
from hiera_dspy.data import load_dataset
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.metrics.format import number, with_ci


def timed(fn):
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - start, time.process_time() - cpu


def run(args) -> dict:
    dataset = load_dataset("msrd")
    labels = list(dataset.scheme.labels)
    first = heldout_pairs(dataset, args.queries, args.seed)
    fresh = fresh_pairs(dataset, {p.query_id for p in first}, args.queries, args.fresh_seed)
    sets = {f"held-out (seed {args.seed}, scored on 2026-12-01)": first,
            f"fresh held-out (seed {args.fresh_seed}, first scored here)": fresh}
    held = first + fresh
    heldq = {p.query_id for p in held}
    pool = [p for p in dataset.split("pool") if p.query_id not in heldq]
    options = {**POOL_OPTIONS, "features": "query+prior"}

    train300 = list(dataset.split("train"))
    reference_judge = build("embed-lr", BuildContext(dataset.scheme, train=train300))
    reference_judge.prepare(train300)
    reference = {p.id: reference_judge(**p.inputs()).label for p in held}

    probe = {"probe_pairs": args.probe_pairs} if args.method == "probe-stacked" else {}
    program = build(args.method, BuildContext(dataset.scheme, train=pool), **probe, **options)
    fit = {}
    if args.load:
        program.load_extra(json.loads(Path(args.load).read_text()))
    else:
        _, fit["wall_s"], fit["cpu_s"] = timed(lambda: program.prepare(pool))
        fit["peak_rss_mb"] = peak_rss_mb()
        save = Path(args.save)
        save.parent.mkdir(parents=True, exist_ok=True)
        save.write_text(json.dumps(program.dump_extra()))
        print(f"fitted in {fit['wall_s']:.0f} s wall, {fit['cpu_s']:.0f} CPU s, peak {fit['peak_rss_mb']:.0f} MB; "
              f"saved to {save}", file=sys.stderr)
    load = os.getloadavg()[0]
    _, pre_wall, pre_cpu = timed(lambda: program.prefetch(held) if hasattr(program, "prefetch") else None)
    judged, fwd_wall, _ = timed(lambda: {p.id: program(**p.inputs()).label for p in held})
    load = (load + os.getloadavg()[0]) / 2
    name = (f"{args.method}, pool minus held-out ("
            f"{', '.join(f'{k}={v}' for k, v in {**probe, **options}.items())})")
    timing = {"s_per_pair": (pre_wall + fwd_wall) / len(held), "cpu_s_per_pair": pre_cpu / len(held), "load": load}
    result = {"method": args.method, "queries_per_set": args.queries, "seed": args.seed, "fresh_seed": args.fresh_seed,
              "train_pairs": len(pool), "probe_pairs": probe.get("probe_pairs"), "options": options, "fit": fit,
              "timing": timing, "sets": []}
    for set_name, pairs in {**sets, "both": held}.items():
        gold = [p.label for p in pairs]
        ref = [reference[p.id] for p in pairs]
        result["sets"].append({
            "name": set_name, "n": len(pairs), "relevant": sum(g == labels[-1] for g in gold),
            "rows": [metrics_row("embed-lr 300", gold, ref, ref, labels, train_pairs=len(train300)),
                     metrics_row(name, gold, [judged[p.id] for p in pairs], ref, labels, train_pairs=len(pool),
                                 **timing)]})
    return write_result(Path(args.out), "probe_method", result, markdown(result))


def markdown(result: dict) -> str:
    probed = f", hidden states of {result['probe_pairs']}" if result.get("probe_pairs") else ""
    lines = [f"### The shipped {result.get('method', 'probe-stacked')} fitted on the judgments pool "
             f"({result['train_pairs']} pairs{probed}), on two held-out sets of {result['queries_per_set']} queries "
             "(one relevant and one irrelevant pair each)", "",
             "| held-out set | judge | n | kappa [95% CI] | accuracy | McNemar vs embed-lr 300 (b, c, p) | s/pair |",
             "|---|---|---|---|---|---|---|"]
    for group in result["sets"]:
        for r in group["rows"]:
            s = r.get("s_per_pair")
            lines.append(f"| {group['name']} | {r['name']} | {r['n']} | {with_ci(r['kappa'], r['kappa_ci'])} | "
                         f"{number(r['accuracy'])} | {mcnemar_cell(r)} | {'-' if s is None else f'{s:.2f}'} |")
    t, fit = result["timing"], result["fit"]
    lines += ["", f"s/pair: the held-out pairs' hidden states uncached and batched (`prefetch`, the probe only) plus "
                  f"`forward`; {t['cpu_s_per_pair']:.2f} CPU-s a pair in the hidden states, load average {t['load']:.1f}."]
    if fit:
        lines.append(f"Fit: {fit['wall_s']:.0f} s wall, {fit['cpu_s']:.0f} CPU s, peak memory {fit['peak_rss_mb']:.0f} "
                     "MB (probe-stacked: the probed pairs' hidden states and 6 scorer fits).")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="probe-stacked", choices=("probe-stacked", "embed-lr"),
                    help="embed-lr: the same scorer without the probe (no model)")
    ap.add_argument("--probe-pairs", type=int, default=3000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--fresh-seed", type=int, default=22)
    ap.add_argument("--load", help="a fit saved by --save: rescore without refitting")
    ap.add_argument("--save", default="/tmp/probe_method/fit.json")
    ap.add_argument("--out", default=str(OUT))
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    main()
