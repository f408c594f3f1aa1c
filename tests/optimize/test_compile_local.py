"""`python -m bench.compile_local`: a MIPROv2 light compile on the first N pairs against a loopback server, its record,
and its run-scoped cache (a second run, or a killed one started again, replays the LM calls already answered)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.bench_command import run_bench
from tests.optimize.any_signature_server import AnySignatureServer

ROOT = Path(__file__).resolve().parents[2]


def test_compile_local_records_before_after_and_replays_from_its_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERA_REFERENCE", "none")
    args = ["--limit", "6", "--out-dir", str(tmp_path / "results"), "--knowledge", "none", "--lm",
            "openai/any-signature"]
    written = tmp_path / "results" / "compile_local.json"
    with AnySignatureServer() as server:
        run_bench("compile_local", *args, "--api-base", server.url)
        record, first = json.loads(written.read_text()), len(server.requests)
        run_bench("compile_local", *args, "--api-base", server.url)
        again, replayed = json.loads(written.read_text()), len(server.requests) - first
    assert record["n_train"] == record["n_dev"] == 6 and record["before"]["n"] == record["after"]["n"] == 6
    assert "--optimizer mipro --budget light-full-first6" in record["command"] and record["wall_seconds"] >= 0
    assert first > 12  # the search made calls of its own beyond judging dev twice
    assert replayed == 0 and again["after"]["kappa"] == record["after"]["kappa"]  # everything came from the cache
    assert Path(record["artifact"]).is_file() and (tmp_path / "results" / "compile-local" / "zero-shot+probs" /
                                                   "dspy-cache").is_dir()
    md = (tmp_path / "results" / "compile_local.md").read_text()
    assert "| before | 6 |" in md and "| after | 6 |" in md


@pytest.mark.slow
def test_a_killed_compile_resumes_from_its_cached_lm_calls(tmp_path):
    env = {**os.environ, "HIERA_REFERENCE": "none", "HIERA_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    log = tmp_path / "requests.jsonl"
    with AnySignatureServer(log=str(log)) as server:
        cmd = [sys.executable, "-m", "bench.compile_local", "--limit", "4", "--out-dir",
               str(tmp_path / "results"), "--knowledge", "none", "--lm", "openai/any-signature", "--api-base",
               server.url]
        job = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while len(server.requests) < 8 and job.poll() is None:
            time.sleep(0.01)
        job.send_signal(signal.SIGKILL)
        job.wait()
        killed = log.read_text().splitlines()
        done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        resumed = log.read_text().splitlines()[len(killed):]
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(killed) >= 8 and resumed
    repeated = set(killed) & set(resumed)
    assert len(repeated) <= 1  # at most the call in flight when it was killed is asked again
    assert json.loads((tmp_path / "results" / "compile_local.json").read_text())["after"]["n"] == 4
