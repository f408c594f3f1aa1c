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
from pathlib import Path

from hiera_dspy.cli.options import (
    add_data_arguments,
    cli_main,
    exit_on_error_rate,
    load_data,
    metrics_from_rows,
    output_folder,
    print_metrics,
)
from hiera_dspy.data import DataError
from hiera_dspy.labelling.exports import records_of
from hiera_dspy.labelling.run import add_labelling_arguments, export, label_pairs
from hiera_dspy.runs.files import write_atomic


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
    run = label_pairs(args, dataset, pairs, split, labelling)
    if run is None:  # --dry-run: the estimate is printed, nothing was sent
        return {}
    written = export(run.store, run.run_id)
    records = [r for r in records_of(run.store, run.run_id) if r["id"] in {p.id for p in pairs}]
    summary = summarize(records)
    skipped = dataset.notes.get("skipped_rows") or []
    if skipped:
        summary["skipped_rows"] = len(skipped)
    gold = [r for r in run.rows if r.get("gold") is not None]
    if gold:
        metrics = metrics_from_rows(gold, list(dataset.scheme.labels)) | {"run_id": run.run_id}
        write_atomic(out / "metrics.json", json.dumps(metrics, indent=1))
        print_metrics(f"{run.config.get('method')} on the {len(gold)} pairs with gold", metrics)
    else:
        print("no gold labels in these pairs: nothing to score (metrics skipped)", file=sys.stderr)
    print(f"labelled {summary['labelled']} of {summary['pairs']} pairs ({summary['escalated']} escalated, "
          f"{summary['errors']} errors); confidence from {summary['confidence_sources']}")
    print(f"wrote {', '.join(str(p) for p in written)} (run id {run.run_id}); "
          f"review: python -m eval.review --run {run.run_id}")
    exit_on_error_rate({run.run_id: {"errors": summary["errors"], "pairs": summary["pairs"]}}, args.max_error_rate,
                       "rerun with --retry-errors to retry only those")
    return summary | {"run_id": run.run_id}


def summarize(records: list[dict]) -> dict:
    """Counts of a labelling: pairs, labelled, escalated, errors, confidence sources and labels."""
    return {"pairs": len(records), "labelled": sum(1 for r in records if r["label"]),
            "escalated": sum(1 for r in records if r["escalated"] and not r["label"]),
            "errors": sum(1 for r in records if r["error"]),
            "confidence_sources": dict(Counter(r["confidence_source"].split(" (")[0] for r in records)),
            "labels": dict(Counter(r["label"] for r in records if r["label"]))}


if __name__ == "__main__":
    cli_main(main)
