"""`jsonl:PATH`: a user's own pairs, one JSON object a line:
`{"id", "query", "item_title", "item_text", "label" [, "query_id", "item_id"]}`.

Split `all` (the default) is every pair in file order; `train`/`dev`/`eval` follow the paper's sampling protocol and
exist only when every row has a label. A file without labels (or with some) is a labelling job: `label` may be
missing or null, the pairs have no gold, and no metric is computed for them.
"""

from __future__ import annotations

import json
from pathlib import Path

from hiera_dspy.data import BadRows, DataError, Dataset, expect_file
from hiera_dspy.data.sampling import make_splits
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair

REQUIRED = ("id", "query", "item_title", "item_text")
TEXT_FIELDS = REQUIRED + ("query_id", "item_id")  # text, or a number written as text (an id, a year as a title)
JSON_TYPES = {list: "an array", dict: "an object", bool: "a boolean"}
FORMAT = 'one JSON object a line with "id", "query", "item_title", "item_text", "label" [, "query_id", "item_id"]'


def read_pairs(path: Path, scheme: LabelScheme, *, require_label: bool = True,
               on_bad_row: str = "error", skipped: list | None = None) -> list[Pair]:
    """Parse a pairs file; each bad row raises a DataError naming file, line and field (or is skipped and recorded)."""
    bad = BadRows(on_bad_row)
    expect_file(path, FORMAT)
    pairs: list[Pair] = []
    seen: dict[str, int] = {}
    lines = path.read_bytes().splitlines()
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            pairs.append(_parse_line(_decode(raw), scheme, require_label, seen, lineno))
        except DataError as exc:
            bad(path, str(exc), line=lineno)
    if skipped is not None:
        skipped.extend(bad.rows)
    if not pairs:
        what = "file is empty" if not lines else "no pairs found" + (" (every row was bad)" if bad.rows else "")
        raise DataError(f"{path}, line {len(lines) + 1}: end of file, {what}; expected {FORMAT}")
    return pairs


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text (byte {exc.start} of the line: {raw[exc.start:exc.start + 1]!r}); "
                        f"re-encode the file as UTF-8") from None


def json_object(line: str) -> dict:
    """One JSONL line as a JSON object; a DataError saying what is wrong (the caller adds file and line)."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(row, dict):
        raise DataError(f"expected a JSON object, got {type(row).__name__}")
    return row


def _parse_line(line: str, scheme: LabelScheme, require_label: bool, seen: dict, lineno: int = 0) -> Pair:
    row = json_object(line)
    for name in REQUIRED + (("label",) if require_label else ()):
        if name not in row or row[name] is None:
            raise DataError(f'missing field "{name}"')
    for name in TEXT_FIELDS + ("label",):
        kind = next((text for t, text in JSON_TYPES.items() if isinstance(row.get(name), t)), None)
        if kind:
            raise DataError(f'field "{name}": expected text or a number, got {kind}')
    if not str(row["query"]).strip():
        raise DataError('field "query" is empty')
    pair_id = str(row["id"])
    if pair_id in seen:
        raise DataError(f'field "id": duplicate id "{pair_id}" (first on line {seen[pair_id]})')
    seen[pair_id] = lineno
    label = None
    if row.get("label") is not None:
        try:
            label = scheme.from_raw(row["label"])
        except ValueError as exc:
            raise DataError(f'field "label": {exc}') from None
    return Pair(id=pair_id, query=str(row["query"]), item_title=str(row["item_title"]), item_text=str(row["item_text"]),
                label=label, query_id=str(row.get("query_id") or row["query"]),
                item_id=str(row.get("item_id") or row["item_title"]))


def load(arg: str | None, scheme: LabelScheme | None, *, on_bad_row: str = "error", **_) -> Dataset:
    """A user's JSONL pairs under a given scheme: split `all`, plus train/dev when every pair has a label."""
    if not arg:
        raise DataError("jsonl: needs a path, e.g. --dataset jsonl:my_pairs.jsonl")
    if scheme is None:
        raise DataError("jsonl: needs a label scheme: --scheme msrd|esci|wands|homedepot or --labels 'A,B,C'")
    skipped: list = []
    pairs = read_pairs(Path(arg), scheme, require_label=False, on_bad_row=on_bad_row, skipped=skipped)
    splits = {"all": pairs}
    if all(p.label is not None for p in pairs):
        splits.update(make_splits(pairs, scheme))
    return Dataset(name=f"jsonl:{arg}", scheme=scheme, splits=splits, default_split="all",
                   notes={"skipped_rows": skipped})
