"""Judgment lists by format: read as known judgments (`qrels:PATH`, `jsonl:PATH`, `trec:FOLDER`, `quepid:FILE`,
`srw:FILE`, `esltr:FILE`, or a PATH whose format is sniffed) into the `Known` table a judge reads as evidence
(`hiera_dspy.data.known`), and written from one (`write_list`, what `eval.export` writes).

A format is one module, registered by one line in `hiera_dspy.data.FORMATS`. The module has

    read(path: Path, scheme: LabelScheme, counts: Counter) -> Iterator[KnownJudgment]
        every judgment in file order, each with its `source` "file:line"; a malformed row, or a grade that is not on
        the scheme's scale, raises a DataError naming file, line and field and what to do; a row that is not a
        judgment (a JSONL pair without a label) is counted in `counts` under a name of its own and left out
    or (a list read whole, row-skipping; then `read` is this one's judgments in order)
    read_known(path, scheme, *, on_bad_row="error", skipped=None, counts=None) -> Known
        the whole list, a bad row raising or (on_bad_row "skip") recorded in `skipped`; what is left out and not
        bad is counted in `counts` (Quepid's rows not rated yet: `unrated`)
    looks_like(path: Path, head: str) -> bool
        whether a file whose first non-blank line is `head` (a folder: "") is of this format (for a PATH given
        without a prefix)
    write(known: Known, **options) -> Iterator[str]      (optional)
        the file's text, in pieces, queries in the table's order, judgments in their order (`WRITERS`)
    AS_DATASET = True                                     (optional)
        the list is a dataset too, `--dataset NAME:FILE`, the texts from a corpus beside FILE (`tool_lists`)

What every format shares is done here, once: the same pair twice with the same grade is read once (`counts
["duplicates"]`); with two grades it is a DataError naming both lines. A judgment read without text (a qrels line
names only ids) gets its item's title and text from `items` (the dataset's corpus or catalog) and its query's text
from `queries`; one whose item cannot be found keeps `item_text` None and is counted (`counts["without_text"]`).
A table is then kept apart from the pairs a job judges (`apart_from`): a known pair that is also a pair to judge is a
DataError naming its line (or, with on_overlap "skip", dropped and counted), judgments of other queries are counted.

Example:
    >>> known = read_known("qrels:qrels.txt", get_scheme("trec"), items=corpus)  # doctest: +SKIP
    >>> known.counts()  # doctest: +SKIP
    {'q1': 12, 'q2': 9}
    >>> write_list("quepid", "ratings.csv", known)  # doctest: +SKIP
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from hiera_dspy.data import FORMATS, CatalogEntry, DataError
from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.data.known_match import matched
from hiera_dspy.data.known_qrels import token_ids as token_ids  # the numbering of queries a token format writes
from hiera_dspy.errors import RequestError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair
from hiera_dspy.registry import Entry, Registry, module_defines, module_doc
from hiera_dspy.store.files import write_lines

FORMAT_REGISTRY = Registry("judgment list format", lambda: {name: Entry(name, module_doc(target), loader=target)
                                                            for name, target in FORMATS.items()},
                           hint=" (FORMAT:PATH, or a PATH whose first line says its format)")

# the formats a list can be written in: those whose module has `write` (read without importing them)
WRITERS = Registry("judgment list format", lambda: {name: Entry(name, module_doc(target), loader=f"{target}:write")
                                                    for name, target in FORMATS.items()
                                                    if module_defines(target, "write")},
                   hint=" (export --format)")


def judgments(name: str, path: Path, scheme: LabelScheme, counts: Counter) -> Iterator[KnownJudgment]:
    """The judgments of the `name` list at `path`, with its module's `read`, or its `read_known` in order."""
    reader = FORMAT_REGISTRY[name].load()
    if hasattr(reader, "read"):
        return reader.read(path, scheme, counts)
    return iter(reader.read_known(path, scheme, counts=counts))


def read_known(spec: str | Path, scheme: LabelScheme, *, items: Mapping[str, CatalogEntry] | None = None,
               queries: Mapping[str, str] | None = None, counts: Counter | None = None) -> Known:
    """The known judgments of the judgment list `spec` (FORMAT:PATH, or a PATH sniffed), graded on `scheme`; item
    and query texts a row lacks are looked up in `items` and `queries`. `counts` (when given) receives `judgments`,
    `duplicates`, `without_text` and what the format skipped."""
    counts = counts if counts is not None else Counter()
    name, path = _format_of(str(spec))
    kept: dict[tuple[str, str], KnownJudgment] = {}
    for j in judgments(name, path, scheme, counts):
        key = (j.query_id, j.item_id)
        first = kept.get(key)
        if first is None:
            kept[key] = with_texts(j, items or {}, queries or {})
        elif first.grade == j.grade:
            counts["duplicates"] += 1
        else:
            raise DataError(f"{where(j.source)}, grade: query {j.query_id!r} item {j.item_id!r} is judged "
                            f"{scheme.labels[j.grade]!r} (grade {j.grade}) here and {scheme.labels[first.grade]!r} "
                            f"(grade {first.grade}) on {where(first.source)}; a pair has one grade in a judgment "
                            "list: keep the right line and delete the other")
    counts["judgments"] += len(kept)
    counts["without_text"] += sum(1 for j in kept.values() if j.item_text is None)
    return Known.of(scheme, kept.values())


def read_list(spec: str, scheme: LabelScheme, *, on_bad_row: str = "error", skipped: list | None = None) -> Known:
    """The judgments of a `FORMAT:FILE` spec (`quepid:ratings.csv`) with its format's `read_known`, which can skip
    and record a bad row (`on_bad_row="skip"`, for a list exported to another format); a format without one is read
    with the shared checks of `read_known` (a bad row is then a DataError)."""
    fmt, sep, file = spec.partition(":")
    if not sep or fmt not in FORMATS:
        raise DataError(f"{spec!r}: expected FORMAT:FILE with FORMAT one of {', '.join(FORMATS)}")
    reader = FORMAT_REGISTRY[fmt].load()
    if hasattr(reader, "read_known"):
        return reader.read_known(Path(file), scheme, on_bad_row=on_bad_row, skipped=skipped)
    return read_known(spec, scheme)


def write_list(fmt: str, path: str | Path, known: Known, **options) -> Path:
    """Write `known` as a `fmt` judgment list at `path` (atomically; nothing is left behind on an error); `options`
    are the format's (SRW's `name` and `description`)."""
    if fmt not in WRITERS:
        raise RequestError(f"unknown judgment-list format {fmt!r}; known: {', '.join(WRITERS)}")
    return write_lines(path, WRITERS[fmt].load()(known, **options))


def with_texts(j: KnownJudgment, items: Mapping[str, CatalogEntry], queries: Mapping[str, str]) -> KnownJudgment:
    """The judgment with the item's title and text from `items` and the query's text from `queries` where it has
    none of its own."""
    entry = items.get(j.item_id) if not j.item_text else None
    if entry is not None:
        j = replace(j, item_title=j.item_title or entry.title, item_text=entry.text)
    if j.query is None and j.query_id in queries:
        j = replace(j, query=queries[j.query_id])
    return j


def apart_from(known: Known, pairs: Iterable[Pair], counts: Counter | dict[str, int],
               on_overlap: str = "error") -> tuple[Known, tuple[str, ...]]:
    """(`known` less what it may not hold, the queries of `pairs` in order): the list's queries matched to the pairs'
    by id, else by normalised text (`hiera_dspy.data.known_match`: a list matching none is a DataError); a known pair
    that is also one of `pairs` (the pairs to judge) would leak its label into its own judgment, a DataError naming
    its line, or with `on_overlap="skip"` dropped and counted (`overlap_skipped`); judgments of queries with no pair
    are counted (`outside`, `outside_queries`) and kept."""
    queries: dict[str, str] = {}
    keys: set[tuple[str, str]] = set()
    for p in pairs:
        queries.setdefault(p.query_id, p.query)
        keys.add((p.query_id, p.item_id))
    known = matched(known, queries, counts)
    overlap = [j for j in known if (j.query_id, j.item_id) in keys]
    if overlap and on_overlap != "skip":
        first = overlap[0]
        raise DataError(f"{where(first.source)}: query {first.query_id!r} item {first.item_id!r} is a known judgment "
                        f"and a pair to judge ({len(overlap)} such pairs): a judge must never read a pair's own label; "
                        "remove them from the known judgments, or drop them and count them with "
                        "--on-known-overlap skip")
    if overlap:
        known = known.without(keys)
        counts["overlap_skipped"] = len(overlap)
    outside = [q for q in known.by_query if q not in queries]
    counts["outside_queries"] = len(outside)
    counts["outside"] = sum(len(known.for_query(q)) for q in outside)
    return known, tuple(queries)


def where(source: str) -> str:
    """A judgment's `source` ("file:line") as an error names it: "file, line N"."""
    file, sep, line = source.rpartition(":")
    return f"{file}, line {line}" if sep and line.isdigit() else source


def _format_of(spec: str) -> tuple[str, Path]:
    """(format name, path) of FORMAT:PATH, or of a PATH by its first non-blank line."""
    name, sep, rest = spec.partition(":")
    if sep and name in FORMATS:
        return name, _existing(Path(rest))
    path = _existing(Path(spec))
    head = "" if path.is_dir() else _head(path)
    for name in FORMATS:
        if FORMAT_REGISTRY[name].load().looks_like(path, head):
            return name, path
    where = path if path.is_dir() else f"{path}, line 1"
    raise DataError(f"{where}: not a judgment list this reads ({', '.join(FORMATS)}); name its format: "
                    f"--known FORMAT:{path}, FORMAT one of {', '.join(FORMATS)}")


def _existing(path: Path) -> Path:
    if not path.exists():
        raise DataError(f"{path}: not found; --known names a judgment list "
                        f"(FORMAT:PATH, FORMAT one of {', '.join(FORMATS)})")
    return path


def _head(path: Path) -> str:
    with open(path, "rb") as fh:
        for raw in fh:
            if raw.strip():
                return raw.decode("utf-8-sig", errors="replace").strip()
    raise DataError(f"{path}: the file is empty; --known names a judgment list with at least one judgment")
