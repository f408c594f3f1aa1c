"""Labelled JSONL as known judgments: the `jsonl:PATH` pairs format (`hiera_dspy.data.jsonl`), each labelled row one
judgment with its own query and item texts; a row whose label is missing or null is no judgment (counted).

Written (`write`), each judgment is one labelled pair, `{"id", "query_id", "item_id", "query", "item_title",
"item_text", "label"}`, the label the scheme's name of its grade and the id `QUERY_ID/ITEM_ID`: a file `--dataset
jsonl:FILE` reads back. A judgment whose query has no text cannot be written (a pair needs its query)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from hiera_dspy.data import DataError
from hiera_dspy.data.jsonl import _decode, _parse_line
from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.data.tool_lists import query_text
from hiera_dspy.labels import LabelScheme

SCALE_HINT = ("known judgments are labelled on the scheme of the pairs judged (--scheme/--labels): map the file's "
              "labels onto it, or judge on the file's scheme")


def read(path: Path, scheme: LabelScheme, counts: Counter) -> Iterator[KnownJudgment]:
    """Every labelled row as a judgment with its texts; a bad row is a DataError naming file, line and field."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                pair = _parse_line(_decode(raw), scheme, False, None, lineno)
            except DataError as exc:
                hint = SCALE_HINT if str(exc).startswith('field "label"') else "fix the row"
                raise DataError(f"{path}, line {lineno}: {exc}; {hint}") from None
            if pair.label is None:
                counts["unlabelled"] += 1
                continue
            yield KnownJudgment(pair.query_id, pair.item_id, scheme.labels.index(pair.label),
                                item_title=pair.item_title, item_text=pair.item_text or None, query=pair.query,
                                source=f"{path}:{lineno}")


def looks_like(path: Path, head: str) -> bool:
    """A file with a `.jsonl`/`.json` name, or whose first line is a JSON object."""
    return path.is_file() and (path.suffix in (".jsonl", ".json") or head.startswith("{"))


def write(known: Known, **_) -> Iterator[str]:
    """Labelled JSONL pairs, one judgment a line."""
    for j in known:
        row = {"id": f"{j.query_id}/{j.item_id}", "query_id": j.query_id, "item_id": j.item_id,
               "query": query_text(j, "a labelled pair"), "item_title": j.item_title, "item_text": j.item_text or "",
               "label": known.scheme.labels[j.grade]}
        yield json.dumps(row, ensure_ascii=False) + "\n"
