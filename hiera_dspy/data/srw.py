"""`srw:FILE`: an OpenSearch Search Relevance Workbench judgment list, the JSON body of its import API.

The format is that of the documented request `PUT _plugins/_search_relevance/judgments` with `"type":
"IMPORT_JUDGMENT"` (OpenSearch documentation, "Search Relevance Workbench > Judgments > Importing judgments"):

    {"name": "Imported Judgments", "description": "Judgments generated outside SRW", "type": "IMPORT_JUDGMENT",
     "judgmentRatings": [{"query": "red dress",
                          "ratings": [{"docId": "B077ZJXCTS", "rating": "3.000"}, ...]}, ...]}

"Judgments are grouped by query, each containing a nested map in which document IDs (`docId`) serve as keys and
their floating-point ratings serve as values." The response of `GET _plugins/_search_relevance/judgments/ID` is read
too (its judgment list in `hits.hits[0]._source`). SRW knows a query by its text, so the query's text is its id here.
A rating is a grade of the scheme, written as a number or as text ("3.000"); a whole value is required
(`hiera_dspy.data.tool_lists`; default `trec`, 0-3: a COEC click model's fractional judgments are not grades).
A query without its `query` text, a rating without its `docId`, or a rating outside the scheme is a bad row named by
its JSON path (`judgmentRatings[1].ratings[3].rating`): a DataError, or skipped and counted with `on_bad_row="skip"`.

Written (`write`), the list is that import body, one query's ratings a line (still one JSON document), each rating
`{"docId", "rating": "3.000"}` as SRW's documentation writes them; `name` and `description` options.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from hiera_dspy.data import DataError, expect_file
from hiera_dspy.data.known import Known
from hiera_dspy.data.tool_lists import ListReader, query_text
from hiera_dspy.labels import LabelScheme

FORMAT = ('the JSON of SRW\'s judgment import ({"name", "type": "IMPORT_JUDGMENT", "judgmentRatings": [{"query", '
          '"ratings": [{"docId", "rating"}]}]})')
AS_DATASET = True  # --dataset srw:FILE, with a corpus beside FILE


def judgment_list(doc, path: Path) -> dict:
    """The judgment list of an import body, or of a GET response (`hits.hits[0]._source`); DataError otherwise."""
    if isinstance(doc, dict) and "judgmentRatings" not in doc:
        hits = (doc.get("hits") or {}).get("hits") if isinstance(doc.get("hits"), dict) else None
        if isinstance(hits, list) and len(hits) == 1 and isinstance(hits[0], dict):
            doc = hits[0].get("_source", {})
    if not isinstance(doc, dict) or not isinstance(doc.get("judgmentRatings"), list):
        raise DataError(f'{path}, field judgmentRatings: missing or not a list; expected {FORMAT}')
    return doc


def read_known(path: str | Path, scheme: LabelScheme, *, on_bad_row: str = "error",
               skipped: list | None = None, **_) -> Known:
    """The judgments of an SRW judgment list."""
    path = expect_file(Path(path), FORMAT)
    try:
        doc = json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start}); re-encode the file as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    reader = ListReader(path, scheme, on_bad_row, skipped)
    for i, entry in enumerate(judgment_list(doc, path)["judgmentRatings"]):
        at = f"judgmentRatings[{i}]"
        if not isinstance(entry, dict):
            reader.bad(at, f"expected an object with \"query\" and \"ratings\", got {type(entry).__name__}")
            continue
        query = entry.get("query")
        if not isinstance(query, str) or not query.strip():
            reader.bad(f"{at}.query", "missing or empty; every entry needs its query's text (SRW's id of a query)")
            continue
        ratings = entry.get("ratings")
        if not isinstance(ratings, list):
            reader.bad(f"{at}.ratings", "missing or not a list of {\"docId\", \"rating\"}")
            continue
        for k, rating in enumerate(ratings):
            where = f"{at}.ratings[{k}]"
            doc_id = rating.get("docId") if isinstance(rating, dict) else None
            if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or not str(doc_id).strip():
                reader.bad(f"{where}.docId", "missing or empty; every rating needs its document's id")
                continue
            value = rating.get("rating")
            reader.add(f"{where}.rating" if value is None else where, query, str(doc_id), value, query=query)
    return reader.known(FORMAT)


def looks_like(path: Path, head: str) -> bool:
    """A `.json` file (OpenSearch's import body or GET response; a `.jsonl` is our own labelled pairs)."""
    return path.is_file() and path.suffix == ".json" and head.startswith("{")


def write(known: Known, *, name: str = "hiera-dspy judgments", description: str = "", **_) -> Iterator[str]:
    """SRW's judgment import body, one query's ratings a line (still one JSON document)."""
    head = {"name": name, "description": description, "type": "IMPORT_JUDGMENT"}
    yield json.dumps(head, ensure_ascii=False)[:-1] + ', "judgmentRatings": [\n'
    for i, judgments in enumerate(known.by_query.values()):
        entry = {"query": query_text(judgments[0], "SRW"),
                 "ratings": [{"docId": j.item_id, "rating": f"{j.grade:.3f}"} for j in judgments]}
        yield ("," if i else "") + json.dumps(entry, ensure_ascii=False) + "\n"
    yield "]}\n"
