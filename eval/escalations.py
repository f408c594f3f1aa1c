"""The review queue as text: DREAM's escalated judgments (and, with --least-sure N, the N least confident others), and
decisions from a file back in. The same queue as the review page (python -m eval.review).

    python -m eval.escalations --run ID [--least-sure 20]          # list the queue with each debate or argument
    python -m eval.escalations --run ID --decisions human.jsonl   # record decisions: one {"id", "label" [, "who"]} a line

Decisions are stored beside the automatic labels (never replacing them) with who and when, count in the run's
metrics, and rewrite a labelling run's qrels.txt and labels.jsonl/new.jsonl. A --decisions file is checked whole first
(every bad line reported, nothing stored) and applied in one transaction; a decision equal to the stored one is not
stored again.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hiera_dspy.cli.options import add_renamed, cli_main, open_store
from hiera_dspy.review.decision_file import read_decisions
from hiera_dspy.review.sample_log import SAMPLE_REASON
from hiera_dspy.review.session import Review, transcript


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m eval.escalations`."""
    p = argparse.ArgumentParser(prog="python -m eval.escalations", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, help="run id (printed by eval.run, eval.label, eval.holes)")
    p.add_argument("--store", help="run store SQLite file (default: runs/store.sqlite)")
    p.add_argument("--least-sure", type=int, default=0, metavar="N",
                   help="also list the N least confident judgments (default 0)")
    p.add_argument("--decisions", help="JSONL file of human decisions: {\"id\": PAIR_ID, \"label\": LABEL} per line")
    p.add_argument("--who", help="who made the decisions of --decisions (default: your user name; a line's who wins)")
    add_renamed(p, "--least-sure", "--budget")  # the old spellings, one release
    add_renamed(p, "--decisions", "--labels")
    return p


def show(review: Review, out=None) -> None:
    """Print the review queue: each escalated or least-confident judgment with its transcript."""
    out = out or sys.stdout
    queue = review.queue()
    rows = review.store.rows(review.run_id)
    latest = review.decisions.latest(review.run_id)
    print(f"{sum(e.reason == 'escalated' for e in queue)} escalated of {len(rows)} judgments; "
          f"{len(queue)} in the review queue", file=out)
    for entry in queue:
        r, c = entry.row, entry.confidence
        decided = f" (human: {latest[r['id']]['label']} by {latest[r['id']]['who']})" if r["id"] in latest else ""
        conf = "n/a" if c.value is None else f"{c.value:.2f}"
        if entry.reason == SAMPLE_REASON and not decided:  # no anchoring: the machine's view waits for the person
            print(f"\n== {r['id']}: {entry.reason}; machine label hidden until decided", file=out)
            continue
        print(f"\n== {r['id']}: {entry.reason}; machine {r.get('label') or 'none'}, confidence {conf} "
              f"from {c.source}{decided}", file=out)
        for line in transcript(r):
            print(f"  {line}", file=out)


def record(review: Review, path: Path, who: str | None) -> dict:
    """Record the human decisions of a JSONL file in the run, checked whole and applied all or nothing
    (`hiera_dspy.review.decision_file`); returns `Review.decide_many`'s result."""
    decisions = read_decisions(path, review.scheme.labels, lambda ids: review.store.finished_among(review.run_id, ids),
                               review.run_id, who or review.who)
    return review.decide_many([(d.pair_id, d.label, d.who) for d in decisions], via=f"file:{path.name}")


def main(argv: list[str] | None = None) -> None:
    """Show a run's escalations, or record human decisions from --decisions."""
    args = parser().parse_args(argv)
    store = open_store(args)
    review = Review(store, args.run, args.least_sure, args.who)
    if args.decisions:
        done = record(review, Path(args.decisions), args.who)
        same = f" ({done['unchanged']} unchanged: the same label was stored already)" if done["unchanged"] else ""
        print(f"recorded {done['recorded']} human decisions in run {args.run}{same}; {review.next_step()}")
        return
    show(review)


if __name__ == "__main__":
    cli_main(main)
