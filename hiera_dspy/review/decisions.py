"""A person's decisions on judgments, kept beside the machine's labels in the run store (never replacing them).

One table in the run store's SQLite file (additive schema; the store's own tables are untouched apart from the
`human_label` column, which mirrors the latest decision so every metric counts it). Every decision is appended
with who made it, when, and through what (`via`: review-page, jsonl file, ...); the latest one per pair wins. A batch
of decisions (a decisions file) is one transaction; a decision equal to the pair's latest one is not stored again.

Example:
    >>> log = DecisionLog("runs/store.sqlite")                                   # doctest: +SKIP
    >>> log.record("3e21cc4c3621", "msrd:qid:1:2", "Relevant", who="ana")      # doctest: +SKIP
"""

from __future__ import annotations

import time

from hiera_dspy.errors import HieraError
from hiera_dspy.store.side_table import SideTable

SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    run_id TEXT NOT NULL, pair_id TEXT NOT NULL, label TEXT NOT NULL, machine_label TEXT,
    who TEXT NOT NULL, at REAL NOT NULL, via TEXT
);
CREATE INDEX IF NOT EXISTS decisions_run ON decisions (run_id, pair_id);
"""


class UnknownPair(HieraError, KeyError):
    """The pair is not a judgment of the run."""


class DecisionLog(SideTable):
    """Decisions on the judgments of runs in one store file (its own connection; WAL lets it share the file)."""

    schema = SCHEMA

    def record(self, run_id: str, pair_id: str, label: str, who: str, via: str = "review-page") -> dict:
        """Append one decision and mirror it into the judgment's `human_label`, in one transaction (`record_many`)."""
        return self.record_many(run_id, [(pair_id, label, who)], via)[0]

    def record_many(self, run_id: str, decisions: list[tuple[str, str, str]], via: str = "review-page") -> list[dict]:
        """Append every (pair id, label, who) in ONE transaction, all or nothing: UnknownPair (nothing stored) when a
        pair is not a judgment of the run. A decision whose label is the pair's latest decision already is not stored
        again (its dict says `unchanged`); a changed one is, with who and now."""
        if any(not who.strip() for _, _, who in decisions):
            raise HieraError("a decision needs who made it")
        now = time.time()
        out = []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for pair_id, label, who in decisions:
                    out.append(self._one(run_id, pair_id, label, who.strip(), via, now))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return out

    def _one(self, run_id: str, pair_id: str, label: str, who: str, via: str, now: float) -> dict:
        found = self._db.execute("SELECT label FROM judgments WHERE run_id=? AND pair_id=?",
                                 (run_id, pair_id)).fetchone()
        if found is None:
            raise UnknownPair(f"pair {pair_id!r} is not in run {run_id!r}")
        last = self._db.execute("SELECT label, who, at, via FROM decisions WHERE run_id=? AND pair_id=? "
                                "ORDER BY at DESC, rowid DESC LIMIT 1", (run_id, pair_id)).fetchone()
        if last is not None and last[0] == label:  # the same decision again (a file applied twice): stored once
            return {"pair_id": pair_id, "label": label, "machine_label": found[0], "who": last[1], "at": last[2],
                    "via": last[3], "unchanged": True}
        self._db.execute("INSERT INTO decisions VALUES (?,?,?,?,?,?,?)",
                         (run_id, pair_id, label, found[0], who, now, via))
        self._db.execute("UPDATE judgments SET human_label=? WHERE run_id=? AND pair_id=?", (label, run_id, pair_id))
        return {"pair_id": pair_id, "label": label, "machine_label": found[0], "who": who, "at": now, "via": via,
                "unchanged": False}

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
