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
import importlib
import json
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hiera_dspy.cli import add_judging_arguments, begin_run, open_store, prepare_fresh
from hiera_dspy.confidence import confidence
from hiera_dspy.data import Dataset
from hiera_dspy.engines import Job, judge, options_from_args
from hiera_dspy.files import atomic_file
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.runs.decisions import DecisionLog
from hiera_dspy.runs.estimate import dry_run
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.runs.store import RunStore


def add_labelling_arguments(p: argparse.ArgumentParser) -> None:
    """eval.run's options for what judges and how (`hiera_dspy.cli.add_judging_arguments`)."""
    add_judging_arguments(p)


@dataclass
class LabellingRun:
    """A finished labelling run: its id, store, config and judgment rows (streamed from the store when iterated)."""
    run_id: str
    store: RunStore
    config: dict
    rows: Sequence[Judgment]


def label_pairs(args, dataset: Dataset, pairs: Iterable[Pair], split: str, labelling: dict,
                identity_extra: dict | None = None) -> LabellingRun | None:
    """Judge `pairs` (a list or a lazily read split) as a run of the store (resuming a finished part), after writing
    OUT/pairs.jsonl, with the engine of `--engine`. With `--dry-run` nothing is sent and no run starts: the cost
    estimate is printed and None returned."""
    from eval.run import build_program

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
    count = write_pairs_file(out / "pairs.jsonl", pairs)
    begin_run(store, run_id, {**identity, "limit": args.limit, "labelling": labelling}, args,
              may_differ=("limit", "labelling"))
    config = store.run_config(run_id)
    if config.get("labelling", {}).get("out") != labelling["out"]:
        print(f"run {run_id} resumed: its outputs stay in {config.get('labelling', {}).get('out')}", file=sys.stderr)
    print(f"run {run_id}: {count} pairs to label with {program.method} (LMs {spec.lms}, "
          f"knowledge {knowledge.name})", file=sys.stderr)
    if args.engine == "ray":
        raise SystemExit("error: --engine ray is available on eval.run (its replicas are rebuilt from eval.run's "
                         "command line); label with --engine threads, async or batch")
    rows = judge(args.engine, Job(program, pairs, store, run_id, lms, retry_errors=args.retry_errors,
                                  options=options_from_args(args)))
    return LabellingRun(run_id, store, config, rows)


def pair_record(p: Pair) -> dict:
    """A pair as a line of pairs.jsonl."""
    return {"id": p.id, "query_id": p.query_id, "item_id": p.item_id, "query": p.query, "item_title": p.item_title,
            "item_text": p.item_text, "gold": p.label}


def write_pairs_file(path: Path, pairs: Iterable[Pair]) -> int:
    """Write OUT/pairs.jsonl in one streamed pass over the split; returns how many pairs it has."""
    count = 0
    with atomic_file(path) as fh:
        for p in pairs:
            fh.write(json.dumps(pair_record(p), ensure_ascii=False, default=str) + "\n")
            count += 1
    return count


def read_pairs_file(out: Path) -> dict[str, dict]:
    """The pairs.jsonl of a labelling run's output folder, by pair id (all in memory: for a few pairs, e.g. review)."""
    return {r["id"]: r for r in iter_pairs_file(out / "pairs.jsonl")}


def iter_pairs_file(path: Path) -> Iterator[dict]:
    """The lines of a labelling run's pairs.jsonl, in split order, read one at a time."""
    if not path.is_file():
        raise SystemExit(f"error: {path} is missing: the labelling run's output folder was moved or deleted")
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def record(row: dict, pair: dict, method: str, decision: dict | None) -> dict:
    """One judgment as a labels.jsonl / new.jsonl record: the final label (a person's decision over the machine's),
    where it came from, the machine label, its confidence and that confidence's source."""
    conf = confidence(row)
    final = decision["label"] if decision else row.get("label")
    out = {"id": row["id"], "query_id": pair["query_id"], "item_id": pair["item_id"], "label": final,
           "source": "human" if decision else ("machine" if final else "none"), "machine_label": row.get("label"),
           "confidence": conf.value, "confidence_source": conf.source, "distribution": conf.distribution,
           "escalated": bool(row.get("escalated")), "method": method, "error": row.get("error")}
    if decision:
        out |= {"decided_by": decision["who"], "decided_at": iso(decision["at"]), "decided_via": decision["via"]}
    return out


def iso(t: float) -> str:
    """A Unix time as an ISO 8601 UTC timestamp."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def write_jsonl(path: Path, records: Iterable[dict]) -> Path:
    """Write records as JSON lines (atomically, streamed); returns the path."""
    with atomic_file(path) as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    return path


RECORD_COLUMNS = ("run_id, pair_id, position, gold, label, fields, tokens, lm_calls, tokens_by_role, seconds, error, "
                  "escalated, delegated, human_label, attempts, finished")  # a record needs no step trace


def records_of(store: RunStore, run_id: str) -> Iterator[dict]:
    """Every judgment of the labelling run as a record, in run order, streamed: the store's rows (in position order)
    are matched to pairs.jsonl (in split order) in one merge pass; a row whose position no longer names its pair (the
    split changed between runs) is matched in one more pass at the end. Rows of pairs not in the file are left out."""
    config = store.run_config(run_id) or {}
    path = Path(config["labelling"]["out"]) / "pairs.jsonl"
    decisions = DecisionLog(store.path).latest(run_id)
    method = config.get("method", "?")
    strays: dict[str, Judgment] = {}
    lines = enumerate(iter_pairs_file(path))
    index, pair = next(lines, (None, None))
    for row in store.iter_rows(run_id, columns=RECORD_COLUMNS):
        while index is not None and row.position is not None and index < row.position:
            index, pair = next(lines, (None, None))
        if index is not None and index == row.position and pair["id"] == row.id:
            yield record(row, pair, method, decisions.get(row.id))
        else:
            strays[row.id] = row
    if strays:
        for pair in iter_pairs_file(path):
            row = strays.pop(pair["id"], None)
            if row is not None:
                yield record(row, pair, method, decisions.get(row.id))


def qrels_of(records: Iterable[dict], scheme: LabelScheme) -> dict[tuple[str, str], int]:
    """(qid, docid) -> grade for every record with a final label."""
    return {(r["query_id"], r["item_id"]): scheme.labels.index(r["label"]) for r in records if r["label"]}


def qrels_line(r: dict, scheme: LabelScheme) -> str:
    """The qrels.txt line of a record with a final label (`qid 0 docid grade`); "" for one without."""
    return f"{r['query_id']} 0 {r['item_id']} {scheme.labels.index(r['label'])}\n" if r["label"] else ""


# kind -> "module:function(store, run_id, config, records) -> written paths"; `records` is read once
EXPORTERS = {"label": "eval.labelling:export_label", "holes": "eval.holes:export_holes"}


def export_label(store: RunStore, run_id: str, config: dict, records: Iterable[dict]) -> list[Path]:
    """labels.jsonl and qrels.txt of an eval.label run, written together in one pass over the records."""
    out, scheme = Path(config["labelling"]["out"]), LabelScheme.from_dict(config["labelling"]["scheme"])
    with atomic_file(out / "labels.jsonl") as labels, atomic_file(out / "qrels.txt") as qrels:
        for r in records:
            labels.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
            qrels.write(qrels_line(r, scheme))
    return [out / "labels.jsonl", out / "qrels.txt"]


def export(store: RunStore, run_id: str) -> list[Path]:
    """Rewrite every output file of a labelling run from the store (decisions included); returns the paths."""
    config = store.run_config(run_id)
    if not config or "labelling" not in config:
        raise SystemExit(f"error: run {run_id!r} is not a labelling run (made by eval.label or eval.holes)")
    module, _, name = EXPORTERS[config["labelling"]["kind"]].partition(":")
    return getattr(importlib.import_module(module), name)(store, run_id, config, records_of(store, run_id))
