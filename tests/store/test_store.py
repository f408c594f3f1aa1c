"""The run store's guards: safe run ids, one run per run id, one writer per run (a lease that a dead holder does not
keep), and a clear error for a path that is not a run store."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from hiera_dspy.store import run_store as store_module
from hiera_dspy.store.run_store import RunBusy, RunMismatch, RunStore, StoreError, validate_run_id


@pytest.mark.parametrize("run_id", ["..", "../x", "a/b", "/etc", "/tmp/x", ".hidden", "a..b", "", "-rf", "a b",
                                    "a\\b", "x" * 129, "run\x00", "ü"])
def test_unsafe_run_ids_are_refused(run_id, tmp_path):
    with pytest.raises(StoreError, match="invalid run id"):
        validate_run_id(run_id)
    with RunStore(tmp_path / "s.sqlite") as store, pytest.raises(StoreError, match="invalid run id"):
        store.start_run(run_id, {})


@pytest.mark.parametrize("run_id", ["a", "0f3c9e1b2a4d", "hiera-dev_1.2", "zero-shot+k", "x" * 128, "_tmp", "a=b@c"])
def test_safe_run_ids(run_id):
    assert validate_run_id(run_id) == run_id


def test_a_run_id_names_one_config(tmp_path):
    with RunStore(tmp_path / "s.sqlite") as store:
        store.start_run("r", {"method": "hiera", "config": {"k": 3}, "limit": 5}, may_differ=("limit",))
        store.release("r")
        # the same run, a larger --limit: resumed
        assert store.start_run("r", {"method": "hiera", "config": {"k": 3}, "limit": 9}, may_differ=("limit",))
        store.release("r")
        with pytest.raises(RunMismatch) as err:
            store.start_run("r", {"method": "zero-shot", "config": {"k": 5}, "limit": 5}, may_differ=("limit",))
    message = str(err.value)
    assert "run 'r'" in message and 'method: "hiera" -> "zero-shot"' in message and "config: " in message
    assert "another --run-id" in message


def _lease(path, run_id="r"):
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT pid, host, token FROM leases WHERE run_id=?", (run_id,)).fetchone()
    finally:
        db.close()


def test_one_writer_per_run(tmp_path):
    path = tmp_path / "s.sqlite"
    first, second = RunStore(path), RunStore(path)
    first.start_run("r", {"m": 1})
    with pytest.raises(RunBusy, match=r"run 'r' in .* is being written by pid \d+ on .*--wait"):
        second.start_run("r", {"m": 1})
    with pytest.raises(RunBusy):
        second.record("r", {"id": "p1"})  # a writer that skipped start_run is refused too
    second.start_run("other", {"m": 1})  # another run of the same store is free
    first.record("r", {"id": "p1", "label": "Relevant"})
    first.release("r")
    second.start_run("r", {"m": 1})
    assert _lease(path)[2] == second._token
    first.close()
    second.close()
    assert _lease(path) is None  # close() gives every lease back


def test_wait_waits_for_the_writer(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(store_module, "WAIT_POLL", 0.02)
    path = tmp_path / "s.sqlite"
    with RunStore(path) as first, RunStore(path) as second:
        first.start_run("r", {})
        timer = threading.Timer(0.3, first.release, args=("r",))
        timer.start()
        start = time.perf_counter()
        second.start_run("r", {}, wait=True)
        assert time.perf_counter() - start >= 0.25
    assert "is being written by pid" in capsys.readouterr().err


def _insert_lease(path, pid, host, heartbeat, proc_start=None):
    RunStore(path).close()
    db = sqlite3.connect(path)
    with db:
        db.execute("INSERT OR REPLACE INTO leases VALUES (?,?,?,?,?,?,?)",
                   ("r", "someone-else", host, pid, proc_start, heartbeat, heartbeat))
    db.close()


def test_a_dead_holder_does_not_keep_the_run(tmp_path):
    path = tmp_path / "s.sqlite"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a process that ended (as after kill -9): its pid no longer exists
    _insert_lease(path, gone.pid, socket.gethostname(), time.time())
    with RunStore(path) as store:
        store.start_run("r", {})
        assert _lease(path)[2] == store._token


def test_a_live_holder_keeps_the_run_and_a_reused_pid_does_not(tmp_path):
    path = tmp_path / "s.sqlite"
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        _insert_lease(path, alive.pid, socket.gethostname(), time.time() - 3600)  # old heartbeat, same host: alive
        with RunStore(path) as store, pytest.raises(RunBusy, match=f"pid {alive.pid}"):
            store.start_run("r", {})
        if store_module.lease._proc_stat(alive.pid):  # /proc: the start time tells a reused pid apart
            _insert_lease(path, alive.pid, socket.gethostname(), time.time(), proc_start="1")
            with RunStore(path) as store:
                store.start_run("r", {})
    finally:
        alive.kill()
        alive.wait()


def test_a_holder_on_another_host_is_stale_after_its_heartbeat_stops(tmp_path):
    path = tmp_path / "s.sqlite"
    _insert_lease(path, 1, "elsewhere", time.time())
    with RunStore(path) as store, pytest.raises(RunBusy, match="on elsewhere"):
        store.start_run("r", {})
    _insert_lease(path, 1, "elsewhere", time.time() - store_module.lease.TTL - 1)
    with RunStore(path) as store:
        store.start_run("r", {})


def test_heartbeat_renews_the_lease(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module.lease, "HEARTBEAT", 0.05)
    path = tmp_path / "s.sqlite"
    with RunStore(path) as store:
        store.start_run("r", {})
        db = sqlite3.connect(path)
        first = db.execute("SELECT heartbeat FROM leases").fetchone()[0]
        time.sleep(0.3)
        assert db.execute("SELECT heartbeat FROM leases").fetchone()[0] > first
        db.close()


@pytest.mark.parametrize("content, problem", [
    (b"hello, I am a text file\n" * 10, "not a run store (file is not a database)"),
    (None, "is a folder"),
    ("other-app", "not a run store (a SQLite database without a judgments table (tables: notes))"),
])
def test_a_path_that_is_not_a_run_store(tmp_path, content, problem):
    path = tmp_path / "store.sqlite"
    if content is None:
        path.mkdir()
    elif content == "other-app":
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE notes (x)")
        db.close()
    else:
        path.write_bytes(content)
    with pytest.raises(StoreError) as err:
        RunStore(path)
    assert str(err.value).startswith(f"{path}: ") and problem in str(err.value)
    assert "\n" not in str(err.value)
