"""A MIPROv2 `light` compile with enough data to matter (issue 15 item 4), resumable, with before/after on full dev.

    python -m bench.compile_local                                   # zero-shot+probs, light search, all 300/300 pairs
    python -m bench.compile_local --method reasoning+probs          # another single-call configuration
    python -m bench.compile_local --limit 8 --lm fake               # a pipeline check in seconds (first 8/8 pairs)

Runs `optimize.compile --dataset msrd --method METHOD --optimizer mipro --budget light-full --out ART`: light's search
(4 instruction candidates, 8 trials, minibatches of 20, up to 2 demos) proposing from every train pair and validating on
every dev pair, with the uncompiled ("before") and compiled ("after") programs judged on the whole dev split (kappa with
its bootstrap CI and the embed-lr reference line come from optimize.compile). DSPy's response cache for the run lives
in OUT/compile-local/METHOD/dspy-cache (`--cache shared`: DSPy's usual cache, e.g. one local_probs.py filled), so a
compile killed at any point and started again replays its finished LM calls from the cache and re-judges nothing the
run store holds. Writes OUT/compile_local.md and OUT/compile_local.json (numbers and wall time) and the artifact
(default OUT/compile-local/METHOD/METHOD.json; judge any labelled file with `eval.run --judge ART`).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import dspy

BUDGET = "light-full"


def use_cache(folder: Path | None) -> None:
    """DSPy's response cache on disk in `folder` (None: leave DSPy's configured cache as it is)."""
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(folder))


def budget_for(limit: int | None) -> str:
    """The budget name to compile with: light-full, or (with --limit) light-full capped to N train and N dev pairs."""
    from hiera_dspy.jobs.optimizers import BUDGETS

    if not limit:
        return BUDGET
    name = f"{BUDGET}-first{limit}"
    BUDGETS[name] = replace(BUDGETS[BUDGET], n_train=limit, n_dev=limit)
    return name


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--method", default="zero-shot+probs", help="single-call method to compile (default "
                   "zero-shot+probs)")
    p.add_argument("--dataset", default="msrd")
    p.add_argument("--optimizer", default="mipro")
    p.add_argument("--limit", type=int, help="first N train and N dev pairs only (pipeline checks and tests)")
    p.add_argument("--cache", default="run", help="run (default: a cache folder of this bench run) | shared")
    p.add_argument("--lm", help="model (default: the embedded local model)")
    p.add_argument("--api-base")
    p.add_argument("--out", help="artifact path (default OUT/compile-local/METHOD/METHOD.json)")
    p.add_argument("--out-dir", default="bench/results", help="results folder (default bench/results)")
    args, extra = p.parse_known_args(argv)
    import optimize.compile as compile_cli

    work = Path(args.out_dir) / "compile-local" / args.method
    use_cache(None if args.cache == "shared" else work / "dspy-cache")
    art = Path(args.out or work / f"{args.method}.json")
    budget = budget_for(args.limit)
    command = ["--dataset", args.dataset, "--method", args.method, "--optimizer", args.optimizer, "--budget", budget,
               "--out", str(art), *(["--lm", args.lm] if args.lm else []),
               *(["--api-base", args.api_base] if args.api_base else []), *extra]
    start = time.perf_counter()
    metrics = compile_cli.main(command)
    wall = time.perf_counter() - start
    record = {"command": "python -m optimize.compile " + " ".join(command), "artifact": str(art),
              "wall_seconds": round(wall, 1), "n_train": metrics["n_train"], "n_dev": metrics["n_dev"],
              "before": _phase(metrics["before"]), "after": _phase(metrics["after"])}
    out = Path(args.out_dir)
    (out / "compile_local.json").write_text(json.dumps(record, indent=1) + "\n")
    text = [f"# MIPROv2 light compile of {args.method} ({metrics['n_train']} train / {metrics['n_dev']} dev pairs)", "",
            f"`{record['command']}`", "", f"Wall time {wall / 60:.1f} min (a resumed compile counts only this run's "
            "part).", "", "| phase | n | kappa | summary |", "|---|---|---|---|"]
    for phase in ("before", "after"):
        m = record[phase]
        if m:
            text.append(f"| {phase} | {m['n']} | {m['kappa']} | {m['summary']} |")
    (out / "compile_local.md").write_text("\n".join(text) + "\n")
    print("\n".join(text))
    return record


def _phase(metrics: dict | None) -> dict | None:
    """The numbers of one phase (before/after) worth recording."""
    if not metrics:
        return None
    keys = ("n", "kappa", "accuracy", "macro_f1", "errors", "run_id", "summary")
    return {k: metrics.get(k) for k in keys}


if __name__ == "__main__":
    main()
