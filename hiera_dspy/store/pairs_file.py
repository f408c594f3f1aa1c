"""A labelling run's OUT/pairs.jsonl: the pairs it judges, in split order, one JSON line each, written in one
streamed pass before any judgment; the run's rows (by position) are matched to its lines when the run's files are
rebuilt (`hiera_dspy.review.exports.records_of`), and `hiera_dspy.store.freshness` notes which split it holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from hiera_dspy.errors import RequestError
from hiera_dspy.records import Pair
from hiera_dspy.store.files import atomic_file


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
        raise RequestError(f"{path} is missing: the labelling run's output folder was moved or deleted")
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
