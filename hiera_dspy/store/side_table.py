"""A table of its own beside a run store's rows (decisions, human samples): one SQLite connection per log, WAL shared."""

from __future__ import annotations

import threading
from pathlib import Path

from hiera_dspy.store import sqlite


class SideTable:
    """Its own connection to the run store file at `path`, with `schema` applied once; calls hold `_lock`."""

    schema: str = ""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = sqlite.open_write(self.path)
        self._lock = threading.Lock()
        with self._lock:
            self._db.executescript(self.schema)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()
