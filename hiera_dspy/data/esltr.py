"""`esltr:FILE`: an Elasticsearch Learning to Rank judgment list, `grade qid:N # docid query` a line.

The plugin's documentation (o19s/elasticsearch-learning-to-rank, demo/judgments.py and demo/sample_judgments.txt)
reads "<judgment> qid:<queryid> # docId <rest of comment ignored...>" lines, and names each query's keywords in
header comments `# qid:1: rambo`:

    # qid:1: rambo
    4	qid:1 #	7555	Rambo
    3	qid:1 #	1370	Rambo III

Quepid reads and writes the same lines with the query's text as the rest of the comment ("rating qid:queryid #
docid query, eg 3 qid:1 # 1370 star trek"). Both are read: a
query's text is its header keywords when the file has them (the rest of a line is then the document's title, as in
the plugin's demo), else the rest of its lines. Feature columns (`1:0.5`) between the qid and the `#` are ignored, so
a RankLib training file reads too. The grade is a grade of the scheme (`hiera_dspy.data.tool_lists`; default
`trec`, 0-3; the plugin's demo grades 0-4: pass `--labels` with five grades). A line without `qid:` (a query without
an id), without a `#` and docid, with two texts for one qid, or with a grade outside the scheme is a bad row (a
DataError naming file and line, or skipped and counted with `on_bad_row="skip"`).

Written (`write`), the list is the plugin's form: a `# qid:N: keywords` header for every query with a text, first,
then `grade qid:N # docid title` lines (the document's title where the judgment has one), so the plugin's demo loader
reads it. N is the query's id when every id is a number (the demo's loader reads digits only), else 1, 2, ... in the
table's order (`hiera_dspy.data.known_qrels.token_ids`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from hiera_dspy.data import DataError, expect_file
from hiera_dspy.data.known import Known
from hiera_dspy.data.known_qrels import token_ids
from hiera_dspy.data.tool_lists import ListReader
from hiera_dspy.labels import LabelScheme

FORMAT = "an LTR judgment list, `grade qid:N # docid query` a line (`# qid:N: keywords` headers optional)"
HEADER = re.compile(r"#\s*qid:(\S+?):\s+(.*\S)\s*$")
AS_DATASET = True  # --dataset esltr:FILE, with a corpus beside FILE


def read_known(path: str | Path, scheme: LabelScheme, *, on_bad_row: str = "error",
               skipped: list | None = None, **_) -> Known:
    """The judgments of an LTR judgment list."""
    path = expect_file(Path(path), FORMAT)
    try:
        lines = path.read_bytes().decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start}); re-encode the file as UTF-8") from None
    keywords = {m.group(1): m.group(2) for text in lines if (m := HEADER.match(text.strip()))}
    reader = ListReader(path, scheme, on_bad_row, skipped)
    texts: dict[str, tuple[str, int]] = {}  # qid -> (its text from the lines, the first line giving it)
    rows = []
    for lineno, text in enumerate(lines, 1):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        left, hash_, comment = text.partition("#")
        cols = left.split()
        qid = next((c[4:] for c in cols[1:2] if c.startswith("qid:")), "")
        if not qid:
            reader.bad(lineno, "no `qid:N` after the grade: a judgment needs its query's id; expected "
                               "`grade qid:N # docid query`")
            continue
        docid, rest = _comment(comment)
        if not hash_ or not docid:
            reader.bad(lineno, "no `# docid` after the qid; expected `grade qid:N # docid query`")
            continue
        if qid not in keywords and rest:
            first = texts.setdefault(qid, (rest, lineno))
            if rest != first[0]:
                reader.bad(lineno, f"qid:{qid} is {first[0]!r} on line {first[1]} and {rest!r} here; one id, "
                                   f"one query")
                continue
        rows.append((lineno, qid, docid, cols[0], rest))
    for lineno, qid, docid, grade, rest in rows:
        if qid in keywords:  # the plugin's form: the query in the header, the document's title on the line
            reader.add(lineno, qid, docid, grade, query=keywords[qid], item_title=rest)
        else:
            reader.add(lineno, qid, docid, grade, query=texts[qid][0] if qid in texts else None)
    return reader.known(FORMAT)


def _comment(comment: str) -> tuple[str, str]:
    """(docid, the rest) of a line's comment: `# 1370 star trek`, or the demo's `#<TAB>7555<TAB>Rambo III`."""
    parts = comment.strip().split(None, 1)
    return (parts[0], parts[1].strip()) if len(parts) == 2 else (parts[0] if parts else "", "")


def looks_like(path: Path, head: str) -> bool:
    """A file whose first line is a `# qid:N: keywords` header or a `grade qid:N` judgment."""
    return path.is_file() and bool(re.match(r"(#\s*qid:|\d+(\.\d+)?\s+qid:)", head))


def write(known: Known, **_) -> Iterator[str]:
    """The LTR judgment list: the `# qid:N: keywords` headers, then `grade qid:N # docid title` lines."""
    ids = token_ids(known.by_query, keep=str.isdigit)
    for query_id, judgments in known.by_query.items():
        text = next((j.query for j in judgments if j.query and j.query.strip()), None)
        if text is not None:
            yield f"# qid:{ids[query_id]}: {' '.join(text.split())}\n"
    for j in known:
        title = " ".join(j.item_title.split()) if j.item_title else ""
        yield f"{j.grade} qid:{ids[j.query_id]} # {j.item_id}{f' {title}' if title else ''}\n"
