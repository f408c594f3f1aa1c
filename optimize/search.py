"""Search HIERA's graph configuration with optuna: quality (dev kappa) against cost (tokens per judgment).

    python -m optimize.search --dataset msrd --trials 20 --budget light --out runs/search-msrd
    python -m optimize.compile --dataset msrd --config runs/search-msrd/best.json    # compile the chosen graph

Space: specialists (none, query, item, query+item), Relation Analyzer on/off, knowledge (none, the dataset's catalog,
web when TAVILY_API_KEY is set; a specific --knowledge restricts it to none or that source) with k in {1, 3, 5},
bootstrapped demos per predictor {0, 1, 2} (BootstrapFewShot on the budget's train slice), delegation (triage, always).
A seeded multi-objective TPE study (maximize kappa, minimize tokens) gives the Pareto front. Each trial is judged
through the run store, so a repeated configuration (or a rerun with the same seed) judges nothing new.
Writes OUT/search.json (all trials), OUT/pareto.md (the front) and OUT/best.json (highest-kappa Pareto trial).
The search itself is `hiera_dspy.jobs.searching`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hiera_dspy.cli.lms import add_lm_arguments, lms_from_args
from hiera_dspy.cli.options import (
    add_data_arguments,
    add_run_arguments,
    cli_main,
    exit_on_error_rate,
    open_store,
    positive_int,
    runs_dir,
)
from hiera_dspy.cli.requests import data_source
from hiera_dspy.jobs.preparing import load_data
from hiera_dspy.jobs.searching import SearchSettings, check_splits, search, write_results


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m optimize.search`."""
    p = argparse.ArgumentParser(prog="python -m optimize.search", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(p)
    p.add_argument("--trials", type=positive_int, required=True, help="number of optuna trials")
    p.add_argument("--budget", default="smoke", choices=["smoke", "light"], help="train/dev slice sizes")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", help="output folder (default: runs/search-<dataset>)")
    add_run_arguments(p, run_id=False)  # --store, --wait, --max-error-rate: each trial is its own run
    add_lm_arguments(p)
    return p


def main(argv: list[str] | None = None) -> dict:
    """Search HIERA graph configurations with optuna (kappa up, tokens down); returns the Pareto front."""
    args = parser().parse_args(argv)
    dataset = load_data(data_source(args))
    check_splits(dataset, args.dataset)
    settings = SearchSettings(args.dataset, args.budget, args.seed, args.knowledge, args.threads,
                              getattr(args, "wait", False), getattr(args, "verbose", False))
    trials, front, n_dev = search(settings, dataset, lms_from_args(args), open_store(args), args.trials)
    out = Path(args.out or runs_dir() / f"search-{args.dataset.replace(':', '_').replace('/', '_')}")
    spec = write_results(out, trials, front)
    print("Pareto front (kappa, tokens/judgment):")
    for t in front:
        print(f"  trial {t['number']}: kappa {t['kappa']:.3f}, {t['tokens_per_judgment']:.0f} tokens, "
              f"demos {t['params']['demos']}, knowledge {t['knowledge_source']}, {t['config']}")
    print(f"wrote {out}/search.json, pareto.md, best.json (compile it: python -m optimize.compile --dataset "
          f"{args.dataset} --config {out}/best.json)")
    exit_on_error_rate({f"trial {t['number']} (run {t['run_id']})": {"errors": t["errors"], "pairs": n_dev}
                        for t in trials if t.get("errors") is not None}, args.max_error_rate)
    return {"trials": trials, "front": front, "best": spec}


if __name__ == "__main__":
    cli_main(main)
