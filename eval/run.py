"""Judge a dataset split with a method or a compiled judge; every judgment goes to the run store as it finishes.

    python -m eval.run --dataset msrd --split dev --judge artifacts/msrd/hiera.json --out runs/msrd-dev
    python -m eval.run --dataset msrd --split dev --method zero-shot --limit 30

A run interrupted at any point and started again (same command, or the same --run-id) re-judges nothing.
Writes OUT/metrics.json, OUT/predictions.jsonl and OUT/config.json; metrics are scikit-learn's over the whole split,
with the field's agreement measures (binary kappa at the scheme's cut, Krippendorff's alpha, quadratic kappa, their
bootstrap CIs, the confusion) and the true time a pair (`wall_ms_per_pair`: the command's wall time over its pairs).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time

from hiera_dspy.cli.options import (
    add_data_arguments,
    add_judging_arguments,
    begin_run,
    cli_main,
    exit_on_error_rate,
    load_data,
    open_store,
    output_folder,
    print_metrics,
    progress_display,
    raise_if_stopped,
    runs_dir,
    skipped_rows,
)
from hiera_dspy.cli.dry_run import dry_run
from hiera_dspy.cli.engines import options_from_args
from hiera_dspy.cli.program import build_program
from hiera_dspy.engines import Job, judge
from hiera_dspy.methods.learning import prepare_fresh
from hiera_dspy.metrics.reference import ReferenceScorer, agreement_cis, summary_line
from hiera_dspy.runs.outputs import write_outputs
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.runs.tally import metrics_from_rows, wall_clock


def parser() -> argparse.ArgumentParser:
    """The command-line options of eval.run."""
    p = argparse.ArgumentParser(prog="python -m eval.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(p)
    p.add_argument("--split", help="train | dev | eval | all (default: the dataset's default split)")
    p.add_argument("--out", help="output folder (default: runs/<run id>)")
    add_judging_arguments(p)
    return p


def main(argv: list[str] | None = None) -> dict:
    """Judge one split with one method, write metrics.json and predictions.jsonl; return the metrics (the estimate on
    a dry run)."""
    started = time.time()  # the true time a pair: the whole command's wall time over the pairs it judged
    args = parser().parse_args(argv)
    if args.out:
        output_folder(args.out)
    store = open_store(args)
    dataset = load_data(args)
    pairs = dataset.split(args.split, args.limit)
    program, lms, knowledge = build_program(args, dataset)
    split = args.split or dataset.default_split
    if not args.judge:  # a fresh program that learns from data (a cascade's tau: part of the run's identity)
        prepare_fresh(program, dataset, split)
    spec = RunSpec.judging(program, dataset=args.dataset, split=split, lms=lms, knowledge=knowledge.name,
                           judge=args.judge)
    # --limit is not part of the id: a larger limit later resumes the same run and judges only the new pairs
    identity = {**spec.identity(), "limit": args.limit}
    run_id = args.run_id or spec.run_id
    if args.dry_run:  # nothing is sent and no run starts; a pilot of this run in the store gives the delegation rate
        return dry_run(program, pairs, lms, args, knowledge.name, store.rows(run_id))
    begin_run(store, run_id, identity, args, may_differ=("limit",))
    count = len(pairs) if isinstance(pairs, list) else "all the"  # a large JSONL split is read lazily
    print(f"run {run_id}: {count} pairs of {args.dataset} [{split}] with {program.method} "
          f"(LMs {spec.lms}, knowledge {knowledge.name})", file=sys.stderr)
    recipe = functools.partial(replica, list(sys.argv[1:] if argv is None else argv))  # --engine ray's replicas
    rows = judge(args.engine, Job(program, pairs, store, run_id, lms, retry_errors=args.retry_errors,
                                  progress=progress_display(args, lms, program.method),
                                  options=options_from_args(args), factory=recipe))
    labels, cut = list(dataset.scheme.labels), dataset.scheme.binary_from
    queries = {p.id: p.query_id for p in pairs} if isinstance(pairs, list) else None  # a lazy split: by pair only
    metrics = (metrics_from_rows(rows, labels, cut) | wall_clock(rows, started)
               | agreement_cis(rows, labels, cut, queries))
    metrics["run_id"] = run_id
    metrics["skipped_rows"] = skipped_rows(dataset)
    out = output_folder(args.out or runs_dir() / run_id)
    write_outputs(out, {**identity, "skipped_rows": metrics["skipped_rows"]}, metrics, rows)
    print_metrics(program.method, metrics)
    print(summary_line(rows, labels, ReferenceScorer(dataset), pairs, program.method, cut))
    if metrics["errors"]:
        print(f"{metrics['errors']} judgments ended in an error; rerun with --retry-errors to retry only those",
              file=sys.stderr)
    print(f"wrote {out}/metrics.json and {out}/predictions.jsonl (run id {run_id}, store {store.path})")
    raise_if_stopped(rows)
    exit_on_error_rate({run_id: metrics}, args.max_error_rate)
    return metrics


def replica(argv: list[str], api_base: str | None):
    """The program of this command line with another --api-base (built inside each Ray actor)."""
    args = parser().parse_args(argv)
    args.api_base = api_base
    dataset = load_data(args)
    program, _, _ = build_program(args, dataset)
    if not args.judge:
        prepare_fresh(program, dataset, args.split or dataset.default_split)
    return program


if __name__ == "__main__":
    cli_main(main)
