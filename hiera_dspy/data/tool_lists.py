"""What the readers of the tools' judgment lists share (Quepid ratings, OpenSearch SRW judgments, Elasticsearch LTR
lists; `hiera_dspy.data.quepid`, `.srw`, `.esltr`): a rating read as a grade of the scheme, a table that refuses a
pair judged twice, and the dataset a list becomes when the documents' texts can be found.

- A rating is the index of a label in the scheme (0 = least relevant), as in TREC qrels. It may be written as a
  decimal ("3.000" in SRW's import API) when its value is whole; "2.5", "" or a rating outside the scheme is a bad
  row: a DataError naming the file, the line (or the JSON field) and what to do, or, with `on_bad_row="skip"`,
  recorded and counted.
- These lists carry no document text. As a dataset (`--dataset quepid:FILE`, `srw:FILE`, `esltr:FILE`: `load`, the
  loader of every format in `hiera_dspy.data.FORMATS` whose module says `AS_DATASET = True`) the texts
  come from a corpus file beside FILE, named as in a TREC folder (`corpus.jsonl`, `corpus.jsonl.gz`, `docs.jsonl`,
  `docs.jsonl.gz`: `{"id", "title", "text"}`); the query's text is the list's own. A judgment whose document is not
  in the corpus is a bad row. As known judgments (`read_known`) no corpus is needed: `item_text` is None.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from pathlib import Path

from hiera_dspy.data import FORMATS, BadRows, DataError, Dataset
from hiera_dspy.data.judged import judged_dataset
from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.data.trec import read_corpus
from hiera_dspy.errors import HieraError, RequestError
from hiera_dspy.labels import LabelScheme, get_scheme

DEFAULT_SCHEME = "trec"  # 0-3, the scale of Quepid's default scorers and of SRW's documented example
CORPUS_NAMES = ("corpus.jsonl", "corpus.jsonl.gz", "docs.jsonl", "docs.jsonl.gz")


def scale(scheme: LabelScheme) -> str:
    """The scheme's grades as an error message shows them: `'trec' (0..3: 0=Irrelevant, ...)`."""
    top = len(scheme.labels) - 1
    return f"{scheme.name!r} (0..{top}: {', '.join(f'{i}={lab}' for i, lab in enumerate(scheme.labels))})"


def rating_grade(value, scheme: LabelScheme) -> int:
    """A rating (an int, or a number written as text, "3" or "3.000") as a grade of `scheme`; ValueError saying
    what is wrong and what to do otherwise."""
    text = str(value).strip() if value is not None else ""
    if text == "" or isinstance(value, bool):
        raise HieraError("the rating is empty; give each judged document a rating")
    try:
        number = float(text)
    except ValueError:
        raise HieraError(f"rating {text!r} is not a number") from None
    if not math.isfinite(number) or number != int(number):
        raise HieraError(f"rating {text!r} is not a whole grade; round the ratings to grades of the scheme "
                         f"{scale(scheme)}")
    grade = int(number)
    if not 0 <= grade < len(scheme.labels):
        raise HieraError(f"rating {text!r} is outside the scheme {scale(scheme)}; pass --labels or --scheme with "
                         f"a grade for every rating")
    return grade


class ListReader:
    """The judgments of one file as they are read: `add` one (a pair judged twice is a bad row, as in qrels), `bad`
    for a row that cannot be read; `known()` the table. Rows are named by `where` ("line 12", or a JSON path)."""

    def __init__(self, path: Path, scheme: LabelScheme, on_bad_row: str = "error", skipped: list | None = None):
        self.path, self.scheme = path, scheme
        self.rows = BadRows(on_bad_row)
        self.skipped = skipped
        self.judgments: list[KnownJudgment] = []
        self.first: dict[tuple[str, str], str] = {}

    def bad(self, where: str | int, problem: str) -> None:
        """One row that cannot be read: raise (error) or count it (skip)."""
        if isinstance(where, int):
            self.rows(self.path, problem, line=where)
        else:
            self.rows(self.path, problem, row=where)

    def add(self, where: str | int, query_id: str, item_id: str, rating, *, query: str | None = None,
            item_title: str = "") -> None:
        """One judgment; its rating read on the scheme, a second judgment of the same pair a bad row."""
        try:
            grade = rating_grade(rating, self.scheme)
        except ValueError as exc:
            self.bad(where, str(exc))
            return
        at = f"line {where}" if isinstance(where, int) else where
        first = self.first.setdefault((query_id, item_id), at)
        if first != at:
            self.bad(where, f"query {query_id!r} document {item_id!r} judged twice (first at {first}); keep one")
            return
        self.judgments.append(KnownJudgment(query_id=query_id, item_id=item_id, grade=grade, item_title=item_title,
                                            query=query, source=f"{self.path}:{at.removeprefix('line ')}"))

    def known(self, expected: str) -> Known:
        """The table read; a DataError when the file held no judgment (what the format expects is said)."""
        if self.skipped is not None:
            self.skipped.extend(self.rows.rows)
        if not self.judgments:
            every = f" ({len(self.rows.rows)} bad rows skipped)" if self.rows.rows else ""
            raise DataError(f"{self.path}: no judgments found{every}; expected {expected}")
        return Known.of(self.scheme, self.judgments)


def query_text(j: KnownJudgment, fmt: str) -> str:
    """The query's text, which the writer of `fmt` (Quepid, SRW) uses as the query's id; a RequestError when the
    judgment has none."""
    if j.query is None or not j.query.strip():
        raise RequestError(f"query {j.query_id!r} (judgment {j.source or j.item_id}) has no text, and {fmt} knows a "
                           f"query by its text; export as qrels or esltr instead")
    return j.query


Reader = Callable[..., Known]  # read_known(path, scheme, *, on_bad_row, skipped) -> Known


def corpus_beside(path: Path, fmt: str) -> Path:
    """The corpus file in the folder of the list at `path`; a DataError saying where to put one."""
    present = [path.parent / name for name in CORPUS_NAMES if (path.parent / name).is_file()]
    if not present:
        raise DataError(f"{path}: a {fmt} list carries no document texts; put a corpus.jsonl "
                        f'({{"id", "title", "text"}} a line) beside it, or read it as known judgments (--known)')
    if len(present) > 1:
        raise DataError(f"{path.parent}: {len(present)} corpus files ({', '.join(p.name for p in present)}); keep one")
    return present[0]


def load(arg: str | None, scheme: LabelScheme | None, *, dataset: str, on_bad_row: str = "error", **_) -> Dataset:
    """`--dataset FORMAT:FILE` (`dataset` the format's name): the list as labelled pairs, with the format's
    `read_known` (`list_dataset`)."""
    read = importlib.import_module(FORMATS[dataset]).read_known
    return list_dataset(dataset, arg, scheme, read, on_bad_row=on_bad_row)


def list_dataset(fmt: str, arg: str | None, scheme: LabelScheme | None, read: Reader, *,
                 on_bad_row: str = "error") -> Dataset:
    """`--dataset FMT:FILE`: the list's judgments as labelled pairs, the texts from the corpus beside FILE (module
    doc); splits as for a TREC folder (`hiera_dspy.data.judged`)."""
    if not arg:
        raise DataError(f"{fmt}: needs a file, e.g. --dataset {fmt}:judgments (with corpus.jsonl beside it)")
    path = Path(arg)
    scheme = scheme or get_scheme(DEFAULT_SCHEME)
    bad = BadRows(on_bad_row)
    known = read(path, scheme, on_bad_row=on_bad_row, skipped=bad.rows)
    corpus = read_corpus(corpus_beside(path, fmt), on_bad_row=on_bad_row, skipped=bad.rows)
    topics: dict[str, str] = {}
    qrels: dict[tuple[str, str], int] = {}
    where: dict[tuple[str, str], str] = {}
    for j in known:
        if j.query is None:
            bad(path, f"query {j.query_id!r} has no text; a judgment needs its query's text",
                **_at(j.source.rpartition(":")[2]))
            continue
        topics.setdefault(j.query_id, j.query)
        qrels[j.query_id, j.item_id] = j.grade
        where[j.query_id, j.item_id] = j.source.rpartition(":")[2]
    return judged_dataset(f"{fmt}:{arg}", topics, corpus, qrels, scheme, bad,
                          lambda q, d: (str(path), _at(where[q, d])))


def _at(where: str) -> dict:
    return {"line": int(where)} if where.isdigit() else {"row": where}
