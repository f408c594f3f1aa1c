"""TREC run files read one query at a time, for runs of millions of lines (eval.holes' pooling and its metrics).

A run file is expected grouped by query (all lines of a qid together, as every TREC tool writes them); `RunFile`
yields `(qid, lines in rank order)` per query with the checks of `trec.read_run` (6 columns, numbers, a docid once per
query), so memory holds one query's lines. A qid that comes back after its group ended means the file is not grouped:
a DataError says how to sort it. Iterating a RunFile directly gives its lines in file order (the shape of
`read_run`), for code that wants every line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from hiera_dspy.data import SKIP_HINT, DataError
from hiera_dspy.data.trec import RUN_FORMAT, Bad, RunLine, _lines, _run_line, ranked


class RunFile:
    """A TREC run file read lazily, per query (see the module doc); `keep(path, line)` may drop a line (recorded by
    the caller) before it is grouped."""

    def __init__(self, path: str | Path, on_bad_row: str = "error", skipped: list | None = None,
                 keep: Callable[[str, RunLine], bool] | None = None):
        if on_bad_row not in ("error", "skip"):
            raise DataError(f"on_bad_row must be 'error' or 'skip', got {on_bad_row!r}")
        self.path, self.on_bad_row, self.skipped, self.keep = Path(path), on_bad_row, skipped, keep
        self._checked = False  # skipped lines are recorded during the first full pass only
        if not self.path.is_file():
            raise DataError(f"{self.path}: file not found (expected a TREC run file ({RUN_FORMAT}))")

    def _bad(self, lineno: int, message: str) -> None:
        if self.on_bad_row != "skip":
            raise DataError(f"{self.path}, line {lineno}: {message}; {SKIP_HINT}")
        if self.skipped is not None and not self._checked:
            self.skipped.append({"file": str(self.path), "line": lineno, "error": message})

    def _parsed(self) -> Iterator[RunLine]:
        for lineno, text in _lines(self.path, f"TREC run file ({RUN_FORMAT})"):
            try:
                if isinstance(text, Bad):
                    raise text
                rl = _run_line(text, lineno)
            except Bad as exc:
                self._bad(lineno, str(exc))
                continue
            if self.keep is None or self.keep(str(self.path), rl):
                yield rl

    def groups(self) -> Iterator[tuple[str, list[RunLine]]]:
        """(qid, its lines in rank order) per query, in file order; one query's lines in memory at a time."""
        done: set[str] = set()
        qid, group, seen = None, [], {}
        found = False
        for rl in self._parsed():
            if rl.qid != qid:
                if qid is not None:
                    yield qid, ranked(group)[qid]
                    done.add(qid)
                if rl.qid in done:
                    raise DataError(f"{self.path}, line {rl.line}: qid {rl.qid!r} comes back after other queries; "
                                    f"a run file is read one query at a time: group it by query first "
                                    f"(sort -s -k1,1 {self.path.name})")
                qid, group, seen = rl.qid, [], {}
            first = seen.setdefault(rl.docid, rl.line)
            if first != rl.line:
                self._bad(rl.line, f"docid {rl.docid!r} listed twice for qid {rl.qid!r} (first on line {first})")
                continue
            group.append(rl)
            found = True
        if qid is not None and group:
            yield qid, ranked(group)[qid]
        if not found:
            raise DataError(f"{self.path}: no run lines found; expected {RUN_FORMAT}")
        self._checked = True

    def check(self) -> RunFile:
        """Read the whole file once (one query at a time), so that a bad line is reported now; returns the file."""
        for _ in self.groups():
            pass
        return self

    def __iter__(self) -> Iterator[RunLine]:
        for _, lines in self.groups():
            yield from sorted(lines, key=lambda rl: rl.line)
