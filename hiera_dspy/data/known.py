"""Known judgments: what a benchmark or a team has already judged, keyed by query.

A `Known` table is the one typed form every judgment-list reader returns (TREC qrels, labelled JSONL, and the
formats of the tools teams use) and the one form a judge reads as evidence about a query (the feedback stage). Each
`KnownJudgment` keeps where it was read (`source`, "file:line"), so an error about it can name the line.

`Known` is a plain value: a mapping of query id to that query's judgments, in the order they were read, with the
scheme they are graded on. It never reads a file itself (the readers in `data/` do) and never decides anything.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from hiera_dspy.labels import LabelScheme

KINDS = ("auto", "sample", "pool")  # what known judgments are: a random sample, a pool or either (`methods.shares`)


@dataclass(frozen=True)
class KnownJudgment:
    """One judged (query, item) pair: `grade` is an index of the scheme's labels (0 least relevant); `item_text`
    (and `item_title`) where the reader could find the item's text, None otherwise; `query` the query's text where
    known; `source` where it was read ("qrels.txt:12")."""

    query_id: str
    item_id: str
    grade: int
    item_title: str = ""
    item_text: str | None = None
    query: str | None = None
    source: str = ""


@dataclass(frozen=True)
class Known:
    """A query's known judgments for every query that has some (`by_query`), graded on `scheme`."""

    scheme: LabelScheme
    by_query: Mapping[str, tuple[KnownJudgment, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, scheme: LabelScheme, judgments: Iterable[KnownJudgment]) -> "Known":
        """The table of `judgments`, grouped by query in the order they come."""
        grouped: dict[str, list[KnownJudgment]] = {}
        for j in judgments:
            grouped.setdefault(j.query_id, []).append(j)
        return cls(scheme=scheme, by_query={q: tuple(js) for q, js in grouped.items()})

    def for_query(self, query_id: str) -> tuple[KnownJudgment, ...]:
        """The query's known judgments (empty when it has none)."""
        return self.by_query.get(query_id, ())

    def __iter__(self) -> Iterator[KnownJudgment]:
        for js in self.by_query.values():
            yield from js

    def __len__(self) -> int:
        return sum(len(js) for js in self.by_query.values())

    def keys(self) -> set[tuple[str, str]]:
        """Every judged (query id, item id)."""
        return {(j.query_id, j.item_id) for j in self}

    def counts(self) -> dict[str, int]:
        """How many known judgments each query has."""
        return {q: len(js) for q, js in self.by_query.items()}

    def without(self, keys: set[tuple[str, str]]) -> "Known":
        """The table less the judgments of the (query id, item id) pairs in `keys`."""
        return Known.of(self.scheme, (j for j in self if (j.query_id, j.item_id) not in keys))

    def digest(self) -> str:
        """The first 12 hex digits of a SHA-256 of what a judge reads (scheme, ids, grades and texts, in order; not
        where they were read): the same judgments read from another file or place give the same digest."""
        h = hashlib.sha256(json.dumps(self.scheme.labels).encode())
        for j in self:
            h.update(json.dumps([j.query_id, j.item_id, j.grade, j.item_title, j.item_text, j.query]).encode())
        return h.hexdigest()[:12]


@runtime_checkable
class ReadsKnown(Protocol):
    """A judge that reads its queries' known judgments as evidence (the feedback stage). The job that judges calls
    `read_known` once, before any pair, with the known judgments of the set; the judge returns how many judgments it
    will read per query (those it can use: graded on its scheme, with an item text). A judge that is not a ReadsKnown
    judges every pair alone, as before; the job says so in its report."""

    def read_known(self, known: Known) -> dict[str, int]:
        """Read the set's known judgments (once, before any pair); returns query id -> the judgments it will use."""
        ...
