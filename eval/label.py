"""Label pairs that have no labels: TREC qrels out, and every label with its confidence and where that comes from.

    python -m eval.label --dataset jsonl:pairs.jsonl --labels "Bad,Fair,Good" --method dream --out runs/mine
    python -m eval.label --dataset jsonl:pairs.jsonl --scheme msrd --judge artifacts/msrd/hiera.json --out runs/mine

Takes eval.run's run options (--run-id, --threads, --limit, --set, the LM flags); a run interrupted at any point and
started again re-judges nothing. Writes OUT/labels.jsonl (id, query_id, item_id, label, source, machine_label,
confidence, confidence_source, distribution, escalated, method), OUT/qrels.txt (`qid 0 docid grade`, grade = the
label's index in the scheme) and OUT/pairs.jsonl; pairs that carry gold are also scored (OUT/metrics.json), pairs
without gold never are. `python -m eval.review --run RUN_ID` then shows a person the pairs the machine was least
sure of.

`--known FILE` (qrels:PATH, jsonl:PATH, trec:FOLDER, or a PATH sniffed) gives an existing judgment list of the same
queries to a judge that reads known judgments (docs/labelling.md#known-judgments); the closing lines say how many it
read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hiera_dspy.api import LabelRequest, label
from hiera_dspy.cli.options import (  # the human sample's flags (cli.labelling) are eval.holes' alone
    add_data_arguments,
    add_judging_arguments,
    add_known_arguments,
    cli_main,
    exit_on_error_rate,
    print_metrics,
    raise_if_stopped,
)
from hiera_dspy.cli.requests import data_source, judging, known_list
from hiera_dspy.review.known_report import known_summary
from hiera_dspy.runs.cost import format_forecast


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m eval.label`."""
    p = argparse.ArgumentParser(prog="python -m eval.label", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(p)
    p.add_argument("--split", help="which split to label (default: the dataset's default split, `all` for jsonl)")
    p.add_argument("--out", required=True, help="output folder for labels.jsonl, qrels.txt and pairs.jsonl")
    add_judging_arguments(p)
    add_known_arguments(p)
    return p


def main(argv: list[str] | None = None) -> dict:
    """Label a dataset's pairs and export labels.jsonl, qrels.txt and pairs.jsonl; returns the summary."""
    args = parser().parse_args(argv)
    labelled = label(LabelRequest(data_source(args), judging(args), out=args.out, split=args.split,
                                  known=known_list(args)))
    if labelled.estimate is not None:  # --dry-run: nothing was sent
        print(format_forecast(labelled.estimate))
        return {}
    summary, run_id = labelled.summary, labelled.run_id
    if labelled.fresh:  # a finished run, exported from exactly this input and these rows: nothing to redo
        print_summary(summary, run_id, [])
        return summary | {"run_id": run_id}
    if labelled.metrics:
        print_metrics(f"{labelled.method} on the {labelled.metrics['pairs']} pairs with gold", labelled.metrics)
        print(labelled.metrics["summary"])
    else:
        print("no gold labels in these pairs: nothing to score (metrics skipped)", file=sys.stderr)
    print_summary(summary, run_id, labelled.written)
    raise_if_stopped(labelled.rows)
    exit_on_error_rate({run_id: {"errors": summary["errors"], "pairs": summary["pairs"]}}, args.max_error_rate,
                       "rerun with --retry-errors to retry only those")
    return summary | {"run_id": run_id}


def print_summary(summary: dict, run_id: str, written: list[Path]) -> None:
    """The closing lines: what was labelled, and where the files are."""
    cut = summary.get("truncated", 0)
    print(f"labelled {summary['labelled']} of {summary['pairs']} pairs ({summary['escalated']} escalated, "
          f"{summary['errors']} errors); confidence from {summary['confidence_sources']}")
    if cut:
        print(f"{cut} pairs had an item text longer than the judge reads (cut to $HIERA_ITEM_CHARS characters; "
              "`truncated` in labels.jsonl gives the original length)")
    if summary.get("known"):
        print(known_summary(summary["known"]))
    where = f"wrote {', '.join(str(p) for p in written)}" if written else "outputs up to date"
    print(f"{where} (run id {run_id}); review: python -m eval.review --run {run_id}")


if __name__ == "__main__":
    cli_main(main)
