"""Judge a dataset split with a method or a compiled judge; every judgment goes to the run store as it finishes.

    python -m eval.run --dataset msrd --split dev --judge artifacts/msrd/hiera.json --out runs/msrd-dev
    python -m eval.run --dataset msrd --split dev --method zero-shot --limit 30

A run interrupted at any point and started again (same command, or the same --run-id) re-judges nothing.
Writes OUT/metrics.json, OUT/predictions.jsonl and OUT/config.json; metrics are scikit-learn's over the whole split,
with the field's agreement measures (binary kappa at the scheme's cut, Krippendorff's alpha, quadratic kappa, their
bootstrap CIs, the confusion) and the true time a pair (`wall_ms_per_pair`: the command's wall time over its pairs).
`--known FILE` gives a judgment list of the same queries to a judge that reads known judgments (metrics.json `known`;
docs/labelling.md#known-judgments).
"""

from __future__ import annotations

import argparse
import sys

from hiera_dspy.api import JudgeRequest, judge
from hiera_dspy.cli.options import (
    add_data_arguments,
    add_judging_arguments,
    add_known_arguments,
    cli_main,
    exit_on_error_rate,
    print_metrics,
    raise_if_stopped,
)
from hiera_dspy.cli.requests import data_source, judging, known_list
from hiera_dspy.runs.cost import format_forecast


def parser() -> argparse.ArgumentParser:
    """The command-line options of eval.run."""
    p = argparse.ArgumentParser(prog="python -m eval.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(p)
    p.add_argument("--split", help="train | dev | eval | all (default: the dataset's default split)")
    p.add_argument("--out", help="output folder (default: runs/<run id>)")
    add_judging_arguments(p)
    add_known_arguments(p)
    return p


def main(argv: list[str] | None = None) -> dict:
    """Judge one split with one method, write metrics.json and predictions.jsonl; return the metrics (the estimate on
    a dry run)."""
    args = parser().parse_args(argv)
    judged = judge(JudgeRequest(data_source(args), judging(args), split=args.split, out=args.out,
                                known=known_list(args)))
    if judged.estimate is not None:
        print(format_forecast(judged.estimate))
        return judged.estimate
    metrics = judged.metrics
    print_metrics(judged.method, metrics)
    print(judged.summary)
    if metrics["errors"]:
        print(f"{metrics['errors']} judgments ended in an error; rerun with --retry-errors to retry only those",
              file=sys.stderr)
    print(f"wrote {judged.out}/metrics.json and {judged.out}/predictions.jsonl (run id {judged.run_id}, store "
          f"{judged.store})")
    raise_if_stopped(judged.rows)
    exit_on_error_rate({judged.run_id: metrics}, args.max_error_rate)
    return metrics


if __name__ == "__main__":
    cli_main(main)
