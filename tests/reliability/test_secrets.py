"""An API key given through --api-key-env reaches the server and nothing else: not the run store, metrics.json,
predictions.jsonl, stdout/stderr, the DSPy cache, nor a saved judge artifact; save_judge refuses secret-like fields."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-test-PLANTED-123"


def _files_containing(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.mark.timeout(90)
def test_planted_key_never_leaks(isolated, fault_server, eval_args, monkeypatch):
    monkeypatch.setenv("HIERA_TEST_KEY", KEY)
    # some faults too, so error paths (retries, error rows, warnings) are exercised
    fault_server.set_faults({"rate_limit": 0.1, "server_error": 0.05, "garbage": 0.1})
    env = {**os.environ, "HIERA_RETRY_ATTEMPTS": "1", "HIERA_LM_NUM_RETRIES": "0"}
    args = eval_args(fault_server.url, isolated, run_id="secrets", limit=12, threads=4,
                     extra=["--api-key-env", "HIERA_TEST_KEY"])
    proc = subprocess.run([sys.executable, "-m", "eval.run", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert KEY in fault_server.auth_seen, "the key must actually be sent to the server (else the test proves nothing)"
    assert "error" in proc.stderr  # error rows happened, so their messages were scanned too
    assert KEY not in proc.stdout and KEY not in proc.stderr

    # a judge artifact saved from the same LMs
    from hiera_dspy.artifacts import save_judge
    from hiera_dspy.data import load_dataset
    from hiera_dspy.lms import LMSpec, build_lms
    from hiera_dspy.methods import BuildContext, build

    dataset = load_dataset("msrd")
    specs = {role: LMSpec("openai/fake", api_base=fault_server.url, api_key_env="HIERA_TEST_KEY")
             for role in ("judge", "relation", "query", "item")}
    lms = build_lms(specs)
    assert lms["judge"].kwargs["api_key"] == KEY  # the live LM holds it; the artifact must not
    program = build("hiera", BuildContext(dataset.scheme, lms))
    artifact = save_judge(program, isolated / "artifacts" / "hiera.json", scheme=dataset.scheme, lms=lms,
                          knowledge="none", dataset="msrd")
    assert artifact.exists() and "HIERA_TEST_KEY" in artifact.read_text()  # the variable's name is kept

    checked = {p.name for p in isolated.rglob("*") if p.is_file()}
    assert {"store.sqlite", "metrics.json", "predictions.jsonl", "config.json", "hiera.json"} <= checked
    leaks = _files_containing(isolated, KEY.encode()) + _files_containing(isolated, KEY.removeprefix("sk-").encode())
    assert not leaks, f"the planted key was written to {leaks}"


def test_key_echoed_by_the_server_stays_out_of_outputs(isolated, eval_args, monkeypatch):
    """A (misbehaving) server that echoes the key in its error body: the error rows must not keep it."""
    from tests.fault_server import FaultServer

    monkeypatch.setenv("HIERA_TEST_KEY", KEY)
    monkeypatch.setenv("HIERA_RETRY_ATTEMPTS", "1")
    monkeypatch.setenv("HIERA_LM_NUM_RETRIES", "0")
    from eval.run import main

    with FaultServer(faults={"echo_auth": 1.0}) as server:
        metrics = main(eval_args(server.url, isolated, run_id="echo", limit=3, threads=1,
                                 extra=["--api-key-env", "HIERA_TEST_KEY"]))
    assert metrics["errors"] == 3
    leaks = _files_containing(isolated, KEY.encode())
    assert not leaks, f"the server's echo of the key reached {sorted(set(leaks))}"


@pytest.mark.parametrize("config", [{"api_key": "sk-live-xyz"}, {"nested": {"openai_token": "abc"}},
                                    {"lms": [{"Authorization": "Bearer abc"}]}, {"db_password": "hunter2"}])
def test_save_judge_refuses_secret_like_fields(isolated, config):
    from hiera_dspy.artifacts import save_judge
    from hiera_dspy.data import load_dataset
    from hiera_dspy.methods import BuildContext, build
    from hiera_dspy.testing import fake_lm

    dataset = load_dataset("msrd")
    program = build("judge-only", BuildContext(dataset.scheme))
    program.config = {**program.config, **config}
    target = isolated / "refused.json"
    with pytest.raises(ValueError, match="secret"):
        save_judge(program, target, scheme=dataset.scheme, lms=_lms(fake_lm()), knowledge="none", dataset="msrd")
    assert not target.exists() and not target.with_suffix(".json.tmp").exists()
    # names that only point at a secret are fine
    program.config = {**program.config, **{k: None for k in config}, "api_key_env": "OPENAI_API_KEY"}
    save_judge(program, target, scheme=dataset.scheme, lms=_lms(fake_lm()), knowledge="none", dataset="msrd")
    assert target.exists()


def _lms(lm):
    from hiera_dspy.lms import RoleLMs

    lms = RoleLMs(judge=lm)
    lms.specs = {}
    return lms
