"""Votes survive a kill: `python -m eval.run --samples 3` killed with SIGKILL at random points and restarted ends with
one row per pair, each judgment's three samples counted once (the finished samples of a judgment in flight come back
from DSPy's disk cache, booked at their cost), and reports the metrics and costs of an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.reliability.test_kill import COST_KEYS, ROOT, TIMING_KEYS, _rows

SAMPLES = 3


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_voted_run_killed_and_resumed_counts_each_sample_once(isolated, fault_server, eval_args):
    from eval.run import main

    limit, threads, run_id = 20, 1, "voted"
    fault_server.latency = 0.15  # ~0.45 s a judgment, ~9 s a run: kills land between and inside judgments
    store = isolated / "store.sqlite"
    extra = ["--samples", str(SAMPLES), "--temperature", "0.7"]
    args = eval_args(fault_server.url, isolated, run_id=run_id, limit=limit, threads=threads, store=store,
                     method="zero-shot", extra=extra)
    env = {**os.environ, "DSPY_CACHEDIR": str(isolated / "subprocess-cache"), "PYTHONUNBUFFERED": "1"}
    rng = random.Random(5)
    kills = 0
    for attempt in range(4):
        before = len(_rows(store, run_id))
        with open(isolated / f"stderr-{attempt}.txt", "w") as err:
            proc = subprocess.Popen([sys.executable, "-m", "eval.run", *args], cwd=ROOT, env=env,
                                    stdout=subprocess.DEVNULL, stderr=err)
            deadline = time.monotonic() + 120
            while proc.poll() is None and len(_rows(store, run_id)) <= before and time.monotonic() < deadline:
                time.sleep(0.02)
            if proc.poll() is not None:
                break
            time.sleep(rng.uniform(0.5, 3.0))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
    final = subprocess.run([sys.executable, "-m", "eval.run", *args], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=400)
    assert final.returncode == 0, final.stderr[-2000:]
    requests_interrupted = fault_server.requests
    rows = _rows(store, run_id)
    assert len(rows) == limit and all(r["error"] is None and r["label"] for r in rows.values())
    assert all(r["lm_calls"] == SAMPLES for r in rows.values())  # every judgment: its three samples, once each
    assert kills >= 2, f"only {kills} kills landed: make the run longer"
    resumed = json.loads((isolated / "out" / run_id / "metrics.json").read_text())

    fault_server.reset_counts()
    baseline = main(eval_args(fault_server.url, isolated, run_id="clean", limit=limit, threads=threads,
                              store=isolated / "baseline.sqlite", method="zero-shot", extra=extra))
    requests_baseline = fault_server.requests
    assert requests_baseline == SAMPLES * limit  # distinct requests: the cache answered no sample with another's
    quality = lambda m: {k: v for k, v in m.items() if k not in TIMING_KEYS | COST_KEYS}  # noqa: E731
    assert quality(resumed) == quality(baseline)
    # a kill loses at most the one request in flight; the samples a killed judgment finished are not asked again
    assert requests_interrupted <= requests_baseline + kills * threads
    for key in ("tokens_per_judgment", "lm_calls_per_judgment"):
        assert resumed[key] == pytest.approx(baseline[key], rel=0.01), (key, resumed[key], baseline[key])
    assert resumed["lm_calls_per_judgment"] == SAMPLES
