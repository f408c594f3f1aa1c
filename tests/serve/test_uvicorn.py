"""`python -m eval.serve` as a person starts it, a real uvicorn child process on loopback (slow: the child loads the
judge): it answers with the token, refuses without it, stays up after a 20 MB body and malformed JSON, never prints
the token; off loopback without a token it refuses to start. And bench.serve runs small end to end."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from tests.bench_command import ROOT, run_bench

pytestmark = pytest.mark.slow

PAIR = {"query": "tom cruise spy movie", "item_title": "Mission: Impossible", "item_text": "A spy must find a mole."}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "eval.serve", *args], cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_real_server_answers_refuses_and_stays_up(artifact):
    port, token = free_port(), "t0ken-that-must-not-leak"
    proc = serve("--judge", str(artifact), "--port", str(port), "--token-env", "SERVE_TOKEN",
                 env={"SERVE_TOKEN": token})
    base, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        ok = httpx.post(f"{base}/judge", json=PAIR, headers=auth)
        assert ok.status_code == 200 and ok.json()["label"] in ("Irrelevant", "Relevant")
        assert httpx.post(f"{base}/judge", json=PAIR).status_code == 401
        big = httpx.post(f"{base}/judge", content=b"x" * (20 * 1024 * 1024), headers=auth, timeout=60)
        assert big.status_code == 413 and "over the limit" in big.json()["error"]
        assert httpx.post(f"{base}/judge", content=b"{not json", headers=auth).status_code == 400
        batch = httpx.post(f"{base}/judge", json={"pairs": [PAIR, PAIR]}, headers=auth)
        assert [j["label"] for j in batch.json()["judgments"]] == [ok.json()["label"]] * 2
        metrics = httpx.get(f"{base}/metrics", headers=auth).json()
        assert metrics["requests"] == {"200": 2, "400": 1, "401": 1, "413": 1} and metrics["pairs_judged"] == 3
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert token not in out + err and "serving embed-lr" in err


def test_off_loopback_without_a_token_it_refuses_to_start(artifact):
    proc = serve("--judge", str(artifact), "--host", "0.0.0.0", "--port", str(free_port()))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "requires a bearer token" in err


def test_the_benchmark_runs_small(artifact, tmp_path):
    run_bench("serve", "--judge", artifact, "--requests", "200", "--clients", "4", "--out", tmp_path)
    result = json.loads((tmp_path / "serve.json").read_text())
    assert result["errors"] == 0 and result["statuses"] == {"200": 200}
    assert result["latency_ms"]["p99"] > 0 and result["token_in_server_output"] is False
    assert result["abuse"] == {"malformed JSON": 400, "malformed JSON: then a good request": 200,
                               "20 MB body": 413, "20 MB body: then a good request": 200,
                               "missing fields": 422, "missing fields: then a good request": 200,
                               "wrong token": 401, "wrong token: then a good request": 200,
                               "no token": 401, "no token: then a good request": 200}
    assert (tmp_path / "serve.md").read_text().startswith("# The judge service under load")
