"""The human sample of single holes (`--sample-unit pair`) as the run store keeps it and the review queue serves it,
in draw order across queries. It is drawn once after judging by `hiera_dspy.benchmark.pair_conclusions`
(`draw_pair_sample`, with its size `judgments` and the rerun check `check_same`); nothing here draws.

The draws (`hiera_dspy.conclude.pair_sample.draw`: i.i.d. with each hole's design probability, until N distinct
holes) are kept in table `human_pair_draw` in draw order, repeats kept, and every hole's probability in
`human_pair_design` (the estimates divide by it, and the intervals' ranges read every hole's). Stopping and resuming
never redraws it; a different request on the same run is refused. A person decides the distinct holes in order of
their first draw; the estimates use the draws before the first draw of an undecided hole, so any prefix a person
stops at is a sample of the design.

Example:
    >>> log = PairSampleLog("runs/store.sqlite")                                     # doctest: +SKIP
    >>> log.save("RUN_ID", PairSample(["q1:d3", "q2:d1"], [0.01, 0.02], 0, "weighted", "200", {...}))  # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from hiera_dspy.review.confidence import confidence
from hiera_dspy.review.queue import QueueEntry
from hiera_dspy.store.side_table import SideTable

SCHEMA = """
CREATE TABLE IF NOT EXISTS human_pair_draw (
    run_id TEXT NOT NULL, draw INTEGER NOT NULL, pair_id TEXT NOT NULL, seed INTEGER NOT NULL, method TEXT NOT NULL,
    requested TEXT NOT NULL, drawn REAL NOT NULL, PRIMARY KEY (run_id, draw)
);
CREATE TABLE IF NOT EXISTS human_pair_design (
    run_id TEXT NOT NULL, pair_id TEXT NOT NULL, probability REAL NOT NULL, PRIMARY KEY (run_id, pair_id)
);
"""
PAIR_REASON = "sample: decide this pair"


@dataclass(frozen=True)
class PairSample:
    """The draws (pair ids in draw order, repeats kept), the seed, the design, what was asked for (judgments, `200`
    or `10%` of the holes) and every hole's probability at each draw."""
    draws: list[str]
    seed: int
    method: str
    requested: str
    probabilities: dict[str, float]

    @property
    def order(self) -> list[str]:
        """The distinct holes in the order a person decides them (first draw first)."""
        return list(dict.fromkeys(self.draws))




class PairSampleLog(SideTable):
    """The pair samples of the runs in one run store file."""

    schema = SCHEMA

    def get(self, run_id: str) -> PairSample | None:
        """The run's pair sample, or None."""
        with self._lock:
            rows = self._db.execute("SELECT pair_id, seed, method, requested FROM human_pair_draw WHERE run_id=? "
                                    "ORDER BY draw", (run_id,)).fetchall()
            probs = dict(self._db.execute("SELECT pair_id, probability FROM human_pair_design WHERE run_id=?",
                                          (run_id,)).fetchall())
        if not rows:
            return None
        return PairSample([r[0] for r in rows], int(rows[0][1]), rows[0][2], rows[0][3], probs)

    def save(self, run_id: str, sample: PairSample) -> PairSample:
        """Store the run's sample once; an existing one is returned unchanged (never redrawn)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if self._db.execute("SELECT 1 FROM human_pair_draw WHERE run_id=? LIMIT 1",
                                    (run_id,)).fetchone() is None:
                    now = time.time()
                    self._db.executemany(
                        "INSERT INTO human_pair_draw (run_id, draw, pair_id, seed, method, requested, drawn) "
                        "VALUES (?,?,?,?,?,?,?)", [(run_id, i, p, sample.seed, sample.method, sample.requested, now)
                                                   for i, p in enumerate(sample.draws)])
                    self._db.executemany("INSERT INTO human_pair_design (run_id, pair_id, probability) VALUES (?,?,?)",
                                         [(run_id, p, q) for p, q in sample.probabilities.items()])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        got = self.get(run_id)
        assert got is not None
        return got


def read_pair_sample(path, run_id: str) -> PairSample | None:
    """The run's pair sample in the store file at `path` (None if it has none)."""
    log = PairSampleLog(path)
    try:
        return log.get(run_id)
    finally:
        log.close()




def pair_entries(sample: PairSample | None, rows: Sequence) -> list[QueueEntry]:
    """The review queue's first part for a pair sample: its holes in the order a person decides them, across
    queries (failed ones aside)."""
    if sample is None:
        return []
    by_id = {r["id"]: r for r in rows if not r.get("error")}
    return [QueueEntry(by_id[p], confidence(by_id[p]), PAIR_REASON) for p in sample.order if p in by_id]
