"""--engine batch against a loopback Batch API: the thread engine's rows, level by level, split by limits, and a
killed run that resumes by polling its open batch instead of resubmitting."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from batch_server import BatchServer  # noqa: E402
from engine_helpers import ANSWERS, assert_same_run  # noqa: E402
from fault_server import FaultServer  # noqa: E402

from hiera_dspy.engines import EngineOptions, Job, judge  # noqa: E402
from hiera_dspy.engines.batch import request_key  # noqa: E402
from hiera_dspy.engines.openai_batch import BatchClient  # noqa: E402
from hiera_dspy.lm.roles import ROLES, LMSpec, build_lms  # noqa: E402
from hiera_dspy.methods import BuildContext, build  # noqa: E402
from hiera_dspy.store.run_store import RunStore  # noqa: E402

ROOT = TESTS.parent


def _job(msrd, pairs, url, store, **options):
    lms = build_lms({role: LMSpec("openai/fake", api_base=url) for role in ROLES})
    program = build("hiera", BuildContext(msrd.scheme, lms))
    return Job(program, pairs, store, "r", lms, progress=False, options=EngineOptions(**options))


def test_batch_gives_the_thread_engines_rows(msrd, pairs40, tmp_path):
    with FaultServer(ANSWERS) as server:
        reference = judge("threads", _job(msrd, pairs40, server.url, RunStore(tmp_path / "t.sqlite")))
        direct_requests = server.requests
    with BatchServer(ANSWERS, polls_to_complete=2) as api:
        store = RunStore(tmp_path / "b.sqlite")
        rows = judge("batch", _job(msrd, pairs40, api.url, store, poll_seconds=0.01, batch_max_requests=16))
    assert not any(r["error"] for r in reference)
    assert_same_run(rows, reference)
    assert max(api.submitted.values()) == 1  # every request sent once
    assert sum(api.submitted.values()) == api.lines_answered <= direct_requests
    assert len(api.batches) >= 6  # levels: triage, plan, query, item, synthesis, decision (40 triages: 3 files)
    assert all(b["request_counts"]["total"] <= 16 for b in api.batches.values())
    assert {b["status"] for b in store.batches("r")} == {"completed"}


def test_a_failed_request_is_an_error_row_and_retry_errors_sends_it_again(msrd, pairs40, tmp_path):
    pairs = pairs40[:6]
    with BatchServer(ANSWERS) as api:
        store = RunStore(tmp_path / "b.sqlite")
        job = _job(msrd, pairs, api.url, store, poll_seconds=0.01)
        # fail the first pair's triage: learn its key from a replay with no answers
        from hiera_dspy.engines.batch import Endpoint, replay_round
        from hiera_dspy.lm.intercept import lm_objects
        from hiera_dspy.runs.runner import Progress

        endpoints = {id(lm): Endpoint(lm) for lm in lm_objects(job.lms)}
        _, wanted = replay_round(job, [(0, pairs[0])], {}, endpoints, Progress(1, 0, False))
        (key,) = wanted
        api.fail_keys = {key}
        rows = judge("batch", job)
        assert [bool(r["error"]) for r in rows] == [True] + [False] * 5
        assert "injected failure" in rows[0]["error"]
        api.fail_keys = set()
        job.retry_errors = True
        rows = judge("batch", job)
    assert not any(r["error"] for r in rows) and api.submitted[key] == 2


def test_an_uploaded_file_whose_batch_exists_is_adopted_not_resubmitted(tmp_path):
    from hiera_dspy.engines.batch import wait

    with BatchServer(ANSWERS, polls_to_complete=1) as api:
        client = BatchClient(api.url, "sk-test")
        body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
        line = {"custom_id": request_key(body), "method": "POST", "url": "/v1/chat/completions", "body": body}
        import json

        file_id = client.upload((json.dumps(line) + "\n").encode())
        store = RunStore(tmp_path / "s.sqlite")
        store.add_batch("r", api.url, "fake", file_id, [request_key(body)])  # recorded, then the process died...
        client.create(file_id)  # ...right after the provider created the batch
        wait(store, "r", {api.url: client}, EngineOptions(poll_seconds=0.01), progress=False)
        assert len(api.batches) == 1 and api.submitted[request_key(body)] == 1
        assert store.batch_answers("r")[request_key(body)][1] is None


def _eval_run(url: str, store: Path, engine: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "eval.run", "--dataset", "msrd", "--split", "dev", "--limit", "20", "--method",
            "hiera", "--lm", "openai/fake", "--api-base", url, "--engine", engine, "--store", str(store),
            "--run-id", "killed", *extra]


@pytest.mark.slow
def test_a_killed_batch_run_resumes_without_resubmitting(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with FaultServer(ANSWERS) as server:
        from eval.run import main

        main(_eval_run(server.url, tmp_path / "t.sqlite", "threads", "--out", str(tmp_path / "t"))[3:])
    reference = RunStore(tmp_path / "t.sqlite").rows("killed")
    store_path = tmp_path / "b.sqlite"
    with BatchServer(ANSWERS, polls_to_complete=2) as api:
        api.hold = True  # every batch stays in_progress: the client is killed while it polls
        cmd = _eval_run(api.url, store_path, "batch", "--poll-seconds", "0.05", "--out", str(tmp_path / "b"))
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while time.time() < deadline and not any(api.polls.values()):
            time.sleep(0.05)
        assert any(api.polls.values()), proc.stderr.read().decode() if proc.poll() is not None else "no poll"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        first = dict(api.submitted)
        assert first and len(api.batches) == 1
        open_batches = RunStore(store_path).open_batches("killed")
        assert [b["batch_id"] for b in open_batches] == ["batch_1"]

        api.hold = False
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
    assert max(api.submitted.values()) == 1  # nothing submitted twice
    assert all(api.submitted[k] == 1 for k in first)
    assert_same_run(RunStore(store_path).rows("killed"), reference)
