"""On-disk cache of knowledge look-ups keyed by (source, query, k): SQLite, safe across threads and processes."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

from hiera_dspy import settings
from hiera_dspy.knowledge import Passage


def cache_root() -> Path:
    """The project's cache root (hiera_dspy.settings.cache_dir: $HIERA_CACHE_DIR, else $XDG_CACHE_HOME/hiera-dspy)."""
    return settings.cache_dir()


class CachedKnowledge:
    """A knowledge source whose look-ups are remembered on disk, so a rerun pays for no search twice."""

    def __deepcopy__(self, memo):  # shared by every copy an optimizer makes of a program
        return self

    def __init__(self, source, cache_dir: str | None = None):
        self.source = source
        self.name = source.name
        self.default_k = getattr(source, "default_k", 5)
        path = Path(cache_dir) if cache_dir else cache_root()
        path.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path / "knowledge.sqlite", check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS lookups (source TEXT, query TEXT, k INTEGER, passages TEXT, "
                         "PRIMARY KEY (source, query, k))")
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def search(self, text: str, k: int | None = None) -> list[Passage]:
        """The cached passages for (source, text, k), else the source's, stored for next time."""
        k = self.default_k if k is None else k
        key = (self.name, text.strip(), k)
        with self._lock:
            row = self._db.execute("SELECT passages FROM lookups WHERE source=? AND query=? AND k=?", key).fetchone()
        if row is not None:
            self.hits += 1
            return [Passage(**p) for p in json.loads(row[0])]
        self.misses += 1
        passages = self.source.search(text, k)
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO lookups VALUES (?, ?, ?, ?)",
                             (*key, json.dumps([p.to_dict() for p in passages])))
        return passages
