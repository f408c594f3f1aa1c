"""The run store: one SQLite row per judgment, written (and committed) as soon as the judgment finishes.

A run killed at any moment and started again with the same run id skips every finished judgment, so nothing is paid
for twice and nothing is lost. WAL journal; one connection shared by worker threads behind a lock.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

from hiera_dspy.secrets import redact_obj

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, config TEXT NOT NULL, created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS judgments (
    run_id TEXT NOT NULL, pair_id TEXT NOT NULL, position INTEGER, gold TEXT, label TEXT,
    fields TEXT, steps TEXT, tokens INTEGER DEFAULT 0, lm_calls INTEGER DEFAULT 0, tokens_by_role TEXT,
    seconds REAL, error TEXT, escalated INTEGER DEFAULT 0, delegated INTEGER, human_label TEXT,
    attempts INTEGER DEFAULT 1, finished REAL,
    PRIMARY KEY (run_id, pair_id)
);
"""


class RunStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def start_run(self, run_id: str, config: dict) -> dict:
        """Create the run, or return the config it was created with (a resumed run keeps its first config)."""
        with self._lock:
            row = self._db.execute("SELECT config FROM runs WHERE run_id=?", (run_id,)).fetchone()
            if row:
                return json.loads(row[0])
            self._db.execute("INSERT INTO runs VALUES (?, ?, ?)", (run_id, json.dumps(config, default=str), time.time()))
            return config

    def run_config(self, run_id: str) -> dict | None:
        with self._lock:
            row = self._db.execute("SELECT config FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def finished_ids(self, run_id: str, include_errors: bool = True) -> set[str]:
        sql = "SELECT pair_id FROM judgments WHERE run_id=?" + ("" if include_errors else " AND error IS NULL")
        with self._lock:
            return {r[0] for r in self._db.execute(sql, (run_id,))}

    def record(self, run_id: str, row: dict) -> None:
        """Write one judgment in its own transaction (a retried judgment replaces its error row); every string in it
        is redacted of keys first (an error or a step may quote a server that echoed one)."""
        row = redact_obj(row)
        values = (run_id, row["id"], row.get("position"), row.get("gold"), row.get("label"),
                  json.dumps(row.get("fields", {}), default=str), json.dumps(row.get("steps", []), default=str),
                  row.get("tokens", 0), row.get("lm_calls", 0), json.dumps(row.get("tokens_by_role", {})),
                  row.get("seconds"), row.get("error"), int(bool(row.get("escalated"))),
                  None if row.get("delegated") is None else int(row["delegated"]), row.get("human_label"),
                  row.get("attempts", 1), time.time())
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("INSERT OR REPLACE INTO judgments VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", values)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def set_human_label(self, run_id: str, pair_id: str, label: str) -> bool:
        with self._lock:
            cur = self._db.execute("UPDATE judgments SET human_label=? WHERE run_id=? AND pair_id=?",
                                   (label, run_id, pair_id))
        return cur.rowcount == 1

    def rows(self, run_id: str) -> list[dict]:
        with self._lock:
            cur = self._db.execute("SELECT * FROM judgments WHERE run_id=? ORDER BY position, pair_id", (run_id,))
            names = [d[0] for d in cur.description]
            raw = cur.fetchall()
        rows = []
        for values in raw:
            row = dict(zip(names, values))
            for key in ("fields", "steps", "tokens_by_role"):
                row[key] = json.loads(row[key]) if row[key] else ({} if key != "steps" else [])
            row["id"] = row.pop("pair_id")
            row["escalated"] = bool(row["escalated"])
            row["delegated"] = None if row["delegated"] is None else bool(row["delegated"])
            rows.append(row)
        return rows

    def run_ids(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT run_id FROM runs ORDER BY created")]
