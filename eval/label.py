"""Label pairs that have no labels: TREC qrels out, and every label with its confidence and where that comes from.

    python -m eval.label --dataset jsonl:pairs.jsonl --labels "Bad,Fair,Good" --method dream --out runs/mine
    python -m eval.label --dataset jsonl:pairs.jsonl --scheme msrd --judge artifacts/msrd/hiera.json --out runs/mine

Takes eval.run's run options (--run-id, --threads, --limit, --set, the LM flags); a run interrupted at any point and
started again re-judges nothing. Writes OUT/labels.jsonl (id, query_id, item_id, label, source, machine_label,
confidence, confidence_source, distribution, escalated, method), OUT/qrels.txt (`qid 0 docid grade`, grade = the
label's index in the scheme) and OUT/pairs.jsonl; pairs that carry gold are also scored (OUT/metrics.json), pairs
without gold never are. `python -m eval.review --run RUN_ID` then shows a person the pairs the machine was least
sure of.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from hiera_dspy.cli.labelling import add_labelling_arguments, label_pairs
from hiera_dspy.cli.options import (
    add_data_arguments,
    cli_main,
    exit_on_error_rate,
    load_data,
    output_folder,
    print_metrics,
    raise_if_stopped,
)
from hiera_dspy.data import DataError
from hiera_dspy.labelling import freshness
from hiera_dspy.labelling.run import export
from hiera_dspy.runs.tally import Tally
from hiera_dspy.store.files import write_atomic


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m eval.label`."""
    p = argparse.ArgumentParser(prog="python -m eval.label", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(p)
    p.add_argument("--split", help="which split to label (default: the dataset's default split, `all` for jsonl)")
    p.add_argument("--out", required=True, help="output folder for labels.jsonl, qrels.txt and pairs.jsonl")
    add_labelling_arguments(p)
    return p


def main(argv: list[str] | None = None) -> dict:
    """Label a dataset's pairs and export labels.jsonl, qrels.txt and pairs.jsonl; returns the summary."""
    args = parser().parse_args(argv)
    output_folder(args.out)
    dataset = load_data(args)
    try:
        pairs = dataset.split(args.split, args.limit)
    except DataError as exc:
        raise SystemExit(f"error: {exc}") from None
    split = args.split or dataset.default_split
    out = Path(args.out).resolve()
    labelling = {"kind": "label", "out": str(out), "scheme": dataset.scheme.to_dict()}
    run = label_pairs(args, dataset, pairs, split, labelling, reuse_export=True)
    if run is None:  # --dry-run: the estimate is printed, nothing was sent
        return {}
    if run.fresh is not None:  # a finished run, exported from exactly this input and these rows: nothing to redo
        print_summary(run.fresh, run.run_id, [])
        return run.fresh | {"run_id": run.run_id}
    counts = LabelCounts()
    written = export(run.store, run.run_id, tap=counts.add)
    summary = counts.summary()
    skipped = dataset.notes.get("skipped_rows") or []
    if skipped:
        summary["skipped_rows"] = len(skipped)
    if summary["pairs"] == len(run.rows.ids):  # every pair of the split has its row: a later run may reuse this
        freshness.mark_fresh(run.store, run.run_id, run.signature, summary)
    gold = Tally(list(dataset.scheme.labels)).add_all(run.rows.with_gold())
    if gold.pairs:
        metrics = gold.metrics() | {"run_id": run.run_id}
        write_atomic(out / "metrics.json", json.dumps(metrics, indent=1))
        print_metrics(f"{run.config.get('method')} on the {gold.pairs} pairs with gold", metrics)
    else:
        print("no gold labels in these pairs: nothing to score (metrics skipped)", file=sys.stderr)
    print_summary(summary, run.run_id, written)
    raise_if_stopped(run.rows)
    exit_on_error_rate({run.run_id: {"errors": summary["errors"], "pairs": summary["pairs"]}}, args.max_error_rate,
                       "rerun with --retry-errors to retry only those")
    return summary | {"run_id": run.run_id}


def print_summary(summary: dict, run_id: str, written: list[Path]) -> None:
    """The closing lines: what was labelled, and where the files are."""
    cut = summary.get("truncated", 0)
    print(f"labelled {summary['labelled']} of {summary['pairs']} pairs ({summary['escalated']} escalated, "
          f"{summary['errors']} errors); confidence from {summary['confidence_sources']}")
    if cut:
        print(f"{cut} pairs had an item text longer than the judge reads (cut to $HIERA_ITEM_CHARS characters; "
              "`truncated` in labels.jsonl gives the original length)")
    where = f"wrote {', '.join(str(p) for p in written)}" if written else "outputs up to date"
    print(f"{where} (run id {run_id}); review: python -m eval.review --run {run_id}")


class LabelCounts:
    """Counts of a labelling, one record at a time: pairs, labelled, escalated, errors, confidence sources, labels."""

    def __init__(self):
        self.counts: Counter = Counter()
        self.sources: Counter = Counter()
        self.labels: Counter = Counter()

    def add(self, r: dict) -> None:
        """Count one labels.jsonl record."""
        self.counts.update(pairs=1, labelled=bool(r["label"]), escalated=bool(r["escalated"] and not r["label"]),
                           errors=bool(r["error"]), truncated=bool(r.get("truncated")))
        self.sources[r["confidence_source"].split(" (")[0]] += 1
        if r["label"]:
            self.labels[r["label"]] += 1

    def summary(self) -> dict:
        """The counts as eval.label's summary."""
        c = self.counts
        return {"pairs": c["pairs"], "labelled": c["labelled"], "escalated": c["escalated"], "errors": c["errors"],
                "truncated": c["truncated"], "confidence_sources": dict(self.sources), "labels": dict(self.labels)}


def summarize(records: Iterable[dict]) -> dict:
    """Counts of a labelling, in one pass: pairs, labelled, escalated, errors, confidence sources and labels."""
    counts = LabelCounts()
    for r in records:
        counts.add(r)
    return counts.summary()


if __name__ == "__main__":
    cli_main(main)
