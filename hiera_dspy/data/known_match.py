"""A judgment list's queries matched to the pairs' queries: by id, else by normalised text.

Quepid ratings and OpenSearch SRW lists name a query by its text, an Elasticsearch LTR list by an id with the query's
keywords in its header; TREC topics and JSONL pairs name it by an id. A known judgment whose query id is no pair's
takes the id of the pair query whose text is the same once normalised (`normalised`: Unicode-folded, case-folded,
punctuation and runs of spaces as one space), so "Star Wars" in a Quepid export is query 1 of topics.tsv.

A list none of whose queries is a pair's, by id or by text, is an error naming the first few (its judgments would
inform no judgment); the queries it has beyond the pairs' are counted (`outside_queries`, a warning in the job's
closing lines and report.md).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, MutableMapping
from dataclasses import replace

from hiera_dspy.data import DataError
from hiera_dspy.data.known import Known, KnownJudgment

SHOWN = 3  # unmatched queries an error names
_NOT_WORD = re.compile(r"[\W_]+")


def normalised(text: str | None) -> str:
    """`text` as queries are matched: NFKC-folded, case-folded, every run of punctuation and space one space."""
    return _NOT_WORD.sub(" ", unicodedata.normalize("NFKC", text or "").casefold()).strip()


def matched(known: Known, queries: Mapping[str, str], counts: MutableMapping[str, int]) -> Known:
    """`known` with each judgment of a query that is no key of `queries` (the pairs' query id -> text) moved to the
    pair query of the same normalised text, where there is one; counts `matched_queries`, `text_matched_queries`.
    A DataError when no query of the list is one of `queries` (module doc)."""
    by_text: dict[str, str] = {}
    for query_id, text in queries.items():
        by_text.setdefault(normalised(text), query_id)
    moved: dict[str, str] = {}
    for query_id, judgments in known.by_query.items():
        if query_id in queries:
            continue
        target = next((by_text.get(normalised(j.query)) for j in judgments if j.query), None)
        if target is not None:
            moved[query_id] = target
    hit = {q for q in known.by_query if q in queries} | set(moved.values())
    counts["matched_queries"] = len(hit)
    counts["text_matched_queries"] = len(moved)
    if known.by_query and queries and not hit:
        raise DataError(none_matched(known, queries))
    if not moved:
        return known
    return Known.of(known.scheme, _moved(known, moved, queries))


def _moved(known: Known, moved: Mapping[str, str], queries: Mapping[str, str]):
    seen: set[tuple[str, str]] = set()
    for j in known:
        if j.query_id in moved:
            j = replace(j, query_id=moved[j.query_id], query=queries[moved[j.query_id]])
        if (j.query_id, j.item_id) not in seen:  # a list naming a query both ways: its first judgment of an item
            seen.add((j.query_id, j.item_id))
            yield j


def none_matched(known: Known, queries: Mapping[str, str]) -> str:
    """The error of a list that matches none of the pairs' queries: where, its first few queries, the pairs'."""
    first: KnownJudgment = next(iter(known))
    file = first.source.rpartition(":")[0] or first.source or "the known judgments"
    listed = [js[0].query or q for q, js in list(known.by_query.items())[:SHOWN]]
    theirs = [f"{q} ({t!r})" if t and t != q else q for q, t in list(queries.items())[:SHOWN]]
    more = f" and {len(known.by_query) - SHOWN} more" if len(known.by_query) > SHOWN else ""
    return (f"{file}: none of the list's {len(known.by_query)} queries is a query of the pairs to judge, by id or by "
            f"text: {', '.join(map(repr, listed))}{more}; the pairs' queries are {', '.join(theirs)}"
            f"{' ...' if len(queries) > SHOWN else ''}. Give the judgments of these queries, named by the pairs' query "
            "ids or by the queries' text")
