"""The labelling CLIs' shared command (eval.label, eval.holes): their flags and `label_pairs`, which judges the pairs
as a labelling run (`hiera_dspy.labelling.run`) from the parsed flags."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from hiera_dspy.cli.dry_run import dry_run
from hiera_dspy.cli.engines import options_from_args
from hiera_dspy.cli.options import add_judging_arguments, begin_run, open_store, progress_display
from hiera_dspy.cli.program import build_program
from hiera_dspy.conclude.filled_benchmark import MACHINE_VALUES
from hiera_dspy.data import Dataset
from hiera_dspy.engines import Job, judge
from hiera_dspy.errors import HieraError
from hiera_dspy.labelling import freshness
from hiera_dspy.labelling.draws import DEFAULT_STRATA
from hiera_dspy.labelling.exports import write_pairs_file
from hiera_dspy.labelling.run import LabellingRun
from hiera_dspy.labelling.sample import METHODS, parse_size
from hiera_dspy.methods.learning import prepare_fresh
from hiera_dspy.records import Pair
from hiera_dspy.runs.spec import RunSpec


def add_labelling_arguments(p: argparse.ArgumentParser) -> None:
    """eval.run's options for what judges and how (`hiera_dspy.cli.options.add_judging_arguments`)."""
    add_judging_arguments(p)


def add_sample_arguments(p: argparse.ArgumentParser) -> None:
    """--human-sample, --sample-seed, --sample, --strata, --ci and --machine-values."""
    g = p.add_argument_group("conclusions (prediction-powered inference; docs/conclusions.md)")
    g.add_argument("--human-sample", metavar="N|P%", type=sample_size,
                   help="draw a sample of N queries (or P%% of them; see --sample) whose every hole a person "
                        "labels; drawn once and kept in the run")
    g.add_argument("--sample-seed", type=int, default=0, help="seed of the human sample (default 0; recorded)")
    g.add_argument("--sample", default=None, choices=list(METHODS),
                   help="how the sample is drawn: random (default; uniformly) or stratified (proportionally over "
                        "--strata strata of the judge's uncertainty per query, drawn after judging); recorded")
    g.add_argument("--strata", type=int, default=None,
                   help=f"number of strata of --sample stratified (default {DEFAULT_STRATA}; recorded)")
    g.add_argument("--ci", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    g.add_argument("--machine-values", default="expected", choices=list(MACHINE_VALUES),
                   help="the machine's per-query metric: expected under the judge's label probabilities (default; "
                        "a hole without them counts its label) or from its hard labels")


def sample_size(text: str) -> str:
    """argparse type of --human-sample: the text itself when `parse_size` takes it (N >= 1 queries, or P% in
    (0, 100]); else an argparse error (exit status 2)."""
    try:
        parse_size(text)
    except HieraError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--human-sample {text!r}: ")) from None
    return text


def label_pairs(args, dataset: Dataset, pairs: Iterable[Pair], split: str, labelling: dict,
                identity_extra: dict | None = None, reuse_export: bool = False) -> LabellingRun | None:
    """Judge `pairs` (a list or a lazily read split) as a run of the store (resuming a finished part), after writing
    OUT/pairs.jsonl, with the engine of `--engine`. With `--dry-run` nothing is sent and no run starts: the cost
    estimate is printed and None returned. With `reuse_export`, a finished run whose last export was made from
    exactly this input and these rows (`freshness`) returns at once with that export's summary in `fresh`."""
    program, lms, knowledge = build_program(args, dataset)
    try:
        if not args.judge:
            prepare_fresh(program, dataset, split)
    except RuntimeError as exc:  # a learned method with no labelled pairs to learn from
        raise SystemExit(f"error: {program.method}: {exc}") from None
    spec = RunSpec.judging(program, dataset=dataset.name, split=split, lms=lms, knowledge=knowledge.name,
                           judge=args.judge, extra=identity_extra)
    identity = spec.identity()
    run_id = args.run_id or spec.run_id
    store = open_store(args)
    if args.dry_run:  # a pilot of this run in the store gives the delegation rate
        dry_run(program, pairs if isinstance(pairs, list) else list(pairs), lms, args, knowledge.name,
                store.rows(run_id))
        return None
    out = Path(labelling["out"])
    begin_run(store, run_id, {**identity, "limit": args.limit, "labelling": labelling}, args,
              may_differ=("limit", "labelling"))
    config = store.run_config(run_id)
    sig = None
    if reuse_export and not args.retry_errors:
        sig = freshness.signature(store, run_id, dataset.notes.get("source"), split, args.limit, labelling["out"])
        on_disk = all((out / name).is_file() for name in ("pairs.jsonl", "labels.jsonl", "qrels.txt"))
        if on_disk and (summary := freshness.fresh_summary(store, run_id, sig)) is not None:
            print(f"run {run_id}: every pair is judged and {config['labelling']['out']} is up to date "
                  "(nothing changed since its last export)", file=sys.stderr)
            store.release(run_id)
            return LabellingRun(run_id, store, config, [], sig, summary)
    count = freshness.pairs_written(store, run_id, dataset.notes.get("source"), split, args.limit, out)
    if count is None:  # pairs.jsonl is not (known to be) this split's: write it, one pass
        count = write_pairs_file(out / "pairs.jsonl", pairs)
        freshness.mark_pairs(store, run_id, dataset.notes.get("source"), split, args.limit, out, count)
    if config.get("labelling", {}).get("out") != labelling["out"]:
        print(f"run {run_id} resumed: its outputs stay in {config.get('labelling', {}).get('out')}", file=sys.stderr)
    print(f"run {run_id}: {count} pairs to label with {program.method} (LMs {spec.lms}, "
          f"knowledge {knowledge.name})", file=sys.stderr)
    if args.engine == "ray":
        raise SystemExit("error: --engine ray is available on eval.run (its replicas are rebuilt from eval.run's "
                         "command line); label with --engine threads, async or batch")
    rows = judge(args.engine, Job(program, pairs, store, run_id, lms, retry_errors=args.retry_errors,
                                  progress=progress_display(args, lms, program.method),
                                  options=options_from_args(args)))
    if reuse_export:
        sig = freshness.signature(store, run_id, dataset.notes.get("source"), split, args.limit, labelling["out"])
    return LabellingRun(run_id, store, config, rows, sig)
