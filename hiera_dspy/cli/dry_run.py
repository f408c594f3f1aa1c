"""The `--dry-run` flags of the judging CLIs: estimate a run's tokens and money instead of judging
(`hiera_dspy.jobs.preparing.forecast_cost`)."""

from __future__ import annotations

import argparse

from hiera_dspy.runs.cost import ASSUMED_OUTPUT_TOKENS


def add_dry_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The shared `--dry-run` flags (eval.run, eval.ablate, eval.label)."""
    g = parser.add_argument_group("cost estimate (nothing is sent)")
    g.add_argument("--dry-run", action="store_true",
                   help="render the real prompts of a sample, count tokens, print tokens and money for the split")
    g.add_argument("--dry-run-sample", type=int, default=20, help="pairs rendered per path (default 20)")
    g.add_argument("--assume-delegation", type=float,
                   help="delegation rate to assume (default: a pilot run's rate in the store, else 0.5)")
    g.add_argument("--assume-output-tokens", type=int,
                   help=f"output tokens per LM call (default: a pilot's, else {ASSUMED_OUTPUT_TOKENS})")
