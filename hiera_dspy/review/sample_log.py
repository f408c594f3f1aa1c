"""The human sample as the run store keeps it and the review queue shows it: the side table `human_sample` (the
drawn queries, their method, strata and each query's stratum and probability; `SampleLog`), read back with
`read_sample`, and a sampled query's pairs put first in the queue (`sample_entries`). Drawing the sample is
`hiera_dspy.benchmark.sample`'s job; nothing here draws.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from hiera_dspy.records import Sample
from hiera_dspy.review.confidence import confidence
from hiera_dspy.review.queue import QueueEntry
from hiera_dspy.store.side_table import SideTable

SCHEMA = """
CREATE TABLE IF NOT EXISTS human_sample (
    run_id TEXT NOT NULL, query_id TEXT NOT NULL, rank INTEGER NOT NULL, seed INTEGER NOT NULL, method TEXT NOT NULL,
    requested TEXT NOT NULL, drawn REAL NOT NULL, strata INTEGER, stratum INTEGER, probability REAL,
    PRIMARY KEY (run_id, query_id)
);
CREATE TABLE IF NOT EXISTS human_sample_weight (
    run_id TEXT NOT NULL, query_id TEXT NOT NULL, weight REAL NOT NULL, PRIMARY KEY (run_id, query_id)
);
"""

# stores made before the stratified and the active draws lack them
ADDED_COLUMNS = {"strata": "INTEGER", "stratum": "INTEGER", "probability": "REAL"}

def sample_entries(sample: Sample | None, rows: Sequence[dict], pair_query: dict[str, str]) -> list:
    """The review queue's first part: every judged pair of the sampled queries (confident or not, failed ones
    aside), query by query in sample order, as `QueueEntry`s with reason "sample"."""
    if sample is None:
        return []
    rank = {q: i for i, q in enumerate(sample.queries)}
    chosen = [r for r in rows if pair_query.get(r["id"]) in rank and not r.get("error")]
    chosen.sort(key=lambda r: rank[pair_query[r["id"]]])  # stable: run order within a query
    return [QueueEntry(r, confidence(r), SAMPLE_REASON) for r in chosen]

SAMPLE_REASON = "sample: label every pair of this query"

class SampleLog(SideTable):
    """The human samples of the runs in one run store file (its own connection, like the decision log)."""

    schema = SCHEMA

    def __init__(self, path: str | Path):
        super().__init__(path)
        with self._lock:
            have = {r[1] for r in self._db.execute("PRAGMA table_info(human_sample)")}
            for name, kind in ADDED_COLUMNS.items():
                if name not in have:
                    try:
                        self._db.execute(f"ALTER TABLE human_sample ADD COLUMN {name} {kind}")
                    except sqlite3.OperationalError as exc:  # another process added it first
                        if "duplicate column" not in str(exc):
                            raise

    def get(self, run_id: str) -> Sample | None:
        """The run's sample, or None if it has none."""
        with self._lock:
            rows = self._db.execute("SELECT query_id, seed, method, requested, strata, stratum, probability FROM "
                                    "human_sample WHERE run_id=? ORDER BY rank", (run_id,)).fetchall()
            weights = dict(self._db.execute("SELECT query_id, weight FROM human_sample_weight WHERE run_id=?",
                                            (run_id,)).fetchall())
        if not rows:
            return None
        strata = rows[0][4]
        active = rows[0][6] is not None
        return Sample([r[0] for r in rows], int(rows[0][1]), rows[0][2], rows[0][3],
                      None if strata is None else int(strata), None if strata is None else [int(r[5]) for r in rows],
                      [float(r[6]) for r in rows] if active else None, weights or None)

    def save(self, run_id: str, sample: Sample) -> Sample:
        """Store the run's sample once; an existing one is returned unchanged (a sample is never redrawn)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if self._db.execute("SELECT 1 FROM human_sample WHERE run_id=? LIMIT 1", (run_id,)).fetchone() is None:
                    now = time.time()
                    stratum = sample.stratum or [None] * len(sample.queries)
                    probs: list[float | None] = [None] * len(sample.queries)
                    if sample.probabilities is not None:
                        probs = list(sample.probabilities)
                    self._db.executemany(
                        "INSERT INTO human_sample (run_id, query_id, rank, seed, method, requested, drawn, strata, "
                        "stratum, probability) VALUES (?,?,?,?,?,?,?,?,?,?)",
                        [(run_id, q, i, sample.seed, sample.method, sample.requested, now, sample.strata, h, p)
                         for i, (q, h, p) in enumerate(zip(sample.queries, stratum, probs))])
                    self._db.executemany("INSERT INTO human_sample_weight (run_id, query_id, weight) VALUES (?,?,?)",
                                         [(run_id, q, w) for q, w in (sample.weights or {}).items()])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return self.get(run_id)

def read_sample(path: str | Path, run_id: str) -> Sample | None:
    """The run's sample in the store file at `path` (None if it has none)."""
    log = SampleLog(path)
    try:
        return log.get(run_id)
    finally:
        log.close()
