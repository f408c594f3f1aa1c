"""TREC qrels as known judgments: `qid iter docid grade` a line, the grade an index of the scheme's labels.

Written (`write`), a qrels line is `qid 0 docid grade`. TREC knows a query by a token id: where a table's query ids
are not all tokens (ids read from Quepid or SRW, or pairs without a `query_id`, are query texts), the queries are
numbered 1, 2, ... in the table's order (`token_ids`, which `eval.label`'s qrels.txt uses too)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from hiera_dspy.data import DataError
from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.data.trec import QRELS_FORMAT, Bad, _lines, qrel_of, read_qrels
from hiera_dspy.labels import LabelScheme

SCALE_HINT = ("known judgments are graded on the scheme of the pairs judged (--scheme/--labels): map the file's "
              "grades onto it, or judge on the file's scheme")


def read(path: Path, scheme: LabelScheme, counts: Counter) -> Iterator[KnownJudgment]:
    """Every qrels line as a judgment without texts (the ids only); a bad line is a DataError naming it."""
    for lineno, text in _lines(path, f"TREC qrels file ({QRELS_FORMAT})"):
        try:
            if isinstance(text, Bad):
                raise text
            qid, docid, grade = qrel_of(text, scheme)
        except Bad as exc:
            hint = SCALE_HINT if "outside the scheme" in str(exc) else f"a qrels line is `{QRELS_FORMAT}`"
            raise DataError(f"{path}, line {lineno}: {exc}; {hint}") from None
        yield KnownJudgment(qid, docid, grade, source=f"{path}:{lineno}")


def read_known(path: str | Path, scheme: LabelScheme, *, on_bad_row: str = "error",
               skipped: list | None = None) -> Known:
    """The qrels as a Known table, a bad line skipped and recorded with `on_bad_row="skip"` (no query texts: qrels
    carry none; `read_list`, for a list exported to another format)."""
    lines: dict = {}
    qrels = read_qrels(path, scheme, on_bad_row=on_bad_row, skipped=skipped, lines=lines)
    return Known.of(scheme, (KnownJudgment(q, d, g, source=f"{path}:{lines[q, d]}") for (q, d), g in qrels.items()))


def looks_like(path: Path, head: str) -> bool:
    """A file whose first line has four whitespace-separated columns, the last an integer or the second TREC's
    iteration column (0 or Q0: then a bad grade is the reader's error, naming its line and column)."""
    cols = head.split()
    return path.is_file() and len(cols) == 4 and (cols[3].lstrip("-").isdigit() or cols[1] in ("0", "Q0"))


def is_token(query_id: str) -> bool:
    """Whether a query id can stand as one column of a whitespace-separated line."""
    return bool(query_id) and not any(c.isspace() for c in query_id)


def token_ids(query_ids: Iterable[str], keep: Callable[[str], bool] = is_token) -> dict[str, str]:
    """query id -> the id a token format writes: itself when every id passes `keep` (a token), else 1, 2, ... in
    order."""
    ids = list(dict.fromkeys(query_ids))
    if all(keep(q) for q in ids):
        return {q: q for q in ids}
    return {q: str(i) for i, q in enumerate(ids, 1)}


def write(known: Known, **_) -> Iterator[str]:
    """TREC qrels: `qid 0 docid grade`."""
    ids = token_ids(known.by_query)
    for j in known:
        yield f"{ids[j.query_id]} 0 {j.item_id} {j.grade}\n"
