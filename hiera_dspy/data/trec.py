"""The files IR people already have: TREC run files, topics, a corpus, TREC qrels (read and written).

- run: `qid Q0 docid rank score tag` (whitespace separated, 6 columns); ranked by score, ties by docid descending
  (trec_eval's order, which ir_measures uses too); a score that is not a finite number (nan, inf) is a bad line.
- topics: TSV `qid<TAB>query`, or JSONL `{"qid", "query"}` (a `.jsonl`/`.json` name or a first line starting `{`).
- corpus: JSONL `{"id", "title", "text"}` (`_id` accepted, as in BEIR); any further fields (MSRD's overview, genres,
  actors, ...) join the text as `Name: value` lines.
Any of these files may be gzipped (a `.gz` name).
- qrels: `qid iter docid grade`; the grade is the index of a label in the scheme (0 = least relevant).

Every bad line raises a DataError naming file, line and field, or with `on_bad_row="skip"` is recorded in `skipped`.
Writers go through `write_atomic` (temp file + rename).
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from hiera_dspy.data import SKIP_HINT, CatalogEntry, DataError
from hiera_dspy.data.jsonl import json_object
from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.store.files import write_atomic


class RunLine(NamedTuple):
    """One line of a TREC run file (`line` is its 1-based line number, for error messages)."""

    qid: str
    docid: str
    rank: int
    score: float
    tag: str
    line: int


class Bad(HieraError):
    """One bad line (the reader adds file and line)."""


def _lines(path: Path, what: str) -> Iterator[tuple[int, str]]:
    if not path.is_file():
        raise DataError(f"{path}: file not found (expected a {what})")
    with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                text = Bad(f"not UTF-8 text (byte {exc.start} of the line); re-encode the file as UTF-8")
            if isinstance(text, str) and not text.strip():
                continue
            yield lineno, text


def _read(path: str | Path, what: str, parse, on_bad_row: str, skipped: list | None) -> list:
    """Apply `parse(text)` to each non-blank line; a Bad raised by it (or an undecodable line) names file and line."""
    if on_bad_row not in ("error", "skip"):
        raise DataError(f"on_bad_row must be 'error' or 'skip', got {on_bad_row!r}")
    path = Path(path)
    out = []
    for lineno, text in _lines(path, what):
        try:
            if isinstance(text, Bad):
                raise text
            out.append(parse(text, lineno))
        except Bad as exc:
            if on_bad_row != "skip":
                raise DataError(f"{path}, line {lineno}: {exc}; {SKIP_HINT}") from None
            if skipped is not None:
                skipped.append({"file": str(path), "line": lineno, "error": str(exc)})
    return out


# ------------------------------------------------------------------------------------------------------------ runs

RUN_FORMAT = "qid Q0 docid rank score tag"


def _run_line(text: str, lineno: int) -> RunLine:
    cols = text.split()
    if len(cols) != 6:
        raise Bad(f"expected 6 columns ({RUN_FORMAT}), got {len(cols)}")
    qid, _q0, docid, rank, score, tag = cols
    try:
        rank_i = int(rank)
    except ValueError:
        raise Bad(f"column 4 (rank): {rank!r} is not an integer") from None
    try:
        score_f = float(score)
    except ValueError:
        raise Bad(f"column 5 (score): {score!r} is not a number") from None
    if not math.isfinite(score_f):  # nan would rank by line order; ±inf ties among itself
        raise Bad(f"column 5 (score): {score!r} is not a finite number; give the document a finite score (a very low "
                  "one ranks it last)")
    return RunLine(qid, docid, rank_i, score_f, tag, lineno)


def read_run(path: str | Path, on_bad_row: str = "error", skipped: list | None = None) -> list[RunLine]:
    """Every line of a TREC run file; a docid listed twice for one query is an error (trec_eval refuses it too)."""
    lines = _read(path, f"TREC run file ({RUN_FORMAT})", _run_line, on_bad_row, skipped)
    seen: dict[tuple[str, str], int] = {}
    kept = []
    for rl in lines:
        first = seen.setdefault((rl.qid, rl.docid), rl.line)
        if first != rl.line:
            message = f"docid {rl.docid!r} listed twice for qid {rl.qid!r} (first on line {first})"
            if on_bad_row != "skip":
                raise DataError(f"{path}, line {rl.line}: {message}; {SKIP_HINT}")
            if skipped is not None:
                skipped.append({"file": str(path), "line": rl.line, "error": message})
            continue
        kept.append(rl)
    if not kept:
        raise DataError(f"{path}: no run lines found; expected {RUN_FORMAT}")
    return kept


def ranked(lines: Iterable[RunLine]) -> dict[str, list[RunLine]]:
    """qid -> its lines in rank order: score descending, ties by docid descending (trec_eval's order)."""
    by_query: dict[str, list[RunLine]] = {}
    for rl in lines:
        by_query.setdefault(rl.qid, []).append(rl)
    return {q: sorted(ls, key=lambda rl: (rl.score, rl.docid), reverse=True) for q, ls in by_query.items()}


def format_run(ranking: dict[str, list[tuple[str, float]]], tag: str) -> str:
    """TREC run text from qid -> [(docid, score), ...] in rank order."""
    out = []
    for qid, docs in ranking.items():
        out += [f"{qid} Q0 {docid} {rank} {score:.6f} {tag}" for rank, (docid, score) in enumerate(docs, 1)]
    return "\n".join(out) + "\n"


def write_run(path: str | Path, ranking: dict[str, list[tuple[str, float]]], tag: str) -> Path:
    """Write a ranking as a TREC run file (atomically); returns the path."""
    return write_atomic(path, format_run(ranking, tag))


# ----------------------------------------------------------------------------------------------------------- qrels

QRELS_FORMAT = "qid 0 docid grade"


def qrel_of(text: str, scheme: LabelScheme) -> tuple[str, str, int]:
    """One qrels line as (qid, docid, grade); a Bad naming the column otherwise (a grade must be an index of
    `scheme.labels`)."""
    top = len(scheme.labels) - 1
    cols = text.split()
    if len(cols) != 4:
        raise Bad(f"expected 4 columns ({QRELS_FORMAT}), got {len(cols)}")
    qid, _iter, docid, grade = cols
    try:
        g = int(grade)
    except ValueError:
        raise Bad(f"column 4 (grade): {grade!r} is not an integer") from None
    if not 0 <= g <= top:
        raise Bad(f"column 4 (grade): {g} is outside the scheme {scheme.name!r} (0..{top}: "
                  f"{', '.join(f'{i}={lab}' for i, lab in enumerate(scheme.labels))})")
    return qid, docid, g


def read_qrels(path: str | Path, scheme: LabelScheme, on_bad_row: str = "error",
               skipped: list | None = None, lines: dict | None = None) -> dict[tuple[str, str], int]:
    """(qid, docid) -> grade, every grade an index of `scheme.labels`; a pair judged twice is an error. `lines`, when
    given, receives (qid, docid) -> the line it was read from (for errors found later)."""
    def parse(text: str, lineno: int):
        return (*qrel_of(text, scheme), lineno)

    qrels: dict[tuple[str, str], int] = {}
    first: dict[tuple[str, str], int] = {}
    for qid, docid, grade, lineno in _read(path, f"TREC qrels file ({QRELS_FORMAT})", parse, on_bad_row, skipped):
        if (qid, docid) in qrels:
            message = f"qid {qid!r} docid {docid!r} judged twice (first on line {first[qid, docid]})"
            if on_bad_row != "skip":
                raise DataError(f"{path}, line {lineno}: {message}; {SKIP_HINT}")
            if skipped is not None:
                skipped.append({"file": str(path), "line": lineno, "error": message})
            continue
        qrels[qid, docid], first[qid, docid] = grade, lineno
    if lines is not None:
        lines.update(first)
    return qrels


def format_qrels(qrels: dict[tuple[str, str], int]) -> str:
    """Qrels as TREC text, one `qid 0 docid grade` line each."""
    return "".join(f"{qid} 0 {docid} {grade}\n" for (qid, docid), grade in qrels.items())


def write_qrels(path: str | Path, qrels: dict[tuple[str, str], int]) -> Path:
    """Write qrels in the given order (atomically)."""
    return write_atomic(path, format_qrels(qrels))


# ---------------------------------------------------------------------------------------------- topics and corpus

def read_topics(path: str | Path, on_bad_row: str = "error", skipped: list | None = None) -> dict[str, str]:
    """qid -> query text, from TSV `qid<TAB>query` or JSONL `{"qid", "query"}`."""
    path = Path(path)
    first = next(_lines(path, "topics file (TSV qid<TAB>query or JSONL {\"qid\", \"query\"})"), (0, ""))[1]
    is_json = path.suffix in (".jsonl", ".json") or (isinstance(first, str) and first.lstrip().startswith("{"))

    def parse(text: str, lineno: int):
        if is_json:
            row = _json_object(text)
            for name in ("qid", "query"):
                if row.get(name) in (None, ""):
                    raise Bad(f'missing field "{name}"')
            qid, query = str(row["qid"]), str(row["query"])
        else:
            qid, sep, query = text.partition("\t")
            if not sep:
                raise Bad("expected qid<TAB>query (no TAB found)")
            qid = qid.strip()
        if not query.strip():
            raise Bad(f"query of qid {qid!r} is empty")
        return qid, query.strip(), lineno

    topics: dict[str, str] = {}
    where: dict[str, int] = {}
    for qid, query, lineno in _read(path, "topics file", parse, on_bad_row, skipped):
        if qid in topics:
            raise DataError(f"{path}, line {lineno}: qid {qid!r} listed twice (first on line {where[qid]})")
        topics[qid], where[qid] = query, lineno
    if not topics:
        raise DataError(f"{path}: no topics found; expected TSV qid<TAB>query or JSONL {{\"qid\", \"query\"}}")
    return topics


CORPUS_CORE = ("id", "_id", "title", "text")


def read_corpus(path: str | Path, on_bad_row: str = "error", skipped: list | None = None) -> dict[str, CatalogEntry]:
    """docid -> CatalogEntry(id, title, text); extra fields join the text (lists comma-separated)."""

    def parse(text: str, lineno: int):
        row = _json_object(text)
        docid = row.get("id", row.get("_id"))
        if docid in (None, ""):
            raise Bad('missing field "id"')
        title = row.get("title")
        body = [str(row["text"])] if row.get("text") not in (None, "") else []
        for name, value in row.items():
            if name in CORPUS_CORE or isinstance(value, dict):
                continue
            if isinstance(value, list):
                value = ", ".join(map(str, value))
            if value not in (None, ""):
                body.append(f"{name.capitalize()}: {value}")
        if title in (None, "") and not body:
            raise Bad('both "title" and "text" are empty')
        return CatalogEntry(id=str(docid), title=str(title or ""), text="\n".join(body)), lineno

    corpus: dict[str, CatalogEntry] = {}
    where: dict[str, int] = {}
    for entry, lineno in _read(path, 'corpus file (JSONL {"id", "title", "text"})', parse, on_bad_row, skipped):
        if entry.id in corpus:
            raise DataError(f"{path}, line {lineno}: id {entry.id!r} listed twice (first on line {where[entry.id]})")
        corpus[entry.id], where[entry.id] = entry, lineno
    if not corpus:
        raise DataError(f'{path}: no documents found; expected JSONL {{"id", "title", "text"}}')
    return corpus


def _json_object(text: str) -> dict:
    try:
        return json_object(text)
    except DataError as exc:
        raise Bad(str(exc)) from None
