"""What eval.label, eval.holes and eval.review share: a labelling run (a run whose pairs may have no gold) and its
exported files.

A labelling run is an ordinary run in the run store (resumable, same run id rules as eval.run); its config carries a
`labelling` section (kind, output folder, label scheme, and for holes the input files) from which `export` rewrites
every output file, atomically, after the run and after each review decision:
- pairs.jsonl    the judged pairs (id, query_id, item_id, query, item_title, item_text): what a reviewer reads
- labels.jsonl (eval.label) / new.jsonl (eval.holes): one record per judgment (see `record`)
- qrels.txt      `qid 0 docid grade` (grade = the final label's index in the scheme); escalated, undecided pairs and
                 failed judgments get no line; eval.holes writes every original judgment first, unchanged
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hiera_dspy.cli.options import add_judging_arguments, begin_run, open_store, prepare_fresh, progress_display
from hiera_dspy.data import Dataset
from hiera_dspy.engines import Job, judge, options_from_args
from hiera_dspy.labelling import freshness
from hiera_dspy.labelling.exports import export_label, records_of, write_pairs_file
from hiera_dspy.labelling.holes import export_holes
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.runs.estimate import dry_run
from hiera_dspy.runs.program import build_program
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.runs.store import RunStore


def add_labelling_arguments(p: argparse.ArgumentParser) -> None:
    """eval.run's options for what judges and how (`hiera_dspy.cli.options.add_judging_arguments`)."""
    add_judging_arguments(p)


@dataclass
class LabellingRun:
    """A finished labelling run: its id, store, config and judgment rows (streamed from the store when iterated)."""
    run_id: str
    store: RunStore
    config: dict
    rows: Sequence[Judgment]
    signature: dict | None = None  # what an export now would be made from (`freshness`)
    fresh: dict | None = None  # the summary of an export made from that already: nothing to do


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


# kind -> function(store, run_id, config, records) -> written paths; `records` is an iterator, read once
EXPORTERS = {"label": export_label, "holes": export_holes}


def export(store: RunStore, run_id: str, tap: Callable[[dict], object] | None = None) -> list[Path]:
    """Rewrite every output file of a labelling run from the store (decisions included); returns the paths. `tap`
    sees every record on its way to the files (a summary counted in the same pass)."""
    config = store.run_config(run_id)
    if not config or "labelling" not in config:
        raise SystemExit(f"error: run {run_id!r} is not a labelling run (made by eval.label or eval.holes)")
    records = records_of(store, run_id)
    if tap is not None:
        records = _tapped(records, tap)
    return EXPORTERS[config["labelling"]["kind"]](store, run_id, config, records)


def _tapped(records: Iterable[dict], tap: Callable[[dict], object]) -> Iterator[dict]:
    for r in records:
        tap(r)
        yield r
