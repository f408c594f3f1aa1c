"""The headline measurement of issue 21: the offline judges on held-out MSRD pool pairs nobody fitted or chose on.

    python -m bench.probe_heldout pairs                  # how many held-out pairs, queries, relevant
    flock /work/model.lock nice -n -5 python -m bench.probe_ablation embed --split heldout --variant V   # states
    python -m bench.probe_heldout table --variant V      # no model: every row from the caches

Held-out pairs (`heldout_pairs`): `--queries` seeded pool queries (default 200) that are no query of the bundled
train or dev split, none of bench/learning.py's 200 held-out hole queries (seed 7) and none of bench/manipulation.py's
300 held-out pairs (seed 0); of each, one relevant and one irrelevant judged movie, drawn at random: balanced like
the bundled dev split, one query never in two roles. Nothing was fitted, tuned or chosen on them: prompt variants
were chosen on train (bench/probe_ablation.py), the stacker of the pool scorer is fitted on the bundled dev split,
the pool scorer on the pool minus these queries and the dev queries.

Rows (each: n, kappa with its bootstrap 95% CI, accuracy, McNemar against embed-lr 300 on the same pairs, seconds a
pair):
- embed-lr 300: today's judge (MiniLM + lexical, logistic regression on the 300 bundled train pairs);
- llm-probe 300 / probe-stacked 300: the shipped methods (`hiera_dspy.methods.probe`) fitted on the 300 train pairs;
- embed-lr pool (hgb, query features, balanced): fitted on the pool minus the held-out and dev queries (texts with a
  cached MiniLM vector, `--cached-only` as in bench/learning.py);
- probe-stacked pool: that scorer and the probe (fitted on train + dev, 600 pairs) stacked by a stacker fitted on the
  dev split's out-of-fold probe and honest pool-scorer distributions;
- "+ held-out half" rows: the probe (and stack) also learning from the other half of the held-out queries
  (2 query-grouped folds, cross-fitted: every pair is scored by a judge that never saw its query), i.e. what 200 more
  in-domain labelled pairs add.
s/pair: the probe's uncached hidden states of these pairs (bench/probe_ablation.py's timing of the `embed` run: wall
and CPU seconds), the scorer's batched seconds with its vectors cached. Writes bench/results/probe_heldout.md, .json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import (
    OUT,
    POOL_OPTIONS,
    heldout_pairs,
    mcnemar_cell,
    metrics_row,
    peak_rss_mb,
    probe_pool_pairs,
    write_result,
)
from hiera_dspy.data import load_dataset
from hiera_dspy.metrics.format import number, with_ci
from hiera_dspy.records import Pair


def argmax(dists) -> list[str]:
    return [max(d, key=d.get) for d in dists]


def table(args) -> dict:
    """Every row (see the module doc) from the caches: the probe's vectors must all be there."""
    from bench.learning import cache_filter
    from bench.probe_ablation import VARIANTS, cached_vectors, model_format, prompts_for, timing_of
    from hiera_dspy.methods.probe import Probe, grouped_folds
    from hiera_dspy.signals import RelevanceScorer
    from hiera_dspy.signals.features import resolve_embedder
    from hiera_dspy.signals.stacking import Stacker

    dataset = load_dataset("msrd")
    labels = list(dataset.scheme.labels)
    train, dev = list(dataset.split("train")), list(dataset.split("dev"))
    held = heldout_pairs(dataset, args.queries, args.seed)
    gold = [p.label for p in held]
    fmt = model_format(dataset.scheme.labels)
    extra = probe_pool_pairs(dataset, args.probe_pool) if args.probe_pool else []
    x = {name: cached_vectors(prompts_for(fmt, pairs, args.variant))
         for name, pairs in (("train", train), ("dev", dev), ("held", held), ("extra", extra)) if pairs}
    missing = [k for k, v in x.items() if v is None and k != "dev"]  # without dev: no rows that learn on it
    if missing:
        raise SystemExit(f"not every hidden state of {args.variant} is cached for: {', '.join(missing)}; run "
                         f"bench/probe_ablation.py embed --split ... --variant {args.variant} under the model lock")
    timing = timing_of(Path(args.timing), args.variant, "heldout")
    embedder = resolve_embedder(args.embedder)
    rows: list[dict] = []
    fit_cpu: list[float] = []
    pool_options = {**POOL_OPTIONS, **dict(o.split("=", 1) for o in args.pool_set or [])}

    def scorer_fit(pairs, **options):
        start, cpu = time.perf_counter(), time.process_time()
        scorer = RelevanceScorer(dataset.scheme, embedder=embedder, **options).fit(pairs)
        fit_cpu.append(time.process_time() - cpu)
        return scorer, time.perf_counter() - start

    def scored(scorer, pairs):
        start = time.perf_counter()
        dists = scorer.predict_proba_many(pairs)
        return dists, (time.perf_counter() - start) / max(1, len(pairs))

    # embed-lr 300, the reference
    s300, fit300 = scorer_fit(train)
    d300, s_pair300 = scored(s300, held)
    reference = argmax(d300)
    rows.append(metrics_row("embed-lr 300", gold, reference, reference, labels, train_pairs=len(train),
                            fit_s=fit300, s_per_pair=s_pair300))

    # the shipped probe methods, fitted on the 300 train pairs (states from the cache)
    probe300 = Probe(labels, args.probe_C).fit(x["train"], [p.label for p in train])
    p300 = [probe300.predict_proba(v) for v in x["held"]]
    rows.append(metrics_row("llm-probe 300", gold, argmax(p300), reference, labels, train_pairs=len(train),
                            s_per_pair=timing.get("wall_s_per_pair"), cpu_s_per_pair=timing.get("cpu_s_per_pair")))
    print("rows so far: embed-lr 300, llm-probe 300", file=sys.stderr)
    folds = grouped_folds(train, 5)
    scorer_oof, probe_oof = [None] * len(train), [None] * len(train)
    for tr, te in folds:
        heldq = {train[i].query_id for i in te}
        fold_scorer = RelevanceScorer(dataset.scheme, embedder=embedder).fit(
            [p for p in train if p.query_id not in heldq])
        for i, d in zip(te, fold_scorer.predict_proba_many([train[i] for i in te])):
            scorer_oof[i] = d
        fold_probe = Probe(labels, args.probe_C).fit(x["train"][tr], [train[i].label for i in tr])
        for i in te:
            probe_oof[i] = fold_probe.predict_proba(x["train"][i])
    stack300 = Stacker(labels).fit(scorer_oof, probe_oof, [p.label for p in train])
    st300 = [stack300.predict_proba(s, p) for s, p in zip(d300, p300)]
    rows.append(metrics_row("probe-stacked 300", gold, argmax(st300), reference, labels, train_pairs=len(train),
                            s_per_pair=timing.get("wall_s_per_pair"), cpu_s_per_pair=timing.get("cpu_s_per_pair")))

    # the pool scorer: the pool minus the held-out and dev queries (dev is never in the pool split); --pool-limit 0:
    # none, and the stacks below use embed-lr 300 (honest on dev and on the held-out pairs too)
    heldq = {p.query_id for p in held}
    pool: list[Pair] = []
    spool, dpool, kind = s300, d300, "300"
    if args.pool_limit != 0:
        pool = [p for p in dataset.split("pool") if p.query_id not in heldq]
        if args.cached_only:
            pool = cache_filter(embedder)(pool)
        if args.pool_limit and len(pool) > args.pool_limit:
            pool = [pool[i] for i in sorted(random.Random(args.seed).sample(range(len(pool)), args.pool_limit))]
        if args.pool_scorer:  # fitted elsewhere on these pool pairs (bench/pool_select.py): loaded, not refitted
            side = json.loads(Path(args.pool_scorer).with_suffix(".fit.json").read_text())
            if side["pairs"] != len(pool):
                raise SystemExit(f"{args.pool_scorer} was fitted on {side['pairs']} pairs, not these {len(pool)}")
            spool, fitpool = RelevanceScorer.load(args.pool_scorer, embedder=embedder), side["fit_s"]
            pool_options, peak = side["options"], side["peak_rss_mb"]
            fit_cpu.append(side["fit_cpu_s"])
        else:
            spool, fitpool = scorer_fit(pool, **pool_options)
            peak = peak_rss_mb()
        dpool, s_pairpool = scored(spool, held)
        kind = "pool"
        rows.append(metrics_row(f"embed-lr pool ({', '.join(f'{k}={v}' for k, v in pool_options.items())})", gold,
                                argmax(dpool), reference, labels, train_pairs=len(pool), fit_s=fitpool,
                                fit_cpu_s=fit_cpu[-1], peak_rss_mb=peak, s_per_pair=s_pairpool))
    scorer_pairs = len(pool) or len(train)

    # probe-stacked pool: probe on train + dev; stacker on dev (pool scorer honest there, probe out-of-fold)
    timed = {"s_per_pair": timing.get("wall_s_per_pair"), "cpu_s_per_pair": timing.get("cpu_s_per_pair")}
    # --probe-pool N: the probe also learns from 2N labelled pool pairs of other queries (never the held-out ones)
    first, first_x = (train + extra, np.vstack([x["train"], x["extra"]])) if extra else (train, x["train"])
    base, base_x = (first + dev, np.vstack([first_x, x["dev"]])) if x["dev"] is not None else (first, first_x)
    dev_pool, dev_probe, dev_gold = [], [], []
    if x["dev"] is not None:
        dev_pool, _ = scored(spool, dev)
        dev_probe, dev_gold = [None] * len(dev), [p.label for p in dev]
        for tr, te in grouped_folds(dev, 5):
            fold_probe = Probe(labels, args.probe_C).fit(
                np.vstack([first_x, x["dev"][tr]]), [p.label for p in first] + [dev[i].label for i in tr])
            for i in te:
                dev_probe[i] = fold_probe.predict_proba(x["dev"][i])
        stackpool = Stacker(labels).fit(dev_pool, dev_probe, dev_gold)
        probe600 = Probe(labels, args.probe_C).fit(base_x, [p.label for p in base])
        p600 = [probe600.predict_proba(v) for v in x["held"]]
        rows.append(metrics_row(f"llm-probe {len(base)} (train + dev{' + pool' if extra else ''})", gold, argmax(p600), reference, labels,
                                train_pairs=len(base), **timed))
        stp = [stackpool.predict_proba(s, p) for s, p in zip(dpool, p600)]
        rows.append(metrics_row(f"probe-stacked {kind} (scorer {kind} + probe {len(base)}, stacker on dev)", gold,
                                argmax(stp), reference, labels, train_pairs=scorer_pairs, **timed))

    # + the other half of the held-out queries (cross-fitted over 2 query-grouped folds)
    cross_probe, cross_stack = [None] * len(held), [None] * len(held)
    for tr, te in grouped_folds(held, 2):
        probe = Probe(labels, args.probe_C).fit(np.vstack([base_x, x["held"][tr]]),
                                                [p.label for p in base] + [held[i].label for i in tr])
        for i in te:
            cross_probe[i] = probe.predict_proba(x["held"][i])
        # the stacker learns on dev (when there) + the training half, each with out-of-fold probe distributions
        half = [held[i] for i in tr]
        half_probe = [None] * len(half)
        for itr, ite in grouped_folds(half, 5):
            p = Probe(labels, args.probe_C).fit(np.vstack([base_x, x["held"][[tr[j] for j in itr]]]),
                                                [q.label for q in base] + [half[j].label for j in itr])
            for j in ite:
                half_probe[j] = p.predict_proba(x["held"][tr[j]])
        stacker = Stacker(labels).fit(dev_pool + [dpool[i] for i in tr], dev_probe + half_probe,
                                      dev_gold + [p.label for p in half])
        for i in te:
            cross_stack[i] = stacker.predict_proba(dpool[i], cross_probe[i])
    n_cross = len(base) + len(held) // 2
    rows.append(metrics_row(f"llm-probe {n_cross} (+ held-out half, cross-fitted)", gold, argmax(cross_probe),
                            reference, labels, train_pairs=n_cross, **timed))
    rows.append(metrics_row(f"probe-stacked {kind}, probe {n_cross} (+ held-out half, cross-fitted)", gold,
                            argmax(cross_stack), reference, labels, train_pairs=scorer_pairs, **timed))

    result = {"variant": args.variant, "question": VARIANTS[args.variant][0], "text_chars": VARIANTS[args.variant][1],
              "n": len(held), "queries": len(heldq), "relevant": sum(g == labels[-1] for g in gold),
              "seed": args.seed, "embedder": getattr(embedder, "model_id", None), "pool_pairs": len(pool),
              "timing": timing, "rows": rows}
    return write_result(Path(args.out), "probe_heldout", result, markdown(result))


def markdown(result: dict) -> str:
    t = result["timing"]
    lines = [f"### Held-out MSRD pool pairs: {result['n']} pairs of {result['queries']} fresh queries "
             f"({result['relevant']} relevant), seed {result['seed']}; probe prompt `{result['variant']}`; embedder "
             f"{result['embedder']}; pool scorer on {result['pool_pairs']} pairs", "",
             "| judge | n | kappa [95% CI] | accuracy | McNemar vs embed-lr 300 (b, c, p) | train pairs | s/pair |",
             "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        s = r.get("s_per_pair")
        lines.append(f"| {r['name']} | {r['n']} | {with_ci(r['kappa'], r['kappa_ci'])} | {number(r['accuracy'])} | "
                     f"{mcnemar_cell(r)} | {r.get('train_pairs', '-')} | {'-' if s is None else f'{s:.3f}'} |")
    for r in result["rows"]:
        if "fit_cpu_s" in r:
            lines += ["", f"{r['name']}: fitted on {r['train_pairs']} pairs in {r['fit_s']:.0f} s wall, "
                          f"{r['fit_cpu_s']:.0f} CPU s, peak memory of the process {r['peak_rss_mb']:.0f} MB."]
    if t:
        lines += ["", f"The probe's hidden states of these {t['timed_pairs']} pairs, uncached, "
                      f"{t['tokens_per_pair'] or 0:.0f} prompt tokens a pair: {t['wall_s_per_pair']:.2f} s a pair wall "
                      f"(load average {t['load']:.1f}), {t['cpu_s_per_pair']:.2f} CPU-s a pair (2 threads)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("pairs", "table"):
        p = sub.add_parser(name)
        p.add_argument("--queries", type=int, default=200)
        p.add_argument("--seed", type=int, default=21)
    t = sub.choices["table"]
    t.add_argument("--variant", required=True)
    t.add_argument("--embedder", default="auto")
    t.add_argument("--probe-C", type=float, default=0.01)
    t.add_argument("--cached-only", action="store_true", help="the pool scorer: pairs whose texts are cached")
    t.add_argument("--pool-limit", type=int, help="the pool scorer on a seeded sample of N pool pairs (0: no pool scorer)")
    t.add_argument("--pool-set", action="append", metavar="KEY=VALUE",
                   help=f"the pool scorer's options over {POOL_OPTIONS} (e.g. features=query+fields+prior)")
    t.add_argument("--pool-scorer", help="a pool scorer JSON fitted on the same pool pairs (bench/pool_select.py)")
    t.add_argument("--probe-pool", type=int, default=0, metavar="N",
                   help="the probe also learns from one relevant and one irrelevant pair of N other pool queries")
    t.add_argument("--timing", default=str(OUT), help="folder of probe_ablation_timing.jsonl")
    t.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    if args.command == "pairs":
        dataset = load_dataset("msrd")
        held = heldout_pairs(dataset, args.queries, args.seed)
        labels = dataset.scheme.labels
        print(f"{len(held)} pairs of {len({p.query_id for p in held})} queries, "
              f"{sum(p.label == labels[-1] for p in held)} relevant")
        return held
    return table(args)


if __name__ == "__main__":
    main()
