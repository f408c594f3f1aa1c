"""Judgment lists written in the formats of the tools teams use: one writer a format, one registry (`WRITERS`).

Every writer takes a `Known` table (`hiera_dspy.data.known`: what `hiera_dspy.data.quepid`, `.srw`, `.esltr` and
the qrels reader return, and what `hiera_dspy.review.list_sources` makes of a run) and writes the file atomically,
queries in the table's order, judgments in their order. The grade is the label's index in the scheme.

- qrels:  `qid 0 docid grade` (TREC).
- quepid: Quepid's ratings CSV, header `query,docid,rating`, CSV-quoted where needed (its import dialog's format).
- srw:    the JSON body of OpenSearch SRW's judgment import (`"type": "IMPORT_JUDGMENT"`, `judgmentRatings`, each
          rating `{"docId", "rating": "3.000"}` as its documentation writes them); `name` and `description` options.
- esltr:  `grade qid:N # docid query` lines (the Elasticsearch LTR plugin's judgment list, as Quepid writes it).
Quepid and SRW know a query by its text; TREC and LTR by a token id. Where the table's query ids are not all tokens
(ids read from Quepid or SRW are query texts), qrels and esltr number the queries 1, 2, ... in table order. A
judgment whose query has no text cannot be written as quepid or srw: a RequestError names it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.errors import RequestError
from hiera_dspy.store.files import write_lines


def token_ids(known: Known) -> dict[str, str]:
    """query id -> the id a token format writes: itself when every id is a token, else 1, 2, ... in table order."""
    ids = list(known.by_query)
    if all(q and not any(c.isspace() for c in q) for q in ids):
        return {q: q for q in ids}
    return {q: str(i) for i, q in enumerate(ids, 1)}


def query_text(j: KnownJudgment, fmt: str) -> str:
    """The query's text, which `fmt` uses as the query's id; a RequestError when the judgment has none."""
    if j.query is None or not j.query.strip():
        raise RequestError(f"query {j.query_id!r} (judgment {j.source or j.item_id}) has no text, and {fmt} knows a "
                           f"query by its text; export as qrels or esltr instead")
    return j.query


def qrels_lines(known: Known, **_) -> Iterator[str]:
    """TREC qrels: `qid 0 docid grade`."""
    ids = token_ids(known)
    for j in known:
        yield f"{ids[j.query_id]} 0 {j.item_id} {j.grade}\n"


def quepid_lines(known: Known, **_) -> Iterator[str]:
    """Quepid's ratings CSV (`query,docid,rating`)."""
    buffer = io.StringIO()
    out = csv.writer(buffer, lineterminator="\n")
    out.writerow(("query", "docid", "rating"))
    yield buffer.getvalue()
    for j in known:
        buffer.seek(0)
        buffer.truncate()
        out.writerow((query_text(j, "Quepid"), j.item_id, j.grade))
        yield buffer.getvalue()


def srw_lines(known: Known, *, name: str = "hiera-dspy judgments", description: str = "", **_) -> Iterator[str]:
    """SRW's judgment import body, one query's ratings a line (still one JSON document)."""
    head = {"name": name, "description": description, "type": "IMPORT_JUDGMENT"}
    yield json.dumps(head, ensure_ascii=False)[:-1] + ', "judgmentRatings": [\n'
    for i, judgments in enumerate(known.by_query.values()):
        entry = {"query": query_text(judgments[0], "SRW"),
                 "ratings": [{"docId": j.item_id, "rating": f"{j.grade:.3f}"} for j in judgments]}
        yield ("," if i else "") + json.dumps(entry, ensure_ascii=False) + "\n"
    yield "]}\n"


def esltr_lines(known: Known, **_) -> Iterator[str]:
    """The LTR judgment list: `grade qid:N # docid query` (the query's text left out where it has none)."""
    ids = token_ids(known)
    for j in known:
        text = f" {j.query}" if j.query else ""
        yield f"{j.grade} qid:{ids[j.query_id]} # {j.item_id}{text}\n"


# format -> the lines of its file; a new format is one function and one line here
WRITERS: dict[str, Callable[..., Iterator[str]]] = {
    "qrels": qrels_lines, "quepid": quepid_lines, "srw": srw_lines, "esltr": esltr_lines,
}


def write_list(fmt: str, path: str | Path, known: Known, **options) -> Path:
    """Write `known` as a `fmt` judgment list at `path` (atomically; nothing is left behind on an error)."""
    if fmt not in WRITERS:
        raise RequestError(f"unknown judgment-list format {fmt!r}; known: {', '.join(WRITERS)}")
    return write_lines(path, WRITERS[fmt](known, **options))
