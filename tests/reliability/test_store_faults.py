"""A store that cannot be written (full disk, a lock held past the busy timeout) stops the run with a clear message
(exit status 3) and keeps every judgment written before; the same command then resumes to one row per pair."""

from __future__ import annotations

import sqlite3

import pytest

from hiera_dspy.records import Pair
from hiera_dspy.runs.runner import run_pairs
from hiera_dspy.store.run_store import RunStore, StoreWriteFailed


class Echo:
    """A program that labels every pair Relevant (no LM)."""

    def __call__(self, **inputs):
        import dspy

        return dspy.Prediction(label="Relevant", argument="x" * 2000)


def _pairs(n):
    return [Pair(f"p{i}", f"query {i}", "t", "text", "Relevant", f"q{i}", f"i{i}") for i in range(n)]


def test_a_full_store_stops_the_run_keeps_what_was_written_and_resumes(tmp_path):
    path = tmp_path / "store.sqlite"
    store = RunStore(path)
    store.start_run("full", {"method": "echo"})
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count={pages + 6}")  # a few rows fit, then SQLITE_FULL
    with pytest.raises(StoreWriteFailed) as info:
        run_pairs(Echo(), _pairs(60), store, "full", threads=2, progress=False)
    message = str(info.value)
    assert message.startswith(f"run store {path}: cannot write the judgment of pair") and "full" in message
    assert "free disk space" in message and "rerun the same command" in message and info.value.exit_status == 3
    kept = {r.id for r in store.rows("full")}
    assert 0 < len(kept) < 60
    store._db.execute("PRAGMA max_page_count=1073741823")
    rows = run_pairs(Echo(), _pairs(60), store, "full", threads=2, progress=False)
    ids = [r.id for r in rows]
    assert sorted(ids) == sorted(p.id for p in _pairs(60)) and len(set(ids)) == 60


def test_a_lock_held_past_the_busy_timeout_is_a_clear_stop(tmp_path):
    path = tmp_path / "store.sqlite"
    store = RunStore(path)
    store.start_run("locked", {"method": "echo"})
    store._db.execute("PRAGMA busy_timeout=200")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreWriteFailed, match="locked.*another program holds a lock"):
            run_pairs(Echo(), _pairs(3), store, "locked", progress=False)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert len(run_pairs(Echo(), _pairs(3), store, "locked", progress=False)) == 3
