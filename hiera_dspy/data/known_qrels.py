"""TREC qrels as known judgments: `qid iter docid grade` a line, the grade an index of the scheme's labels."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from hiera_dspy.data import DataError
from hiera_dspy.data.known import KnownJudgment
from hiera_dspy.data.trec import QRELS_FORMAT, Bad, _lines, qrel_of
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


def looks_like(path: Path, head: str) -> bool:
    """A file whose first line has four whitespace-separated columns, the last an integer or the second TREC's
    iteration column (0 or Q0: then a bad grade is the reader's error, naming its line and column)."""
    cols = head.split()
    return path.is_file() and len(cols) == 4 and (cols[3].lstrip("-").isdigit() or cols[1] in ("0", "Q0"))
