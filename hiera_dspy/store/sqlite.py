"""The one place the run-store file is opened: by the run store, every side table and every read-only reader.

A write connection autocommits (`isolation_level=None`: each statement, or an explicit BEGIN ... COMMIT, is its own
transaction) and may be shared by threads that hold the owner's lock; a read connection is a read-only snapshot (WAL:
writers are not blocked). The journal mode (WAL) is set once, by `RunStore` when it creates the file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

TIMEOUT_S = 60  # how long a statement waits for another connection's write lock


def open_write(path: str | Path) -> sqlite3.Connection:
    """A write connection to the run-store file at `path` (created if missing)."""
    return sqlite3.connect(path, check_same_thread=False, timeout=TIMEOUT_S, isolation_level=None)


def open_read(path: str | Path) -> sqlite3.Connection:
    """A read-only connection to the existing run-store file at `path` (sqlite3.OperationalError if it is missing)."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=TIMEOUT_S)
