"""The hole-filling demo on the bundled MSRD sample, offline: real retrieval runs, sparse qrels, holes filled.

    python -m eval.holes_demo --out runs/msrd-holes --method embed-lr
    python -m eval.holes_demo --out runs/msrd-holes-dream --queries 10 --method dream          # the local model

Builds OUT/inputs/ once: topics.tsv (the 566 queries of the bundled pairs), corpus.jsonl (the 9,750-movie catalog),
qrels.txt (the 600 bundled judgments: the sparse existing qrels) and, for the first `--queries` topics, TREC runs of
the catalog: bm25 (bm25s over title + text), bm25-title (titles only), and where the `signals` extra is installed
dense (all-MiniLM-L6-v2 cosine) and rrf (reciprocal rank fusion of bm25 and dense). Then runs eval.holes on them at
depth 10; every other option (--method, --judge, --lm, --threads, --limit, --run-id, ...) goes to eval.holes.
The inputs are built by `hiera_dspy.jobs.holes_demo`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from hiera_dspy.cli.options import cli_main
from hiera_dspy.jobs.holes_demo import build_inputs
from hiera_dspy.jobs.preparing import output_folder


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m eval.holes_demo`."""
    p = argparse.ArgumentParser(prog="python -m eval.holes_demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output folder (inputs in OUT/inputs, results as eval.holes)")
    p.add_argument("--queries", type=int, default=50, help="how many topics the runs retrieve for (default 50)")
    p.add_argument("--depth", type=int, default=10, help="hole depth (default 10)")
    return p


def main(argv: list[str] | None = None) -> dict:
    """Build a small benchmark with holes and run eval.holes on it in its own process; returns its summary."""
    args, rest = parser().parse_known_args(argv)
    inputs = output_folder(Path(args.out) / "inputs")
    runs = build_inputs(inputs, args.queries)
    # the command a user would type next, in its own process: one CLI never imports another (tests/test_layers.py)
    command = [sys.executable, "-m", "eval.holes", "--topics", str(inputs / "topics.tsv"), "--corpus",
               str(inputs / "corpus.jsonl"), "--qrels", str(inputs / "qrels.txt"), "--runs", ",".join(runs),
               "--depth", str(args.depth), "--scheme", "msrd", "--out", args.out, *rest]
    root = str(Path(__file__).resolve().parents[1])  # this checkout's eval/ and hiera_dspy/, installed or not
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    status = subprocess.run(command, env=env).returncode
    if status:
        raise SystemExit(status)
    return json.loads((Path(args.out) / "summary.json").read_text())


if __name__ == "__main__":
    cli_main(main)
