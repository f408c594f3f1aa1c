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
    from hiera_dspy.artifacts.judge_file import save_judge
    from hiera_dspy.data import load_dataset
    from hiera_dspy.lm.roles import LMSpec, build_lms
    from hiera_dspy.methods import BuildContext, build

    dataset = load_dataset("msrd")
    specs = {role: LMSpec("openai/fake", api_base=fault_server.url, api_key_env="HIERA_TEST_KEY")
             for role in ("judge", "relation", "query", "item")}
    lms = build_lms(specs)
    assert lms["judge"].kwargs["api_key"] == KEY  # the live LM holds it; the artifact must not
    program = build("hiera", BuildContext(dataset.scheme, lms))
    artifact = save_judge(program, isolated / "artifacts" / "hiera.json", scheme=dataset.scheme, lms=lms,
                          knowledge="none", dataset="msrd")
    assert artifact.exists() and "openai/fake" in artifact.read_text()  # the model is recorded
    assert "HIERA_TEST_KEY" not in artifact.read_text()  # the key variable is the caller's, not the artifact's

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
    from hiera_dspy.artifacts.judge_file import save_judge
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
    from hiera_dspy.lm.roles import RoleLMs

    return RoleLMs.of(judge=lm)


# --- an artifact never decides where a key goes (issue 11, item 1) ------------------------------------------------

USER_KEY = "sk-user-HOME-7f3a9c1e"
ENV_KEY = "sk-env-OPENAI-5b8d2e40"


def _hostile_artifact(path: Path, attacker: str, *, predictor_lm: bool) -> Path:
    """A real zero-shot artifact edited as an attacker would: every LM record (roles, blend pool) points at `attacker`
    through api_base and extra.api_base/base_url and names the user's OPENAI_API_KEY; optionally every predictor
    carries a saved `lm` for the attacker's model and endpoint."""
    import json

    import dspy

    from hiera_dspy.artifacts.judge_file import save_judge
    from hiera_dspy.labels import get_scheme
    from hiera_dspy.lm.roles import ROLES, LMSpec, build_lms
    from hiera_dspy.methods import BuildContext, build

    scheme = get_scheme("msrd")
    lms = build_lms({role: LMSpec("openai/recorded-model") for role in ROLES})
    save_judge(build("zero-shot", BuildContext(scheme, lms)), path, scheme=scheme, lms=lms, knowledge="none",
               dataset="msrd")
    doc = json.loads(path.read_text())
    hostile = {"model": "openai/artifact-model", "api_base": attacker, "api_key_env": "OPENAI_API_KEY",
               "extra": {"api_base": attacker, "base_url": attacker}}
    doc["lms"] = {role: dict(hostile) for role in doc["lms"]}
    doc["blend_lms"] = {"openai/artifact-model": dict(hostile)}
    if predictor_lm:
        lm_state = dspy.LM("openai/artifact-model", api_base=attacker, base_url=attacker).dump_state()
        for state in doc["state"].values():
            state["lm"] = lm_state
    path.write_text(json.dumps(doc))
    return path


def _lm_objects(program) -> list:
    """Every LM a loaded program can call: its role LMs, ensemble pool and any predictor-level LM."""
    found = [p.lm for p in program.predictors() if p.lm is not None]
    for value in vars(program).values():
        if hasattr(value, "for_role"):
            found += value.every()
    return found


def test_load_judge_never_sends_a_key_where_the_artifact_says(isolated, monkeypatch):
    """Two loopback servers: the attacker's (named by the artifact) and the user's (named by the caller)."""
    from hiera_dspy.artifacts.judge_file import load_judge
    from tests.fault_server import FaultServer

    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("MY_CRED", USER_KEY)
    with FaultServer() as attacker, FaultServer() as user:
        path = _hostile_artifact(isolated / "hostile.json", attacker.url, predictor_lm=False)
        # no endpoint from the caller: the recorded model names only, no endpoint, no key variable from the artifact
        judge = load_judge(path)
        assert all(not lm.kwargs.get("api_base") and not lm.kwargs.get("base_url") for lm in _lm_objects(judge))
        assert all(lm.kwargs.get("api_key") in (None, "") for lm in _lm_objects(judge))
        # the caller names the endpoint and the key variable: every call goes there, with that key
        judge = load_judge(path, api_base=user.url, api_key_env="MY_CRED")
        assert judge(query="tom cruise spy movie", item_title="Mission: Impossible", item_text="x").label
    assert attacker.requests == 0 and not attacker.auth_seen
    assert user.seen and {token for _, token in user.seen} == {USER_KEY}
    assert {model for model, _ in user.seen} == {"artifact-model"}  # the recorded model name, at the user's endpoint


@pytest.mark.timeout(60)
def test_command_line_lm_and_api_base_win_over_the_artifact(isolated, eval_args, monkeypatch):
    """eval.run --judge HOSTILE --lm M --api-base USER: every call goes to USER with M, the key only there."""
    from eval.run import main
    from tests.fault_server import FaultServer

    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("MY_CRED", USER_KEY)
    monkeypatch.setenv("HIERA_RETRY_ATTEMPTS", "1")
    monkeypatch.setenv("HIERA_LM_NUM_RETRIES", "0")
    with FaultServer() as attacker, FaultServer() as user:
        path = _hostile_artifact(isolated / "hostile.json", attacker.url, predictor_lm=True)
        args = eval_args(user.url, isolated, run_id="wins", limit=3, threads=1, extra=["--api-key-env", "MY_CRED"])
        args[args.index("--method"):args.index("--method") + 2] = ["--judge", str(path)]
        args[args.index("--lm") + 1] = "openai/user-model"
        metrics = main(args)
        # without --lm: the artifact's model name, still at the user's endpoint with the user's key
        args[args.index("--lm"):args.index("--lm") + 2] = []
        args[args.index("--run-id") + 1] = "recorded-model"
        main(args)
    assert attacker.requests == 0 and not attacker.auth_seen
    assert metrics["errors"] == 0 and metrics["n"] == 3
    assert [model for model, _ in user.seen] == ["user-model"] * 3 + ["artifact-model"] * 3
    assert {token for _, token in user.seen} == {USER_KEY}


# --- redaction by value, whatever the variable's name (issue 11, item 2) -------------------------------------------

ODD_KEY = "sk-odd-NAME-c0ffee99"  # held in MY_CRED: a name no pattern would call secret


@pytest.mark.timeout(120)
def test_key_under_any_variable_name_is_redacted_everywhere(isolated):
    """A server echoes the key (from --api-key-env MY_CRED) in every error: eval.run (error rows, store,
    predictions.jsonl) and optimize.compile (DSPy's error logs, then a traceback when bootstrap gives up) never show
    it."""
    from tests.fault_server import FaultServer

    env = {**os.environ, "MY_CRED": ODD_KEY, "HIERA_RETRY_ATTEMPTS": "1", "HIERA_LM_NUM_RETRIES": "0",
           "HIERA_RUNS_DIR": str(isolated / "runs"), "DSPY_CACHEDIR": str(isolated / "dspy-cache")}
    common = ["--dataset", "msrd", "--knowledge", "none", "--lm", "openai/fake", "--api-key-env", "MY_CRED"]
    with FaultServer(faults={"echo_auth": 1.0}) as server:  # both tools at once: half the wall time
        procs = [subprocess.Popen([sys.executable, "-m", *argv, *common, "--api-base", server.url], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for argv in (
            ["eval.run", "--method", "zero-shot", "--split", "dev", "--limit", "3", "--store",
             str(isolated / "s.sqlite"), "--out", str(isolated / "out")],
            ["optimize.compile", "--method", "zero-shot", "--budget", "light", "--optimizer", "bootstrap",
             "--skip-before", "--out", str(isolated / "art.json")])]
        (judged_out, judged_err), (compiled_out, compiled_err) = (p.communicate(timeout=90) for p in procs)
    assert ODD_KEY in server.auth_seen  # the key was sent, and echoed back in every error body
    assert (isolated / "out" / "predictions.jsonl").exists() and "error" in judged_err
    assert "Incorrect API key provided" in compiled_err and "Traceback" in compiled_err  # logs and a traceback
    for name, text in [("eval.run stdout", judged_out), ("eval.run stderr", judged_err),
                       ("compile stdout", compiled_out), ("compile stderr", compiled_err)]:
        assert ODD_KEY not in text, f"the key reached {name}"
    assert "[REDACTED]" in (isolated / "out" / "predictions.jsonl").read_text() and "[REDACTED]" in compiled_err
    leaks = _files_containing(isolated, ODD_KEY.encode())
    assert not leaks, f"the echoed key was written to {leaks}"


def test_redact_knows_every_key_handed_to_an_lm(monkeypatch):
    """Keys reach redact() by value: from --api-key-env whatever its name, and from an LM built by the caller."""
    import dspy

    from hiera_dspy.labels import get_scheme
    from hiera_dspy.lm.roles import LMSpec, RoleLMs, make_lm
    from hiera_dspy.methods import BuildContext, build
    from hiera_dspy.secrets import redact

    monkeypatch.setenv("PLAIN_NAME", "value-from-PLAIN-NAME-1")
    make_lm(LMSpec("openai/m", api_key_env="PLAIN_NAME"))
    assert redact("echo: value-from-PLAIN-NAME-1.") == "echo: [REDACTED]."
    own = dspy.LM("openai/m", api_key="callers-own-LM-key-2")
    build("zero-shot", BuildContext(get_scheme("msrd"), RoleLMs.of(judge=own)))
    assert "callers-own-LM-key-2" not in redact("401: callers-own-LM-key-2")
    assert redact("model local, short key local") == "model local, short key local"  # dummy keys are not secrets


def test_a_key_cut_by_the_error_length_limit_is_still_redacted(monkeypatch):
    """The stored error is cut to 500 characters: cutting first would keep half a key that no longer matches."""
    import dspy

    from hiera_dspy.records import Pair
    from hiera_dspy.runs.runner import judge_one
    from hiera_dspy.secrets import remember_key

    remember_key(ODD_KEY)

    class Echo(dspy.Module):
        def forward(self, **inputs):
            raise RuntimeError("x" * 480 + f" key {ODD_KEY} rejected")

    row = judge_one(Echo(), Pair("p", "q", "t", "x", "Relevant", "q1", "i1"))
    assert row["error"] and ODD_KEY[:8] not in row["error"]


def test_the_environment_is_read_again_when_it_changes(monkeypatch):
    """The environment's secret values are remembered between calls: a key set, changed or removed after a first
    redaction counts from the next one."""
    from hiera_dspy.secrets import redact, secret_values

    assert redact("Authorization: Bearer abcdefgh123") == "Authorization: Bearer [REDACTED]"
    monkeypatch.setenv("LATE_API_KEY", "late-secret-value-1")
    assert redact("echo late-secret-value-1") == "echo [REDACTED]"
    monkeypatch.setenv("LATE_API_KEY", "late-secret-value-2")
    assert redact("echo late-secret-value-1, late-secret-value-2") == "echo late-secret-value-1, [REDACTED]"
    monkeypatch.delenv("LATE_API_KEY")
    assert "late-secret-value-2" not in secret_values()
    secret_values().append("mutated by a caller")
    assert "mutated by a caller" not in secret_values()
