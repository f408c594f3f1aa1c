"""A person's decisions on judgments, kept beside the machine's labels in the run store (never replacing them).

One table in the run store's SQLite file (additive schema; the store's own tables are untouched apart from the
`human_label` column, which mirrors the latest decision so every metric counts it). Every decision is appended
with who made it, when, and through what (`via`: review-page, jsonl file, ...); the latest one per pair wins.

Example:
    >>> log = DecisionLog("runs/store.sqlite")                                   # doctest: +SKIP
    >>> log.record("3e21cc4c3621", "msrd:qid:1:2", "Relevant", who="ana")      # doctest: +SKIP
"""

from __future__ import annotations

import time

from hiera_dspy.runs.side_table import SideTable

SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    run_id TEXT NOT NULL, pair_id TEXT NOT NULL, label TEXT NOT NULL, machine_label TEXT,
    who TEXT NOT NULL, at REAL NOT NULL, via TEXT
);
CREATE INDEX IF NOT EXISTS decisions_run ON decisions (run_id, pair_id);
"""


class UnknownPair(KeyError):
    """The pair is not a judgment of the run."""


class DecisionLog(SideTable):
    """Decisions on the judgments of runs in one store file (its own connection; WAL lets it share the file)."""

    schema = SCHEMA

    def record(self, run_id: str, pair_id: str, label: str, who: str, via: str = "review-page") -> dict:
        """Append one decision and mirror it into the judgment's `human_label`, in one transaction."""
        if not who.strip():
            raise ValueError("a decision needs who made it")
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                found = self._db.execute("SELECT label FROM judgments WHERE run_id=? AND pair_id=?",
                                         (run_id, pair_id)).fetchone()
                if found is None:
                    raise UnknownPair(f"pair {pair_id!r} is not in run {run_id!r}")
                self._db.execute("INSERT INTO decisions VALUES (?,?,?,?,?,?,?)",
                                 (run_id, pair_id, label, found[0], who.strip(), now, via))
                self._db.execute("UPDATE judgments SET human_label=? WHERE run_id=? AND pair_id=?",
                                 (label, run_id, pair_id))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return {"pair_id": pair_id, "label": label, "machine_label": found[0], "who": who.strip(), "at": now,
                "via": via}

    def latest(self, run_id: str) -> dict[str, dict]:
        """pair id -> its latest decision {label, machine_label, who, at, via}."""
        with self._lock:
            rows = self._db.execute("SELECT pair_id, label, machine_label, who, at, via FROM decisions "
                                    "WHERE run_id=? ORDER BY at, rowid", (run_id,)).fetchall()
        return {r[0]: {"label": r[1], "machine_label": r[2], "who": r[3], "at": r[4], "via": r[5]} for r in rows}

    def history(self, run_id: str, pair_id: str) -> list[dict]:
        """Every decision on one pair, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT label, who, at, via FROM decisions WHERE run_id=? AND pair_id=? "
                                    "ORDER BY at, rowid", (run_id, pair_id)).fetchall()
        return [{"label": r[0], "who": r[1], "at": r[2], "via": r[3]} for r in rows]
