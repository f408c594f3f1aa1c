"""`quepid:FILE`: Quepid's ratings CSV, the file its "Import ratings" dialog takes and its "basic" export writes.

The format, in Quepid's own words (the import dialog, app/assets/javascripts/components/import_ratings/_modal.html):
"The CSV file should have the headers: `query,docid,rating` and lines similar to:"

    query,docid,rating
    star wars,3574597,3
    star wars,3557771,
    star trek,,

A row with a docid and a rating is a judgment. A row without a rating (a document listed but not rated) or without
a docid (a query with no rated document) is how Quepid writes what is not rated yet: not a judgment, and not a bad
row; they are counted apart (`counts["unrated"]`, the count a `--known` read reports). Fields are quoted as CSV quotes them (`"I like, commas!"`); more columns are
ignored. Quepid knows a query by its text, so the query's text is its id here. The rating is a grade of the scheme
(`hiera_dspy.data.tool_lists`; default `trec`, 0-3). A row with a rating but no query, or a rating outside the
scheme, is a bad row (a DataError naming the file and line, or skipped and counted with `on_bad_row="skip"`).

Written (`write`), the ratings CSV has the header and one row a judgment, CSV-quoted where needed; a query's text
that starts with `=`, `+`, `-` or `@` is written after a space, as Quepid's own export writes it, so that a
spreadsheet opening the file reads it as text, not as a formula (OWASP's "CSV injection"). Reading drops that one
space again. A judgment whose query has no text cannot be written: Quepid knows a query by its text.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from hiera_dspy.data import DataError, expect_file
from hiera_dspy.data.known import Known
from hiera_dspy.data.tool_lists import ListReader, query_text
from hiera_dspy.labels import LabelScheme

COLUMNS = ("query", "docid", "rating")
FORMAT = "Quepid's ratings CSV with the header query,docid,rating"
AS_DATASET = True  # --dataset quepid:FILE, with a corpus beside FILE
FORMULA = ("=", "+", "-", "@")  # a cell starting so is a formula to a spreadsheet: Quepid writes a space before it


def read_known(path: str | Path, scheme: LabelScheme, *, on_bad_row: str = "error", skipped: list | None = None,
               unrated: list | None = None, counts: Counter | None = None) -> Known:
    """The judgments of a Quepid ratings CSV; `unrated`, when given, receives the line of each row not rated yet,
    and `counts["unrated"]` how many there are."""
    path = expect_file(Path(path), FORMAT)
    reader = ListReader(path, scheme, on_bad_row, skipped)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start}); re-encode the file as UTF-8 (Quepid's "
                        f"advice for CSV files too)") from None
    rows = csv.reader(io.StringIO(text, newline=""))
    header = next(rows, None)
    names = [h.strip().lower() for h in header or []]
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise DataError(f"{path}, line 1: the header {','.join(header or []) or '(empty file)'!r} has no "
                        f"{', '.join(missing)} column; expected {FORMAT}")
    at = {c: names.index(c) for c in COLUMNS}
    for line, row in _numbered(rows, path):
        if not any(cell.strip() for cell in row):
            continue
        query, docid, rating = (row[at[c]] if at[c] < len(row) else "" for c in COLUMNS)
        docid, rating = docid.strip(), rating.strip()  # the query's text is kept as written (it is its id) ...
        if query[:1] == " " and query[1:2] in FORMULA:  # ... but for the space Quepid writes before a formula
            query = query[1:]
        if not query.strip():
            reader.bad(line, "column query: empty; every row needs its query's text (Quepid's id of a query)")
            continue
        if not rating:  # Quepid's form of a document, or a query, not rated yet
            if unrated is not None:
                unrated.append(line)
            if counts is not None:
                counts["unrated"] += 1
            continue
        if not docid:
            reader.bad(line, f"column docid: empty beside rating {rating!r}; a rating needs its document's id")
            continue
        reader.add(line, query, docid, rating, query=query)
    return reader.known(FORMAT)


def _numbered(rows, path: Path):
    """(line, row) of each CSV row; a malformed row (an unclosed quote) is a DataError naming its line."""
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DataError(f"{path}, line {rows.line_num}: not CSV ({exc}); check the quotes") from None
        yield rows.line_num, row


def looks_like(path: Path, head: str) -> bool:
    """A file whose first line is the header query,docid,rating (any case, quoted or not)."""
    return path.is_file() and [c.strip().strip('"').lower() for c in head.split(",")][:3] == list(COLUMNS)


def write(known: Known, **_) -> Iterator[str]:
    """Quepid's ratings CSV (`query,docid,rating`), a query's text guarded against spreadsheet formulas."""
    buffer = io.StringIO()
    out = csv.writer(buffer, lineterminator="\n")
    out.writerow(COLUMNS)
    yield buffer.getvalue()
    for j in known:
        buffer.seek(0)
        buffer.truncate()
        text = query_text(j, "Quepid")
        out.writerow((f" {text}" if text.startswith(FORMULA) else text, j.item_id, j.grade))
        yield buffer.getvalue()
