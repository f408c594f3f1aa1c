"""`jsonl:PATH`: a user's own pairs, one JSON object a line:
`{"id", "query", "item_title", "item_text", "label" [, "query_id", "item_id"]}`.

Split `all` (the default) is every pair in file order; `train`/`dev`/`eval` follow the paper's sampling protocol and
exist only when every row has a label. A file without labels (or with some) is a labelling job: `label` may be
missing or null, the pairs have no gold, and no metric is computed for them.

A file larger than `EAGER_BYTES` (64 MB, some 75,000 pairs) is read lazily: split `all` is a `JsonlPairs`, which
parses and checks one line at a time each time it is iterated (a bad row raises, or is skipped, when the stream
reaches it; a duplicate id is caught with a compact id set), so a million-pair file never sits in memory. Such a
file has no train/dev splits: sampling them needs the whole file (label it, or split it first).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from hiera_dspy.data import BadRows, DataError, Dataset, expect_file
from hiera_dspy.data.sampling import make_splits
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair
from hiera_dspy.store.idset import IdSet

REQUIRED = ("id", "query", "item_title", "item_text")
TEXT_FIELDS = REQUIRED + ("query_id", "item_id")  # text, or a number written as text (an id, a year as a title)
JSON_TYPES = {list: "an array", dict: "an object", bool: "a boolean"}
EAGER_BYTES = 64 * 1024 * 1024  # a larger file is read lazily (JsonlPairs)
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


def _parse_line(line: str, scheme: LabelScheme, require_label: bool, seen: dict | None, lineno: int = 0) -> Pair:
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
    if seen is not None:
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


class JsonlPairs:
    """The pairs of a large JSONL file, read lazily: each iteration parses the file again, one line at a time, with
    the checks of `read_pairs` (a bad row raises a DataError naming file and line, or with `on_bad_row="skip"` is
    recorded in `skipped`, once per pass). `pairs[:n]` is the first n pairs, read the same way.

    Example:
        >>> pairs = JsonlPairs(Path("million.jsonl"), custom_scheme("Bad,Good"))  # doctest: +SKIP
        >>> sum(1 for _ in pairs)  # doctest: +SKIP
        1000000
    """

    def __init__(self, path: Path, scheme: LabelScheme, *, on_bad_row: str = "error", skipped: list | None = None,
                 limit: int | None = None):
        self.path, self.scheme, self.on_bad_row, self.limit = path, scheme, on_bad_row, limit
        self.skipped = skipped if skipped is not None else []

    def __getitem__(self, index: slice) -> JsonlPairs:
        if not isinstance(index, slice) or index.start or index.step or index.stop is None:
            raise TypeError("a lazily read split only takes a head slice, pairs[:n]")
        return JsonlPairs(self.path, self.scheme, on_bad_row=self.on_bad_row, skipped=self.skipped,
                          limit=min(index.stop, self.limit or index.stop))

    def __iter__(self) -> Iterator[Pair]:
        bad = BadRows(self.on_bad_row)
        ids = IdSet()
        count = 0
        with open(self.path, "rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                if self.limit is not None and count >= self.limit:
                    break
                if not raw.strip():
                    continue
                try:
                    pair = _parse_line(_decode(raw), self.scheme, False, None, lineno)
                    if not ids.add(pair.id):
                        raise DataError(f'field "id": duplicate id "{pair.id}" (first on line '
                                        f'{self._first_line(pair.id, lineno)})')
                except DataError as exc:
                    bad(self.path, str(exc), line=lineno)
                    continue
                count += 1
                yield pair
        self.skipped[:] = bad.rows
        if not count:
            raise DataError(f"{self.path}: no pairs found" + (" (every row was bad)" if bad.rows else "")
                            + f"; expected {FORMAT}")

    def _first_line(self, pair_id: str, before: int) -> int | str:
        """The line where `pair_id` first occurs (an exact second look after the id set saw its hash again)."""
        with open(self.path, "rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                if lineno >= before:
                    break
                try:
                    if str(json.loads(raw).get("id")) == pair_id:
                        return lineno
                except (ValueError, AttributeError):
                    continue
        return "?"


def load(arg: str | None, scheme: LabelScheme | None, *, on_bad_row: str = "error", **_) -> Dataset:
    """A user's JSONL pairs under a given scheme: split `all`, plus train/dev when every pair has a label (a file
    over EAGER_BYTES: split `all` only, read lazily)."""
    if not arg:
        raise DataError("jsonl: needs a path, e.g. --dataset jsonl:my_pairs.jsonl")
    if scheme is None:
        raise DataError("jsonl: needs a label scheme: --scheme msrd|esci|wands|homedepot|trec or --labels 'A,B,C'")
    BadRows(on_bad_row)  # an unknown policy is refused before any file is read
    skipped: list = []
    path = expect_file(Path(arg), FORMAT)
    stat = path.stat()
    source = {"path": str(path.resolve()), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}  # a fingerprint
    if stat.st_size > EAGER_BYTES:
        pairs = JsonlPairs(path, scheme, on_bad_row=on_bad_row, skipped=skipped)
        return Dataset(name=f"jsonl:{arg}", scheme=scheme, splits={"all": pairs}, default_split="all",
                       notes={"skipped_rows": skipped, "lazy": True, "source": source})
    pairs = read_pairs(path, scheme, require_label=False, on_bad_row=on_bad_row, skipped=skipped)
    splits = {"all": pairs}
    if all(p.label is not None for p in pairs):
        splits.update(make_splits(pairs, scheme))
    return Dataset(name=f"jsonl:{arg}", scheme=scheme, splits=splits, default_split="all",
                   notes={"skipped_rows": skipped, "source": source})
