"""Text embeddings cached on disk by content hash: a text is embedded once, whatever number of pairs share it.

A train split of 100,000 pairs holds a few thousand distinct queries and items (an MSRD movie is judged for ~12
queries); `CachedEmbedder` wraps any `Embedder` so that `encode(texts)` embeds only the texts it has never seen, in
batches, and reads the rest from one SQLite file per model under the cache root
(`embeddings/<model>.sqlite`, key = sha256 of model id and text). Vectors are stored as float32, the precision
sentence-transformers computes in, and always returned from the stored bytes (as float64), so a first run and a rerun
give identical features.

Example:
    >>> emb = CachedEmbedder(SentenceTransformerEmbedder())          # doctest: +SKIP
    >>> emb.encode(["alien", "alien"]).shape                          # doctest: +SKIP
    (2, 384)
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import sys
import threading
import time
from pathlib import Path

import numpy as np

from hiera_dspy import settings

SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)"


def text_key(model_id: str, text: str) -> str:
    """The cache key of `text` embedded by `model_id`: sha256 of both, 32 hex digits."""
    return hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()[:32]


def cache_path(model_id: str, base: str | Path | None = None) -> Path:
    """The SQLite file of `model_id`'s vectors under the cache root (`base`, else hiera_dspy.settings.cache_dir)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id).strip("_") or "model"
    return settings.cache_dir(base) / "embeddings" / f"{name}.sqlite"


class CachedEmbedder:
    """An `Embedder` (same `model_id`) that embeds each distinct text once and keeps the vectors on disk.

    Args:
        inner: the embedder that computes vectors (`model_id`, `encode(texts)`).
        path: the SQLite file (default: `cache_path(inner.model_id)`).
        batch_size: texts sent to `inner.encode` at a time (progress on stderr past one batch).
    """

    def __init__(self, inner, path: str | Path | None = None, batch_size: int = 512):
        self.inner, self.model_id, self.batch_size = inner, inner.model_id, int(batch_size)
        self.path = Path(path) if path else cache_path(inner.model_id)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=120, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(SCHEMA)
        self._lock = threading.Lock()
        self.computed = 0  # texts this object embedded (not read from the cache)

    @property
    def source(self) -> str | None:
        """Where the inner model's weights were loaded from (a folder or a hub id), if it says."""
        return getattr(self.inner, "source", None)

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit-length vector per text: read from the cache, or embedded (distinct new texts, in batches)."""
        texts = list(texts)
        keys = [text_key(self.model_id, t) for t in texts]
        found = self._read(set(keys))
        todo = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in found))
        started = time.perf_counter()
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start:start + self.batch_size]
            vectors = np.asarray(self.inner.encode(batch), dtype=np.float32)
            rows = [(text_key(self.model_id, t), v.tobytes()) for t, v in zip(batch, vectors)]
            self._write(rows)
            found.update((k, np.frombuffer(b, dtype=np.float32)) for k, b in rows)
            self.computed += len(batch)
            if len(todo) > self.batch_size:
                print(f"embeddings ({self.model_id}): {start + len(batch)}/{len(todo)} new texts embedded in "
                      f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
        if not texts:
            return np.zeros((0, 0))
        return np.stack([found[k] for k in keys]).astype(np.float64)

    def cached(self, texts: list[str]) -> set[str]:
        """The texts among `texts` whose vectors are already on disk (they cost nothing to encode)."""
        by_key = {text_key(self.model_id, t): t for t in texts}
        return {by_key[k] for k in self._read(set(by_key))}

    def _read(self, keys: set[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        wanted = list(keys)
        with self._lock:
            for start in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
                chunk = wanted[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk):
                    out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def _write(self, rows: list[tuple[str, bytes]]) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)", rows)
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        """Close the cache file."""
        with self._lock:
            self._db.close()
