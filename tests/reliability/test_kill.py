"""Crash safety: `python -m eval.run` killed with SIGKILL at random points and restarted with the same --run-id ends
with exactly one row per pair, never re-judges a finished pair, and reports the metrics of an uninterrupted run, its
costs included (within 1%)."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMING_KEYS = {"run_id", "seconds_per_judgment", "seconds_p50", "seconds_p95",  # and this invocation's clock:
               "wall_seconds", "pairs_judged", "wall_ms_per_pair"}
COST_KEYS = {"tokens_per_judgment", "lm_calls_per_judgment", "tokens_by_role", "tokens_total"}


def _rows(store: Path, run_id: str) -> dict[str, dict]:
    if not store.exists():
        return {}
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        cur = db.execute("SELECT pair_id, label, error, finished, tokens, lm_calls FROM judgments WHERE run_id=?",
                         (run_id,))
        return {r[0]: dict(zip(("label", "error", "finished", "tokens", "lm_calls"), r[1:])) for r in cur}
    except sqlite3.OperationalError:  # the tables are not created yet
        return {}
    finally:
        db.close()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sigkill_and_resume(isolated, fault_server, eval_args):
    from eval.run import main

    limit, threads, run_id = 60, 2, "killed"  # latency-bound: <= ~11 pairs/s, so 4 kills land before the end
    fault_server.latency = 0.05
    store = isolated / "store.sqlite"
    args = eval_args(fault_server.url, isolated, run_id=run_id, limit=limit, threads=threads, store=store)
    env = {**os.environ, "DSPY_CACHEDIR": str(isolated / "subprocess-cache"), "PYTHONUNBUFFERED": "1"}
    rng = random.Random(20240607)
    finished_at: dict[str, float] = {}  # pair -> `finished` of its row as first seen after a kill
    kills, start = 0, time.perf_counter()
    for attempt in range(4):
        before = len(_rows(store, run_id))
        with open(isolated / f"stderr-{attempt}.txt", "w") as err:
            proc = subprocess.Popen([sys.executable, "-m", "eval.run", *args], cwd=ROOT, env=env,
                                    stdout=subprocess.DEVNULL, stderr=err)
            deadline = time.monotonic() + 30
            while proc.poll() is None and len(_rows(store, run_id)) <= before and time.monotonic() < deadline:
                time.sleep(0.02)  # wait until this process is judging (imports take ~3 s)
            if proc.poll() is not None:
                break  # it finished before we could kill it
            time.sleep(rng.uniform(0.2, 1.2))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
        rows = _rows(store, run_id)
        for pair, row in finished_at.items():
            assert rows[pair]["finished"] == row, f"{pair} was re-judged after a kill"
        finished_at.update({pair: row["finished"] for pair, row in rows.items() if pair not in finished_at})
        print(f"kill {kills}: {len(rows)}/{limit} rows in the store")

    final = subprocess.run([sys.executable, "-m", "eval.run", *args], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=60)
    assert final.returncode == 0, final.stderr[-2000:]
    requests_interrupted = fault_server.requests
    took = time.perf_counter() - start
    rows = _rows(store, run_id)
    assert len(rows) == limit and all(r["error"] is None and r["label"] for r in rows.values())
    for pair, finished in finished_at.items():
        assert rows[pair]["finished"] == finished, f"{pair} was re-judged"
    assert kills >= 3, f"only {kills} kills landed: make the run longer"
    resumed = json.loads((isolated / "out" / run_id / "metrics.json").read_text())

    # The same run, uninterrupted (in-process, own store and cache).
    fault_server.reset_counts()
    baseline = main(eval_args(fault_server.url, isolated, run_id="uninterrupted", limit=limit, threads=threads,
                              store=isolated / "baseline.sqlite"))
    requests_baseline = fault_server.requests
    print(f"{kills} kills, {took:.1f}s; server requests: interrupted {requests_interrupted}, "
          f"uninterrupted {requests_baseline}")
    quality = lambda m: {k: v for k, v in m.items() if k not in TIMING_KEYS | COST_KEYS}  # noqa: E731
    assert quality(resumed) == quality(baseline)
    # Only requests in flight at a kill are paid twice (finished LM calls are in the DSPy disk cache).
    assert requests_interrupted <= requests_baseline + kills * threads
    print("cost: resumed", {k: resumed[k] for k in COST_KEYS}, "uninterrupted", {k: baseline[k] for k in COST_KEYS})
    # Calls the killed processes paid for come back from the cache on resume: booked at the cost the cache entry
    # recorded, so the resumed run reports what a clean run reports (they read ~5% cheaper when booked as free).
    for key in ("tokens_per_judgment", "lm_calls_per_judgment"):
        assert resumed[key] == pytest.approx(baseline[key], rel=0.01), (key, resumed[key], baseline[key])
