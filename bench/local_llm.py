"""Benchmark the embedded local model on the bundled MSRD dev split: zero-shot judge, uncompiled HIERA, compiled HIERA.

    python -m bench.local_llm --limit 30 [--budgets smoke,light] [--lm local] [--out bench/results/local_llm.md]

Every configuration is judged on the same first N dev pairs through the resumable run store (an interrupted benchmark
resumes). Writes one markdown table (accuracy, macro-F1, kappa, seconds and tokens per judgment) and prints it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from eval import run as eval_run
from hiera_dspy.metrics.format import number
from optimize import compile as compile_cli


def row(name: str, m: dict, extra: str = "") -> str:
    f = number
    return (f"| {name} | {m['n']} | {f(m['accuracy'])} | {f(m['macro_f1'])} | {f(m['kappa'])} | "
            f"{f(m['seconds_per_judgment'], '.1f')} | {f(m['seconds_p50'], '.1f')} | {f(m['tokens_per_judgment'], '.0f')} | "
            f"{f(m['lm_calls_per_judgment'], '.1f')} | {f(m['delegation_rate'], '.2f')} | {m['errors']} | {extra} |")


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", type=int, default=30)
    p.add_argument("--budgets", default="smoke", help="compile budgets to measure, comma-separated")
    p.add_argument("--baseline", default="zero-shot", help="the flat judge to compare with")
    p.add_argument("--lm", default="local")
    p.add_argument("--knowledge", default="catalog")
    p.add_argument("--out", default="bench/results/local_llm.md")
    args = p.parse_args(argv)
    common = ["--dataset", "msrd", "--lm", args.lm, "--knowledge", args.knowledge]
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
