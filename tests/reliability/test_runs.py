"""One writer per run, checked with real processes: while `python -m eval.run` writes a run, a second process on the
same run id refuses with a clear message and a third with --wait waits, then judges nothing; the LM is called once per
pair. The exit status tells the truth: above --max-error-rate it is non-zero, after every output is written."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hiera_dspy.errors import HieraError

ROOT = Path(__file__).resolve().parents[2]


def _rows(store: Path, run_id: str) -> int:
    if not store.exists():
        return 0
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute("SELECT COUNT(*) FROM judgments WHERE run_id=?", (run_id,)).fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0
    finally:
        db.close()


def _until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_second_writer_refuses_or_waits_and_each_pair_is_paid_once(isolated, fault_server, eval_args):
    limit, run_id, store = 6, "shared", isolated / "store.sqlite"
    args = eval_args(fault_server.url, isolated, run_id=run_id, limit=limit, threads=1, method="zero-shot",
                     store=store)

    def start(name: str, *extra: str) -> tuple[subprocess.Popen, Path]:
        # each process its own DSPy disk cache: a pair judged twice reaches the server twice
        env = {**os.environ, "DSPY_CACHEDIR": str(isolated / f"cache-{name}"), "HIERA_LM_TIMEOUT": "600",
               "PYTHONUNBUFFERED": "1"}
        err = isolated / f"stderr-{name}.txt"
        proc = subprocess.Popen([sys.executable, "-m", "eval.run", *args, *extra], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=open(err, "w"))
        return proc, err

    fault_server.pause()  # the first writer's first LM call is held by the server: it stays mid-run, lease held
    first, _ = start("first")
    try:
        assert _until(lambda: fault_server.requests >= 1 or first.poll() is not None, 180), "first writer never asked"
        second, second_err = start("second")
        waiter, waiter_err = start("waiter", "--wait")
        second_done = _until(lambda: second.poll() is not None, 180)
        waiting = _until(lambda: "waiting for it to finish" in waiter_err.read_text() or waiter.poll() is not None,
                         180)
        fault_server.resume()
        for proc in (first, second, waiter):
            proc.wait(timeout=180)
    finally:
        fault_server.resume()
        for proc in ("first", "second", "waiter"):
            p = locals().get(proc)
            if isinstance(p, subprocess.Popen) and p.poll() is None:
                p.kill()
    requests = fault_server.requests
    print(f"\nserver requests for {limit} pairs: {requests}; second: rc {second.returncode}; "
          f"waiter: rc {waiter.returncode}")
    assert first.returncode == 0
    assert second_done and second.returncode != 0, "the second writer must refuse while the first one runs"
    message = second_err.read_text().strip().splitlines()[-1]
    assert message.startswith(f"error: run '{run_id}' in {store} is being written by pid {first.pid} on ")
    assert "--wait" in message and "--run-id" in message
    assert waiting and waiter.returncode == 0, waiter_err.read_text()[-1500:]
    assert "waiting for it to finish" in waiter_err.read_text()
    assert requests == limit, "each pair judged (paid) exactly once"
    assert _rows(store, run_id) == limit
    assert json.loads((isolated / "out" / run_id / "metrics.json").read_text())["pairs"] == limit


def test_a_killed_writer_does_not_block_its_run(isolated, fault_server, eval_args):
    """kill -9 leaves the lease row behind; the next writer sees its holder is gone and takes the run over."""
    from eval.run import main

    run_id, store = "orphan", isolated / "store.sqlite"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        db = sqlite3.connect(store)
        from hiera_dspy.store.run_store import RunStore

        RunStore(store).close()  # create the tables
        stat = Path(f"/proc/{holder.pid}/stat")
        start = stat.read_text().rpartition(")")[2].split()[19] if stat.exists() else None
        with db:
            db.execute("INSERT INTO leases VALUES (?,?,?,?,?,?,?)",
                       (run_id, "other", socket.gethostname(), holder.pid, start, time.time(), time.time()))
        db.close()
        with pytest.raises(HieraError, match=f"is being written by pid {holder.pid}"):
            main(eval_args(fault_server.url, isolated, run_id=run_id, limit=2, threads=1, method="zero-shot"))
    finally:
        holder.kill()
        holder.wait()
    metrics = main(eval_args(fault_server.url, isolated, run_id=run_id, limit=2, threads=1, method="zero-shot"))
    assert metrics["pairs"] == 2 and fault_server.requests == 2


def test_exit_status_above_the_error_rate_after_writing_everything(isolated, eval_args):
    """1 pair in 4 fails (its label is not a label of the scheme): 25% > the default 0.05, so `python -m eval.run`
    exits with status 3, with metrics.json, predictions.jsonl and config.json written; --max-error-rate 0.5 accepts
    it (in-process: main returns)."""
    from eval.run import main
    from hiera_dspy.data import load_dataset
    from tests.fault_server import FaultServer

    broken = load_dataset("msrd").split("dev", 4)[0].query
    answers = {"label": lambda prompt: "Maybe" if broken in prompt else "Relevant"}
    out = isolated / "out" / "errs"
    with FaultServer(answers) as server:
        argv = eval_args(server.url, isolated, run_id="errs", limit=4, threads=1, method="zero-shot")
        at = argv.index("--max-error-rate")
        del argv[at:at + 2]  # the default
        proc = subprocess.run([sys.executable, "-m", "eval.run", *argv], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "DSPY_CACHEDIR": str(isolated / "cache-exit")}, timeout=90)
        assert proc.returncode == 3, proc.stderr[-1500:]
        assert "error: judgments ended in an error above --max-error-rate 0.05 (errs: 1 of 4 (25%))" in proc.stderr
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics["errors"] == 1 and metrics["pairs"] == 4
        assert len((out / "predictions.jsonl").read_text().splitlines()) == 4 and (out / "config.json").exists()
        (out / "metrics.json").unlink()
        assert main([*argv, "--max-error-rate", "0.5"])["errors"] == 1 and (out / "metrics.json").exists()
