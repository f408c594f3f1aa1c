"""Escalated judgments (DREAM's persistent disagreements) for a human reviewer, and their decisions back in.

    python -m eval.escalations --run ID                      # list escalated pairs with their debate
    python -m eval.escalations --run ID --labels human.jsonl # record decisions: one {"id": ..., "label": ...} a line

Recorded decisions are stored beside the automatic labels (never replacing them) and count in the run's metrics.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hiera_dspy.cli import open_store
from hiera_dspy.labels import LabelScheme
from hiera_dspy.store import RunStore


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m eval.escalations", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, help="run id (printed by eval.run)")
    p.add_argument("--store", help="run store SQLite file (default: runs/store.sqlite)")
    p.add_argument("--labels", help="JSONL file of human decisions: {\"id\": PAIR_ID, \"label\": LABEL} per line")
    p.add_argument("--scheme-labels", help="comma-separated allowed labels (default: those seen in the run)")
    return p


def show(rows: list[dict], out=sys.stdout) -> None:
    escalated = [r for r in rows if r["escalated"]]
    print(f"{len(escalated)} escalated of {len(rows)} judgments", file=out)
    for r in escalated:
        decided = f" (human: {r['human_label']})" if r.get("human_label") else ""
        print(f"\n== {r['id']}{decided}", file=out)
        for turn in r["fields"].get("history") or []:
            if isinstance(turn, dict):
                print(f"  [round {turn.get('round')}] {turn.get('agent')}: {turn.get('stance')} - "
                      f"{turn.get('argument', '')}", file=out)
            else:
                print(f"  {turn}", file=out)


def record(store: RunStore, run_id: str, path: Path, allowed: set[str]) -> int:
    count = 0
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            pair_id, label = str(row["id"]), str(row["label"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}, line {lineno}: expected {{\"id\": ..., \"label\": ...}} ({exc})")
        if allowed and label not in allowed:
            raise SystemExit(f"{path}, line {lineno}: label {label!r} not in {sorted(allowed)}")
        if not store.set_human_label(run_id, pair_id, label):
            raise SystemExit(f"{path}, line {lineno}: pair {pair_id!r} is not in run {run_id}")
        count += 1
    return count


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    store = open_store(args)
    if store.run_config(args.run) is None:
        raise SystemExit(f"no run {args.run!r} in {store.path}; runs: {', '.join(store.run_ids()[-5:]) or 'none'}")
    rows = store.rows(args.run)
    if args.labels:
        allowed = set(args.scheme_labels.split(",")) if args.scheme_labels else {r["gold"] for r in rows if r["gold"]}
        n = record(store, args.run, Path(args.labels), allowed)
        print(f"recorded {n} human decisions in run {args.run}; rerun eval.run with --run-id {args.run} "
              f"to refresh metrics.json")
        return
    show(rows)


if __name__ == "__main__":
    main()
