"""Writing output files atomically: a reader (or a crash) never sees half a file."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once: mkstemp creates 0600 files, outputs get the usual permissions


def write_atomic(path: str | Path, text: str) -> Path:
    """Write `text` to a temporary file beside `path`, flush it to disk, then rename it over `path`.

    Example:
        >>> write_atomic(tmp / "qrels.txt", "q1 0 d1 1\\n")  # doctest: +SKIP
    """
    return write_lines(path, [text])


def write_lines(path: str | Path, lines: Iterable[str]) -> Path:
    """`write_atomic` for text produced a piece at a time (a million-line export never sits in memory)."""
    with atomic_file(path) as fh:
        for line in lines:
            fh.write(line)
    return Path(path)


@contextmanager
def atomic_file(path: str | Path) -> Iterator[TextIO]:
    """A text file to write, created beside `path` and renamed over it (after a flush to disk) when the block ends
    without an exception; on an exception it is deleted and `path` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
