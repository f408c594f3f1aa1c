"""The human sample: whole queries drawn at random, stratified or actively by the judge's uncertainty (seeded, `--sample`;
`hiera_dspy.review.draws`), whose every hole a person labels.

A per-query metric needs every pair of the query's top k labelled, so the unit of the sample is the query, as in
prediction-powered inference over IR metrics (Oosterhuis et al., KDD 2024). The sample is drawn once per labelling run
and kept in the run store (table `human_sample`, beside the judgments, with the method, the number of strata and each
query's stratum): stopping and resuming never redraws it, and a different request on the same run is refused. Its state
follows from the decisions: a sampled query is decided when every one of its pairs has a person's label (a query with no
holes is decided at once: its existing judgments are human already); a partly labelled query is pending and does not
count yet.

Example:
    >>> size = parse_size("10%")                                                   # doctest: +SKIP
    >>> queries, _ = run_draw("random", Draw(["q1", "q2", "q3"], count(size, 3), seed=0))  # doctest: +SKIP
    >>> SampleLog("runs/store.sqlite").save("RUN_ID", Sample(queries, 0, "random", "10%"))  # doctest: +SKIP
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from hiera_dspy.conclude.sample import Sample
from hiera_dspy.errors import HieraError
from hiera_dspy.review.confidence import confidence
from hiera_dspy.review.draws import DEFAULT_STRATA, DRAWS, Draw, active_weights, draw_active, run_draw
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
METHODS = tuple(DRAWS)  # how the queries are drawn


def parse_size(text: str) -> tuple[float, bool]:
    """`--human-sample N|P%` as (value, is_percent); HieraError for anything else."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) if raw.endswith("%") else int(raw)
    except ValueError:
        raise HieraError(f"--human-sample {text!r}: give a number of queries (8) or a percentage of them (10%)") \
            from None
    percent = raw.endswith("%")
    if value <= 0 or (percent and value > 100):
        raise HieraError(f"--human-sample {text!r}: give a positive number of queries, or a percentage in (0, 100]")
    return value, percent


def count(size: tuple[float, bool], n_queries: int) -> int:
    """How many queries a size asks for out of `n_queries` (a percentage rounds up, at least 1); HieraError when the
    sample would be larger than the queries."""
    value, percent = size
    wanted = max(1, math.ceil(value * n_queries / 100 - 1e-9)) if percent else int(value)
    if wanted > n_queries:
        raise HieraError(f"--human-sample {int(value)}: the benchmark has only {n_queries} queries; ask for at most "
                         f"{n_queries} (or a percentage, e.g. 10%)")
    return wanted


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


def ensure(log: SampleLog, run_id: str, query_ids: Sequence[str], requested: str | None, seed: int,
           method: str | None = None, strata: int | None = None,
           uncertainty: Callable[[], Sequence[float]] | None = None) -> Sample | None:
    """The run's sample: the stored one, else drawn now from `query_ids` and stored (None when none is asked for).
    `method` (default "random") and `strata` (stratified only, default 4) as given on the command line (None: not
    given); `uncertainty` returns each query's uncertainty (in `query_ids` order) for a stratified draw, None when the
    holes are not judged yet. HieraError if the request differs from the stored sample (it is never redrawn) or
    cannot be met."""
    if strata is not None and strata < 1:
        raise HieraError(f"--strata {strata}: give at least 1 stratum (default {DEFAULT_STRATA})")
    if strata is not None and (method or "random") != "stratified":
        raise HieraError(f"--strata {strata} applies to --sample stratified only")
    stored = log.get(run_id)
    if stored is not None:
        if requested is not None:  # the whole request, defaults filled in
            method = method or "random"
            strata = (strata or DEFAULT_STRATA) if method == "stratified" else None
            asked = {"--human-sample": (str(requested).strip(), stored.requested), "--sample-seed": (seed, stored.seed),
                     "--sample": (method, stored.method), "--strata": (strata, stored.strata)}
        else:  # a rerun without --human-sample: only what it names must agree
            asked = {k: v for k, v in {"--sample": (method, stored.method), "--strata": (strata, stored.strata)}.items()
                     if v[0] is not None}
        differ = [k for k, (a, b) in asked.items() if a != b]
        if differ:
            raise HieraError(f"run {run_id} already has a human sample ({_described(stored)}: "
                             f"{len(stored.queries)} queries) and a sample is never redrawn; this request differs in "
                             f"{', '.join(differ)}. Rerun with the same --human-sample, --sample-seed, --sample and "
                             f"--strata (or none of them), or start another run with a new --run-id")
        return stored
    if requested is None:
        if method is not None or strata is not None:
            raise HieraError(f"--sample {method or 'random'} draws nothing without --human-sample N|P%")
        return None
    method = method or "random"
    if method not in METHODS:
        raise HieraError(f"--sample {method!r}: give one of {', '.join(METHODS)}")
    n = count(parse_size(requested), len(query_ids))
    k = (strata or DEFAULT_STRATA) if method == "stratified" else None
    if method == "active":  # drawn here to keep its probabilities and weights (the estimates weight by them)
        if uncertainty is None:
            run_draw(method, Draw(query_ids, n, seed))  # raises, saying what it needs
            raise AssertionError("unreachable")
        weights = active_weights(list(uncertainty()))
        queries, probs = draw_active(query_ids, n, seed, weights)
        return log.save(run_id, Sample(queries, seed, method, str(requested).strip(), probabilities=probs,
                                       weights=dict(zip(query_ids, weights))))
    queries, stratum = run_draw(method, Draw(query_ids, n, seed, k or DEFAULT_STRATA, uncertainty))
    return log.save(run_id, Sample(queries, seed, method, str(requested).strip(), k, stratum))


def _described(s: Sample) -> str:
    how = f"stratified, {s.strata} strata" if s.method == "stratified" else s.method
    return f"{s.requested}, seed {s.seed}, {how}"
