"""Export judgments as a judgment list for a team's tool: TREC qrels, Quepid ratings CSV, OpenSearch SRW judgment
import JSON, an Elasticsearch LTR judgment list, or labelled JSONL pairs.

    python -m eval.export --run RUN_ID --format quepid --out ratings.csv      # a labelling run's final labels
    python -m eval.export --run RUN_ID --format srw --out judgments.json       # a holes run: the filled benchmark
    python -m eval.export --from quepid:ratings.csv --format esltr --out judgments.txt   # one format into another

The run is any run of the store: a labelling run (eval.label: the final labels, a person's decisions over the
machine's), a holes run (eval.holes: the benchmark's judgments and the filled holes), or a judged run (eval.run:
the judge's labels; its dataset is read again for the pairs' texts, `--dataset` where it moved). Formats and what
each keeps: docs/formats.md.
"""

from __future__ import annotations

import argparse
import sys

from hiera_dspy.api import ExportRequest, export_list
from hiera_dspy.cli.options import cli_main
from hiera_dspy.data import ON_BAD_ROW
from hiera_dspy.data.judgment_lists import WRITERS
from hiera_dspy.jobs.requests import DataSource


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m eval.export`."""
    p = argparse.ArgumentParser(prog="python -m eval.export", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--format", required=True, choices=list(WRITERS), help="the judgment list to write")
    p.add_argument("--out", required=True, help="the file to write")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", help="run id (printed by eval.run, eval.label, eval.holes)")
    source.add_argument("--from", dest="source", metavar="FORMAT:FILE",
                        help="a judgment list to convert, e.g. quepid:ratings.csv, srw:list.json, esltr:list.txt")
    p.add_argument("--store", help="run store SQLite file (default: runs/store.sqlite)")
    p.add_argument("--dataset", help="the dataset a judged run read (default: the one its config names)")
    p.add_argument("--split", help="the split a judged run read (default: the one its config names)")
    p.add_argument("--scheme", help="label scheme of --from's ratings or of a judged run's dataset (default trec)")
    p.add_argument("--labels", help="custom label scheme, least relevant first, e.g. 'Bad,Fair,Good'")
    p.add_argument("--on-bad-row", choices=ON_BAD_ROW, default="error",
                   help="a malformed row of --from: error (default) or skip it and count it")
    p.add_argument("--name", help="the SRW judgment list's name (default: the output file's name)")
    p.add_argument("--description", default="", help="the SRW judgment list's description")
    return p


def main(argv: list[str] | None = None) -> dict:
    """Write the judgment list; returns what was written."""
    a = parser().parse_args(argv)
    data = DataSource(a.dataset, a.scheme, a.labels, a.on_bad_row) if a.dataset else None
    done = export_list(ExportRequest(format=a.format, out=a.out, run_id=a.run, store=a.store, source=a.source,
                                     data=data, split=a.split, scheme=a.scheme, labels=a.labels,
                                     on_bad_row=a.on_bad_row, name=a.name, description=a.description))
    print(f"wrote {done.path}: {done.judgments} judgments of {done.queries} queries ({done.format})")
    if done.skipped:
        first = done.skipped[0]
        print(f"skipped {len(done.skipped)} bad row(s) (--on-bad-row skip); the first: {first['file']}, "
              f"{'line ' + str(first['line']) if 'line' in first else first.get('row')}: {first['error']}",
              file=sys.stderr)
    return {"path": str(done.path), "judgments": done.judgments, "queries": done.queries,
            "skipped": len(done.skipped)}


if __name__ == "__main__":
    cli_main(main)
