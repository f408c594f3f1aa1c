"""Benchmark the embedded local model on the bundled MSRD dev split: zero-shot judge, uncompiled HIERA, compiled HIERA;
or (`--votes 1,5`) the flat judge with a vote over N samples against one.

    python -m bench.local_llm --limit 30 [--budgets smoke,light] [--lm local] [--out bench/results/local_llm.md]
    python -m bench.local_llm --votes 1,5 --limit 100 --step 10 [--temperature 0.7] [--out bench/results/votes.md]
    python -m bench.local_llm --lm openai/MODEL --api-base http://127.0.0.1:8000/v1 ...      # a served model

Every configuration is judged on the same first N dev pairs through the resumable run store (an interrupted benchmark
resumes). Writes one markdown table (accuracy, macro-F1, kappa, seconds and tokens per judgment) and prints it.

`--votes` runs `eval.run --method BASELINE --samples N` for each N on the first `--step` pairs, then the next
`--step`, up to `--limit` (each a resume of the same runs), so that wherever it is stopped every N has judged the
same pairs; after each step it writes the table: kappa with its 95% CI, accuracy, the expected calibration error
(ECE, 10 bins) of the confidence (the vote share of the label, `hiera_dspy.review.confidence`; one sample has
no distribution, so its confidence is 1), LM calls, tokens and seconds per judgment.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import expected_calibration_error
from eval import run as eval_run
from hiera_dspy.jobs.preparing import open_store
from hiera_dspy.metrics.numbers import number
from hiera_dspy.review.confidence import confidence
from optimize import compile as compile_cli


def row(name: str, m: dict, extra: str = "") -> str:
    f = number
    return (f"| {name} | {m['n']} | {f(m['accuracy'])} | {f(m['macro_f1'])} | {f(m['kappa'])} | "
            f"{f(m['seconds_per_judgment'], '.1f')} | {f(m['seconds_p50'], '.1f')} | {f(m['tokens_per_judgment'], '.0f')} | "
            f"{f(m['lm_calls_per_judgment'], '.1f')} | {f(m['delegation_rate'], '.2f')} | {m['errors']} | {extra} |")


def calibration(store: str | None, run_id: str, labels: list[str]) -> tuple[float, float, int]:
    """(ECE of the confidence, mean confidence, pairs) over a run's labelled rows: the confidence of the label (1.0
    when the judgment has none: one sample is all its distribution) against whether it is the gold label."""
    probs, gold = [], []
    for row in open_store(store).rows(run_id):
        if row.get("error") or not row.get("label") or row.get("gold") not in labels:
            continue
        conf = confidence(row).value
        conf = 1.0 if conf is None else conf
        p = np.full(len(labels), (1.0 - conf) / (len(labels) - 1))
        p[labels.index(row["label"])] = conf
        probs.append(p)
        gold.append(labels.index(row["gold"]))
    if not probs:
        return float("nan"), float("nan"), 0
    probs_a = np.array(probs)
    return expected_calibration_error(probs_a, np.array(gold)), float(probs_a.max(axis=1).mean()), len(probs)


def votes(args, common: list[str]) -> str:
    """The --votes table: the flat judge at each sample count, grown `--step` pairs at a time."""
    counts = [int(n) for n in args.votes.split(",")]
    table = ""
    for limit in range(args.step, args.limit + args.step, args.step):
        limit = min(limit, args.limit)
        lines = ["| samples | n | kappa [95% CI] | accuracy | ECE | mean confidence | LM calls | tokens/judgment | "
                 "s/judgment | errors |", "|" + "---|" * 10]
        for n in counts:
            extra = ["--samples", str(n)] + (["--temperature", str(args.temperature)]
                                             if n > 1 and args.temperature is not None else [])
            m = eval_run.main([*common, "--split", "dev", "--method", args.baseline, "--limit", str(limit), *extra])
            ece, mean_conf, _ = calibration(args.store, m["run_id"], m["labels"])
            ci = m.get("kappa_ci") or (None, None)
            f = number
            lines.append(f"| {n} | {m['n']} | {f(m['kappa'])} [{f(ci[0])}, {f(ci[1])}] | {f(m['accuracy'])} | "
                         f"{ece:.3f} | {mean_conf:.3f} | {f(m['lm_calls_per_judgment'], '.1f')} | "
                         f"{f(m['tokens_per_judgment'], '.0f')} | {f(m['seconds_per_judgment'], '.1f')} | "
                         f"{m['errors']} |")
        table = "\n".join(lines)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(f"# Votes: {args.baseline} on the first {limit} MSRD dev pairs, LM {args.lm}\n\n{table}\n")
        print(table, flush=True)
    return table


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", type=int, default=30)
    p.add_argument("--budgets", default="smoke", help="compile budgets to measure, comma-separated")
    p.add_argument("--baseline", default="zero-shot", help="the flat judge to compare with")
    p.add_argument("--lm", default="local")
    p.add_argument("--api-base", help="the model's endpoint (an OpenAI-compatible server; default: the provider's)")
    p.add_argument("--knowledge", default="catalog")
    p.add_argument("--out", default=None, help="default: bench/results/local_llm.md (--votes: bench/results/votes.md)")
    p.add_argument("--votes", help="sample counts to compare, e.g. 1,5: the flat judge with a vote over N samples")
    p.add_argument("--step", type=int, default=10, help="--votes: pairs added per round (default 10)")
    p.add_argument("--temperature", type=float, help="--votes: the samples' temperature (default: the product's)")
    p.add_argument("--store", help="run store (default: the product's)")
    args = p.parse_args(argv)
    common = ["--dataset", "msrd", "--lm", args.lm, "--knowledge", args.knowledge]
    if args.store:
        common += ["--store", args.store]
    if args.api_base:
        common += ["--api-base", args.api_base]
    if args.votes:
        args.out = args.out or "bench/results/votes.md"
        return votes(args, common)
    args.out = args.out or "bench/results/local_llm.md"
    lines = ["| configuration | n | accuracy | macro-F1 | kappa | s/judgment | s p50 | tokens/judgment | LM calls | "
             "delegation | errors | notes |", "|" + "---|" * 12]
    for method in (args.baseline, "hiera"):
        m = eval_run.main([*common, "--split", "dev", "--method", method, "--limit", str(args.limit)])
        lines.append(row(f"{method} (uncompiled)", m))
    for budget in filter(None, args.budgets.split(",")):
        artifact = Path("artifacts/bench") / f"hiera-{budget}.json"
        started = time.perf_counter()
        compiled = compile_cli.main([*common, "--budget", budget, "--out", str(artifact), "--skip-before"])
        minutes = (time.perf_counter() - started) / 60
        m = eval_run.main([*common, "--split", "dev", "--judge", str(artifact), "--limit", str(args.limit)])
        lines.append(row(f"hiera compiled ({budget})", m,
                         f"compile {minutes:.1f} min, optimizer {compiled['optimizer']}, {compiled['n_train']} train"))
    table = "\n".join(lines)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"# Local model on MSRD dev (first {args.limit} pairs), LM {args.lm}\n\n{table}\n")
    print(table)
    print(f"wrote {out}", file=sys.stderr)
    return table


if __name__ == "__main__":
    main()
