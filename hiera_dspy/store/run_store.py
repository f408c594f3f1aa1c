"""The run store: one SQLite row per judgment, written (and committed) as soon as the judgment finishes.

A run killed at any moment and started again with the same run id skips every finished judgment, so nothing is paid
for twice and nothing is lost. One writer per run: a second process on the same run id is refused (or waits) while a
lease names a live writer (`store.lease`); a run id names one run, so reusing it with another method or config is
refused. Run ids are checked (`validate_run_id`): they name folders. WAL journal; one connection shared by worker
threads behind a lock.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
import threading
import time
import uuid
import weakref
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from hiera_dspy.errors import HieraError
from hiera_dspy.records import Judgment, RecordError, as_judgment
from hiera_dspy.secrets import redact_obj
from hiera_dspy.store import lease, sqlite
from hiera_dspy.store.lease import Holder

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
CREATE INDEX IF NOT EXISTS judgments_in_order ON judgments (run_id, position, pair_id);
CREATE TABLE IF NOT EXISTS notes (
    run_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_id, key)
);
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT, run_id TEXT NOT NULL, endpoint TEXT NOT NULL, model TEXT NOT NULL, input_file_id TEXT NOT NULL,
    keys TEXT NOT NULL, status TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (run_id, input_file_id)
);
CREATE TABLE IF NOT EXISTS batch_answers (
    run_id TEXT NOT NULL, key TEXT NOT NULL, response TEXT, error TEXT, PRIMARY KEY (run_id, key)
);
""" + lease.SCHEMA
RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+=@-]{0,127}")
RUN_ID_RULE = "1-128 characters from A-Z a-z 0-9 . _ - + = @, not starting with . - + = @ and without '..'"
BATCH_DONE = ("completed", "failed", "expired", "cancelled")  # a provider batch that will not change
WAIT_POLL = 0.5  # seconds between looks at a busy run's lease while waiting for it
WINDOW_QUERY = 500  # pair ids per `finished_among` query (far below SQLite's bound on variables)
READ_BATCH = 512  # rows fetched at a time by `iter_rows`
COMPRESSED = b"z"  # first byte of a compressed steps column (zlib of its JSON); older rows hold plain JSON text


class StoreError(HieraError):
    """A run store or run id problem; the message is one line naming the store or run and what to do."""


class RunBusy(StoreError):
    """Another live process is writing this run."""


class RunMismatch(StoreError):
    """The run id exists with another method or config."""


class StoreWriteFailed(StoreError):
    """A judgment could not be written (the disk is full, another program locks the file past the busy timeout):
    the run stops; every judgment written before it is kept, and the same command resumes. `exit_status` 3."""

    exit_status = 3


WRITE_ADVICE = {"full": "free disk space where the store lives", "locked": "another program holds a lock on the file "
                "longer than SQLite's 60 s busy timeout: end it", "readonly": "make the file and its folder writable"}


def write_failed(path: Path, what: str, exc: sqlite3.Error) -> StoreWriteFailed:
    """The StoreWriteFailed for a failed write of `what` to the store at `path`, with advice for the cause."""
    text = str(exc)
    advice = next((a for key, a in WRITE_ADVICE.items() if key in text.lower().replace("read-only", "readonly")),
                  "check the disk and the file")
    return StoreWriteFailed(f"run store {path}: cannot write {what} (SQLite: {text}); the run stopped and every "
                            f"judgment written before it is kept; {advice}, then rerun the same command to resume")


def validate_run_id(run_id: str) -> str:
    """The run id, if safe as a folder name: no '/', no '..', not absolute, a small charset; else StoreError."""
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise StoreError(f"invalid run id {run_id!r}: a run id names a folder under the runs folder, so it must be "
                         f"{RUN_ID_RULE}")
    return run_id


def _differences(old: dict, new: dict, may_differ: tuple[str, ...]) -> list[str]:
    keys = [k for k in dict.fromkeys([*old, *new]) if k not in may_differ and old.get(k) != new.get(k)]
    return [f"{k}: {_short(old.get(k))} -> {_short(new.get(k))}" for k in keys]


def _short(value) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


class RunStore:
    """The SQLite run store at `path` (created if absent); a StoreError if `path` is not one.

    Example:
        >>> with RunStore("runs/store.sqlite") as store:
        ...     store.start_run("my-run", {"method": "hiera"})   # creates the run and takes its lease
        ...     rows = run_pairs(program, pairs, store, "my-run")  # releases the lease when done
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._token = uuid.uuid4().hex
        self._held: set[str] = set()
        self._heartbeat: threading.Thread | None = None
        self._closed = False
        self._lock = threading.Lock()
        if self.path.is_dir():
            raise StoreError(f"{self.path}: is a folder; a run store is a SQLite file, e.g. "
                             f"{self.path / 'store.sqlite'}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite.open_write(self.path)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self.path}: cannot open the run store ({exc})") from None
        try:
            with self._lock:
                tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if tables and "judgments" not in tables:  # another application's database: leave it alone
                    raise StoreError(f"a SQLite database without a judgments table "
                                     f"(tables: {', '.join(sorted(tables))})")
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(SCHEMA)
                self._check_schema()
        except sqlite3.OperationalError as exc:  # a store that cannot be written (full, locked, read-only)
            self._db.close()
            raise write_failed(self.path, "the run store's tables", exc) from None
        except (sqlite3.DatabaseError, StoreError) as exc:
            self._db.close()
            raise StoreError(f"{self.path}: not a run store ({exc}); give --store a new file or an existing run "
                             f"store") from None

    def _check_schema(self) -> None:
        for table, columns in (("runs", ("run_id", "config")), ("judgments", ("run_id", "pair_id", "label", "error")),
                               ("leases", ("run_id",) + lease.COLUMNS)):
            found = {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}
            missing = [c for c in columns if c not in found]
            if missing:
                raise StoreError(f"its table {table!r} has no column(s) {missing}")

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Release every lease this store holds and close the database."""
        for run_id in list(self._held):
            self.release(run_id)
        with self._lock:
            self._closed = True
            self._db.close()

    def start_run(self, run_id: str, config: dict, *, may_differ: tuple[str, ...] = (), wait: bool = False) -> dict:
        """Create the run (or find it, started with the same config) and take its lease; return its first config.

        A run id names one run: an existing run whose config differs from `config` (keys in `may_differ` aside, e.g.
        a --limit that grows) raises RunMismatch. Another live writer raises RunBusy, or with `wait` is waited for.
        """
        run_id = validate_run_id(run_id)
        config = json.loads(json.dumps(config, default=str))
        with self._lock:
            row = self._db.execute("SELECT config FROM runs WHERE run_id=?", (run_id,)).fetchone()
            if row is None:
                self._db.execute("INSERT OR IGNORE INTO runs VALUES (?, ?, ?)",
                                 (run_id, json.dumps(config), time.time()))
                row = self._db.execute("SELECT config FROM runs WHERE run_id=?", (run_id,)).fetchone()
        first = json.loads(row[0])
        changed = _differences(first, config, may_differ)
        if changed:
            raise RunMismatch(f"run {run_id!r} in {self.path} was started with another method or config "
                              f"({'; '.join(changed[:4])}); a run id names one run: start a new run with another "
                              f"--run-id (or none: the default id is derived from the method, config, data and LMs)")
        self.claim(run_id, wait=wait)
        return first

    def claim(self, run_id: str, wait: bool = False) -> None:
        """Take the run's lease (a no-op if this store holds it): RunBusy while another live process holds it, or
        with `wait`, wait until it is released or its holder dies."""
        run_id = validate_run_id(run_id)
        if run_id in self._held:
            return
        announced = False
        while (holder := self._try_claim(run_id)) is not None:
            now = time.time()
            if not wait:
                raise RunBusy(f"run {run_id!r} in {self.path} is being written by {holder.describe(now)}; one writer "
                              f"per run: wait for it with --wait, or start another run with a new --run-id")
            if not announced:
                print(f"run {run_id} is being written by {holder.describe(now)}: waiting for it to finish",
                      file=sys.stderr)
                announced = True
            time.sleep(WAIT_POLL)
        self._held.add(run_id)
        if self._heartbeat is None:
            self._heartbeat = threading.Thread(target=_beat, args=(weakref.ref(self),), daemon=True,
                                               name=f"run-store-heartbeat-{self._token[:6]}")
            self._heartbeat.start()

    def _try_claim(self, run_id: str) -> Holder | None:
        """Take the lease if it is free, ours or stale (one transaction); else return its live holder."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(f"SELECT {', '.join(lease.COLUMNS)} FROM leases WHERE run_id=?",
                                       (run_id,)).fetchone()
                holder = Holder(*row) if row else None
                if holder and holder.token != self._token and not holder.is_stale(time.time()):
                    self._db.execute("ROLLBACK")
                    return holder
                self._db.execute("INSERT OR REPLACE INTO leases VALUES (?,?,?,?,?,?,?)",
                                 (run_id, *Holder.this_process(self._token).values()))
                self._db.execute("COMMIT")
                return None
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def release(self, run_id: str) -> None:
        """Give up the run's lease (a no-op if this store does not hold it). When the file cannot be written (full,
        locked) the lease row stays: the next writer takes it over once this process is gone."""
        if run_id not in self._held:
            return
        self._held.discard(run_id)
        with self._lock:
            try:
                self._db.execute("DELETE FROM leases WHERE run_id=? AND token=?", (run_id, self._token))
            except sqlite3.OperationalError:
                pass

    def _renew(self) -> bool:
        """Refresh the heartbeat of the leases held; False once the store is closed (the heartbeat thread ends)."""
        if self._closed:
            return False
        if self._held:
            with self._lock:
                self._db.execute("UPDATE leases SET heartbeat=? WHERE token=?", (time.time(), self._token))
        return True

    def run_config(self, run_id: str) -> dict | None:
        """The config the run was started with; None for an unknown run."""
        with self._lock:
            row = self._db.execute("SELECT config FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def amend_config(self, run_id: str, key: str, value) -> dict:
        """Replace one key of the run's stored config (a key that may differ between resumes, as `labelling`);
        returns the new config."""
        config = {**(self.run_config(run_id) or {}), key: value}
        with self._lock:
            self._db.execute("UPDATE runs SET config=? WHERE run_id=?", (json.dumps(config, default=str), run_id))
        return config

    def amend_gold(self, run_id: str, golds: Iterable[tuple[str, str | None]]) -> None:
        """Set the gold label of the run's judged pairs from (pair id, gold) pairs (the data read again)."""
        with self._lock:
            self._db.executemany("UPDATE judgments SET gold=? WHERE run_id=? AND pair_id=?",
                                 ((gold, run_id, pair_id) for pair_id, gold in golds))

    def labels(self, run_id: str) -> set[str]:
        """The distinct labels the run's judgments carry (errors and abstentions aside)."""
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT label FROM judgments WHERE run_id=? AND label IS NOT NULL",
                                    (run_id,)).fetchall()
        return {r[0] for r in rows}

    def finished_ids(self, run_id: str, include_errors: bool = True) -> set[str]:
        """Pair ids with a stored row in the run; without `include_errors`, only rows without an error."""
        sql = "SELECT pair_id FROM judgments WHERE run_id=?" + ("" if include_errors else " AND error IS NULL")
        with self._lock:
            return {r[0] for r in self._db.execute(sql, (run_id,))}

    def finished_among(self, run_id: str, pair_ids: Iterable[str], include_errors: bool = True) -> set[str]:
        """Which of `pair_ids` (a window of a split: at most a few thousand) have a stored row in the run; one
        indexed query per window, so resuming never loads the ids of a whole run."""
        ids = list(pair_ids)
        found: set[str] = set()
        extra = "" if include_errors else " AND error IS NULL"
        for start in range(0, len(ids), WINDOW_QUERY):
            part = ids[start:start + WINDOW_QUERY]
            sql = f"SELECT pair_id FROM judgments WHERE run_id=? AND pair_id IN ({','.join('?' * len(part))}){extra}"
            with self._lock:
                found.update(r[0] for r in self._db.execute(sql, (run_id, *part)))
        return found

    def count(self, run_id: str) -> int:
        """How many judgments the run has stored."""
        with self._lock:
            return self._db.execute("SELECT count(*) FROM judgments WHERE run_id=?", (run_id,)).fetchone()[0]

    def last_change(self, run_id: str) -> tuple[int, float | None]:
        """(rows, time of the last row written or human label set): what an export of the run is up to date with."""
        with self._lock:
            n, last = self._db.execute("SELECT count(*), max(finished) FROM judgments WHERE run_id=?",
                                       (run_id,)).fetchone()
        return n, last

    def record(self, run_id: str, row: Judgment | dict) -> None:
        """Write one judgment in its own transaction (a retried judgment replaces its error row). Every string in it
        is redacted of keys first (an error or a step may quote a server that echoed one); the writer must hold the
        run's lease (taken here if nobody else holds it). StoreWriteFailed when the file cannot be written."""
        self.record_many(run_id, [row])

    def record_many(self, run_id: str, rows: Iterable[Judgment | dict]) -> None:
        """`record` for many judgments in one transaction (an import, a benchmark's or a test's fixture)."""
        self.claim(run_id)
        judgments = [as_judgment(r) for r in rows]
        values = [(run_id, *_columns(redact_obj(j.to_dict())), time.time()) for j in judgments]
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany("INSERT OR REPLACE INTO judgments VALUES "
                                         "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", values)
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:  # disk full, locked past the busy timeout, read-only
                what = f"pair {judgments[0].id!r}" + (f" and {len(judgments) - 1} more" if len(judgments) > 1 else "")
                raise write_failed(self.path, f"the judgment of {what} of run {run_id!r}", exc) from None

    def rows(self, run_id: str) -> list[Judgment]:
        """The run's judgments, in split order (a list: for small runs and tests; `iter_rows` streams)."""
        return list(self.iter_rows(run_id))

    def iter_rows(self, run_id: str, *, columns: str = "*", gold_only: bool = False) -> Iterator[Judgment]:
        """The run's judgments in split order, streamed: a read connection of its own (WAL: a snapshot; writers are
        not blocked) walks the (run_id, position) index a batch at a time, so memory holds one batch, whatever the
        run's size. `columns` may name fewer columns (e.g. without `steps`) for readers that need less; `gold_only`
        keeps the rows with a gold label."""
        db = sqlite.open_read(self.path)
        try:
            where = " AND gold IS NOT NULL" if gold_only else ""
            cur = db.execute(f"SELECT {columns} FROM judgments WHERE run_id=?{where} "
                             "ORDER BY run_id, position, pair_id", (run_id,))
            names = [d[0] for d in cur.description]
            while batch := cur.fetchmany(READ_BATCH):
                for values in batch:
                    yield _judgment(dict(zip(names, values)))
        finally:
            db.close()

    # --- provider batches (--engine batch): ids and answers, so a restarted run polls and never resubmits ---------
    def add_batch(self, run_id: str, endpoint: str, model: str, input_file_id: str, keys: list[str],
                  batch_id: str | None = None, status: str = "submitting") -> None:
        """Record an uploaded batch input file (before the batch is created: a crash in between is recoverable)."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO batches VALUES (?,?,?,?,?,?,?,?)",
                             (batch_id, run_id, endpoint, model, input_file_id, json.dumps(keys), status, time.time()))

    def set_batch(self, run_id: str, input_file_id: str, batch_id: str, status: str) -> None:
        """Record the batch id and status of the batch submitted from `input_file_id`."""
        with self._lock:
            self._db.execute("UPDATE batches SET batch_id=?, status=? WHERE run_id=? AND input_file_id=?",
                             (batch_id, status, run_id, input_file_id))

    def open_batches(self, run_id: str) -> list[dict]:
        """Batches of the run whose answers are not collected yet (status not in BATCH_DONE)."""
        marks = ",".join("?" * len(BATCH_DONE))
        with self._lock:
            cur = self._db.execute(f"SELECT batch_id, endpoint, model, input_file_id, keys, status FROM batches "
                                   f"WHERE run_id=? AND status NOT IN ({marks}) ORDER BY created", (run_id, *BATCH_DONE))
            return [{"batch_id": b, "endpoint": e, "model": m, "input_file_id": f, "keys": json.loads(k), "status": s}
                    for b, e, m, f, k, s in cur.fetchall()]

    def batches(self, run_id: str) -> list[dict]:
        """Every batch of the run (id, status, request keys), oldest first."""
        with self._lock:
            cur = self._db.execute("SELECT batch_id, status, keys FROM batches WHERE run_id=? ORDER BY created",
                                   (run_id,))
            return [{"batch_id": b, "status": s, "keys": json.loads(k)} for b, s, k in cur.fetchall()]

    def collect_batch(self, run_id: str, input_file_id: str, status: str,
                      answers: dict[str, tuple[str | None, str | None]]) -> None:
        """Store a finished batch's answers (key -> (response JSON, error)) and its final status in one transaction."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO batch_answers VALUES (?,?,?,?)",
                                     [(run_id, k, resp, err) for k, (resp, err) in answers.items()])
                self._db.execute("UPDATE batches SET status=? WHERE run_id=? AND input_file_id=?",
                                 (status, run_id, input_file_id))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def batch_answers(self, run_id: str) -> dict[str, tuple[str | None, str | None]]:
        """The run's collected batch answers: request key -> (response JSON, error)."""
        with self._lock:
            cur = self._db.execute("SELECT key, response, error FROM batch_answers WHERE run_id=?", (run_id,))
            return {k: (r, e) for k, r, e in cur.fetchall()}

    def batch_answer(self, run_id: str, key: str) -> tuple[str | None, str | None] | None:
        """One collected batch answer: (response JSON, error), or None when the request has no answer yet."""
        with self._lock:
            row = self._db.execute("SELECT response, error FROM batch_answers WHERE run_id=? AND key=?",
                                   (run_id, key)).fetchone()
        return None if row is None else (row[0], row[1])

    def forget_batch_errors(self, run_id: str) -> int:
        """Drop the run's failed batch answers (--retry-errors: those requests are sent again)."""
        with self._lock:
            return self._db.execute("DELETE FROM batch_answers WHERE run_id=? AND error IS NOT NULL",
                                    (run_id,)).rowcount

    def note(self, run_id: str, key: str):
        """A small JSON value kept beside the run (e.g. what its last export was made from); None when unset."""
        with self._lock:
            row = self._db.execute("SELECT value FROM notes WHERE run_id=? AND key=?", (run_id, key)).fetchone()
        return json.loads(row[0]) if row else None

    def set_note(self, run_id: str, key: str, value) -> None:
        """Keep a small JSON value beside the run (replacing the last one under `key`)."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO notes VALUES (?,?,?)", (run_id, key, json.dumps(value)))

    def run_ids(self) -> list[str]:
        """Every run id in the store, oldest first."""
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT run_id FROM runs ORDER BY created")]


JSON_COLUMNS = ("fields", "steps", "tokens_by_role")  # judgment columns stored as JSON (steps compressed)


def _columns(row: dict) -> tuple:
    """A judgment's `to_dict()` as the judgments table's columns after run_id, before `finished`."""
    return (row["id"], row["position"], row["gold"], row["label"], json.dumps(row["fields"], default=str),
            _pack_steps(row["steps"]), row["tokens"], row["lm_calls"], json.dumps(row["tokens_by_role"]),
            row["seconds"], row["error"], int(bool(row["escalated"])),
            None if row["delegated"] is None else int(row["delegated"]), row["human_label"], row["attempts"])


def no_run(store: RunStore, run_id: str) -> str:
    """The message for a run id the store does not hold: where it looked and the latest runs there."""
    return (f"no run {run_id!r} in {store.path} (the store: field `store`, flag --store; default "
            f"$HIERA_RUNS_DIR/store.sqlite, else runs/store.sqlite); its latest runs: "
            f"{', '.join(store.run_ids()[-5:]) or 'none'}")


def _judgment(columns: dict) -> Judgment:
    """A Judgment from one judgments-table row (JSON columns decoded; rows of every earlier version load)."""
    for key in JSON_COLUMNS:
        if key in columns:
            columns[key] = _unpack(columns[key]) if columns[key] else None
    try:
        return Judgment.from_dict(columns)
    except RecordError as exc:
        raise StoreError(f"run {columns.get('run_id')!r}, pair {columns.get('pair_id')!r}: {exc}") from None


def _pack_steps(steps: list) -> bytes | str:
    """The steps column: zlib-compressed JSON (a HIERA step trace shrinks several times; see docs/scale.md)."""
    if not steps:
        return "[]"
    return COMPRESSED + zlib.compress(json.dumps(steps, default=str, separators=(",", ":")).encode(), 6)


def _unpack(value: bytes | str):
    """A JSON column's value: plain JSON text, or a compressed steps blob."""
    if isinstance(value, bytes):
        return json.loads(zlib.decompress(value[1:]) if value[:1] == COMPRESSED else value)
    return json.loads(value)


def _beat(ref: weakref.ref) -> None:
    """Heartbeat thread body: renew the store's leases every lease.HEARTBEAT seconds while it holds any."""
    while True:
        time.sleep(lease.HEARTBEAT)
        store = ref()
        try:
            if store is None or not store._renew():
                return
        except sqlite3.Error:  # closed underneath us
            return
        finally:
            del store
