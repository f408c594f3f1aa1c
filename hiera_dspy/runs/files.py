"""Writing output files atomically: a reader (or a crash) never sees half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once: mkstemp creates 0600 files, outputs get the usual permissions


def write_atomic(path: str | Path, text: str) -> Path:
    """Write `text` to a temporary file beside `path`, flush it to disk, then rename it over `path`.

    Example:
        >>> write_atomic(tmp / "qrels.txt", "q1 0 d1 1\\n")  # doctest: +SKIP
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
