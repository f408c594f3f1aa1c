"""The MSRD judgments pool as pairs: split `pool` of `--dataset msrd` (a large train split; `optimize.compile --split
pool`).

`judgments-pool.tsv.gz` (TAB-separated query_id, query, doc_id, grade; 115,247 judgments of 4,884 queries) holds every
MSRD judgment of the queries of the bundled sample's train and dev pools. As a train split it leaves out every query
of the bundled dev split (`dev.jsonl`), so a judge fitted on the pool is still scored on queries it never saw. A pair
reads like a bundled one: id `msrd:QID:DOC`, item title and text built from the catalog row exactly as the bundled
pairs were (`pool_item_text`: the catalog fields of `msrd.CATALOG_FIELDS`, a year of 0 left out), label from the grade
(1 Relevant, 0 Irrelevant). A judged movie missing from the catalog is skipped and counted.

The split is read on first use (`LazyPairs`): loading `--dataset msrd` for its 300-pair splits costs nothing extra.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from hiera_dspy.data import DataError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair

POOL_FILE = "judgments-pool.tsv.gz"
POOL_COLUMNS = ("query_id", "query", "doc_id", "grade")


def pool_item_text(row: dict, fields: Sequence[str]) -> str:
    """A catalog row's item text as the bundled pairs have it: `Name: value` lines of `fields`, lists joined by ", ",
    empty values and a year of 0 left out."""
    parts = []
    for name in fields:
        value = row.get(name)
        if isinstance(value, list):
            value = ", ".join(map(str, value))
        if value in (None, "", []) or (name == "year" and value == 0):
            continue
        parts.append(f"{name.capitalize()}: {value}")
    return "\n".join(parts)


def read_catalog_rows(path: Path) -> dict[str, dict]:
    """The movie catalog's raw rows by id."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return {str(row["id"]): row for row in map(json.loads, fh) if isinstance(row, dict) and "id" in row}


def read_pool(path: Path, catalog: dict[str, dict], scheme: LabelScheme, fields: Sequence[str],
              exclude_queries: set[str] = frozenset()) -> tuple[list[Pair], dict]:
    """The pool's pairs (queries in `exclude_queries` left out) and a count of what was skipped and why."""
    pairs, skipped = [], {"excluded_queries": 0, "not_in_catalog": 0}
    excluded: set[str] = set()
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        if tuple(header) != POOL_COLUMNS:
            raise DataError(f"{path}, line 1: expected the TAB-separated columns {', '.join(POOL_COLUMNS)}; got {header}")
        for lineno, line in enumerate(fh, 2):
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 4:
                raise DataError(f"{path}, line {lineno}: expected 4 TAB-separated columns, got {len(cols)}")
            qid, query, doc, grade = cols
            if qid in exclude_queries:
                excluded.add(qid)
                continue
            row = catalog.get(doc)
            if row is None:
                skipped["not_in_catalog"] += 1
                continue
            pairs.append(Pair(f"msrd:{qid}:{doc}", query, str(row["title"]), pool_item_text(row, fields),
                              scheme.from_raw(int(grade)), qid, doc))
    skipped["excluded_queries"] = len(excluded)
    return pairs, skipped


class LazyPairs(Sequence):
    """A split read on first use: a Sequence of Pair (len, index, slice, iterate) over `load()`'s list."""

    def __init__(self, load: Callable[[], list[Pair]]):
        self._load, self._pairs = load, None

    @property
    def pairs(self) -> list[Pair]:
        """The split's pairs (read now if not yet)."""
        if self._pairs is None:
            self._pairs = self._load()
        return self._pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index):
        return self.pairs[index]

    def __iter__(self) -> Iterator[Pair]:
        return iter(self.pairs)


def pool_split(folder: Path, scheme: LabelScheme, fields: Sequence[str], dev: Sequence[Pair],
               notes: dict) -> LazyPairs | None:
    """The lazy `pool` split of an MSRD folder (None without a pool file): every judged pair of the pool's queries
    except the dev split's; `notes["pool"]` gets the counts once read."""
    path = folder / POOL_FILE
    if not path.is_file():
        return None
    dev_queries = {p.query_id for p in dev}

    def load() -> list[Pair]:
        catalog_path = folder / "movies-corpus.jsonl.gz"
        if not catalog_path.is_file():
            raise DataError(f"{folder}: {POOL_FILE} needs movies-corpus.jsonl.gz beside it for the item texts")
        pairs, skipped = read_pool(path, read_catalog_rows(catalog_path), scheme, fields, dev_queries)
        notes["pool"] = {"pairs": len(pairs), **skipped}
        return pairs

    return LazyPairs(load)
