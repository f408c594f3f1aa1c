"""Fault injection: every judgment ends as a label or an error row (exactly one row per pair), errors are reported,
retries are bounded, concurrency is capped at --threads, and --retry-errors with faults off leaves no error."""

from __future__ import annotations

import json
import random
import sqlite3
import time

import dspy
import pytest

from hiera_dspy.lm import retry
from hiera_dspy.lm.retry import RetryPolicy, backoff_delay, with_retries
from hiera_dspy.lm.roles import LMSpec, make_lm
from tests.fault_server import FaultServer

MIXED_20 = {"rate_limit": 0.04, "server_error": 0.03, "unavailable": 0.03, "timeout": 0.02, "drop": 0.03,
            "empty": 0.025, "garbage": 0.025}
LABELS = {"Irrelevant", "Relevant"}


def _store_rows(path, run_id):
    db = sqlite3.connect(path)
    try:
        cur = db.execute("SELECT pair_id, label, error, finished, lm_calls FROM judgments WHERE run_id=?", (run_id,))
        return [dict(zip(("id", "label", "error", "finished", "lm_calls"), r)) for r in cur]
    finally:
        db.close()


def _pair_ids(limit):
    from hiera_dspy.data import load_dataset

    return [p.id for p in load_dataset("msrd").split("dev", limit)]


def _check_outputs(out, store, run_id, ids):
    rows = _store_rows(store, run_id)
    assert sorted(r["id"] for r in rows) == sorted(ids), "exactly one store row per pair, none lost or extra"
    for r in rows:
        assert (r["label"] in LABELS) != bool(r["error"]), f"row must be a label xor an error: {r}"
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert sorted(p["id"] for p in preds) == sorted(ids)
    metrics = json.loads((out / "metrics.json").read_text())
    errors = sum(1 for r in rows if r["error"])
    assert metrics["errors"] == errors and metrics["pairs"] == len(ids)
    assert metrics["n"] == len(ids) and metrics["answered"] == len(ids) - errors  # every pair scored
    return rows, metrics


@pytest.mark.timeout(90)
def test_faulty_run_then_retry_errors(isolated, fault_server, retry_hook, eval_args):
    from eval.run import main

    limit, threads = 40, 8
    ids = _pair_ids(limit)
    store, out = isolated / "store.sqlite", isolated / "out"
    fault_server.set_faults(MIXED_20)
    fault_server.latency = 0.02  # requests overlap, so the concurrency cap is observable
    start = time.perf_counter()
    main(eval_args(fault_server.url, isolated, run_id="faults", limit=limit, threads=threads, store=store, out=out))
    took = time.perf_counter() - start
    stats = fault_server.stats()
    rows, metrics = _check_outputs(out, store, "faults", ids)
    print(f"\nfaulty run: {limit} pairs in {took:.1f}s, {metrics['errors']} error rows, server {stats}")
    injected = {k: stats.get(k, 0) for k in MIXED_20}
    assert all(injected.values()), f"every fault kind should have been injected at least once: {injected}"
    assert stats["requests"] > stats["ok"], "faults were retried"
    assert stats["max_in_flight"] <= threads, "no more requests in flight than --threads"

    fault_server.set_faults({})
    fault_server.reset_counts()
    before = {r["id"]: r["finished"] for r in rows if not r["error"]}
    main(eval_args(fault_server.url, isolated, run_id="faults", limit=limit, threads=threads, store=store, out=out,
                   extra=["--retry-errors"]))
    rows2, metrics2 = _check_outputs(out, store, "faults", ids)
    assert metrics2["errors"] == 0, [r for r in rows2 if r["error"]]
    assert {r["id"]: r["finished"] for r in rows2 if r["id"] in before} == before, "good rows were not re-judged"
    print(f"--retry-errors: {metrics['errors']} -> 0 errors with {fault_server.requests} requests")
    assert took < 60


@pytest.mark.timeout(90)
def test_retry_errors_is_not_defeated_by_cached_garbage(isolated, fault_server, retry_hook, eval_args, monkeypatch):
    """DSPy caches every HTTP 200 answer, garbage included: a retry must bypass the cache, or --retry-errors would
    replay the same unparseable answers forever (the disk cache outlives the process)."""
    from eval.run import main

    limit, threads = 12, 4
    ids = _pair_ids(limit)
    store, out = isolated / "store.sqlite", isolated / "out"
    fault_server.set_faults({"garbage": 0.5, "empty": 0.2})
    monkeypatch.setenv("HIERA_RETRY_ATTEMPTS", "1")  # no content retries in the first run: error rows for sure
    first = main(eval_args(fault_server.url, isolated, run_id="garbage", limit=limit, threads=threads, store=store,
                           out=out))
    assert first["errors"] > 0
    fault_server.set_faults({})
    monkeypatch.setenv("HIERA_RETRY_ATTEMPTS", "3")
    second = main(eval_args(fault_server.url, isolated, run_id="garbage", limit=limit, threads=threads, store=store,
                            out=out, extra=["--retry-errors"]))
    _check_outputs(out, store, "garbage", ids)
    assert second["errors"] == 0


def test_lm_retries_transport_faults_honouring_retry_after(isolated):
    """make_lm's LM (DSPy's own loop) retries 429/503 after Retry-After, and 500/timeouts/drops after 1, 2 s."""
    class Sig(dspy.Signature):
        query: str = dspy.InputField()
        answer: str = dspy.OutputField()

    with FaultServer(script=["rate_limit", "unavailable", "ok"], retry_after=0.3) as server:
        lm = make_lm(LMSpec("openai/fake", api_base=server.url))
        assert lm.num_retries == 2 and lm.kwargs["timeout"] == 0.5  # from FAST_RETRY_ENV
        start = time.perf_counter()
        with dspy.context(lm=lm):
            assert dspy.Predict(Sig)(query="q").answer == "fake answer"
        took = time.perf_counter() - start
        assert server.stats()["requests"] == 3
        assert 0.6 <= took < 1.5, took  # two Retry-After: 0.3 waits

    with FaultServer(script=["timeout", "drop", "server_error"], hang=1.0) as server:
        lm = make_lm(LMSpec("openai/fake", api_base=server.url))
        start = time.perf_counter()
        with dspy.context(lm=lm), pytest.raises(Exception) as info:
            dspy.Predict(Sig)(query="q")
        took = time.perf_counter() - start
        assert server.stats()["requests"] == 3, "bounded: num_retries + 1 attempts"
        assert info.value.__class__.__name__ in ("LMServerError",)
        assert 3.4 <= took < 5, took  # 0.5 s read timeout + 1 s + 2 s of DSPy backoff


def test_content_faults_are_retried_by_the_policy(isolated):
    class Sig(dspy.Signature):
        query: str = dspy.InputField()
        answer: str = dspy.OutputField()

    # ChatAdapter answer empty, its JSON fallback garbage: DSPy gives up; the policy asks again (cache bypassed).
    with FaultServer(script=["empty", "garbage", "garbage", "empty", "ok"]) as server:
        lm = make_lm(LMSpec("openai/fake", api_base=server.url))
        with dspy.context(lm=lm), pytest.raises(Exception) as info:
            dspy.Predict(Sig)(query="q")
        assert info.value.__class__.__name__ == "AdapterParseError"
        assert server.requests == 2
        with dspy.context(lm=lm), retry.retrying(RetryPolicy(attempts=3, base_delay=0.01)) as adapter:
            assert dspy.Predict(Sig)(query="q").answer == "fake answer"
        # attempt 0 replays the cached empty/garbage pair (no request), attempt 1 gets garbage + empty, attempt 2 "ok"
        assert server.requests == 5 and adapter.retries == 2
        with retry.retrying() as again:  # idempotent
            with retry.retrying() as inner:
                assert inner is again


def test_with_retries_policy_units():
    sleeps = []
    calls = []

    class Flaky(Exception):
        retry_after = None

    def call(attempt):
        calls.append(attempt)
        raise Flaky("x")

    rng = random.Random(0)
    with pytest.raises(Flaky):
        with_retries(call, attempts=4, base_delay=0.5, max_delay=1.0, rng=rng, retry_on=lambda e: True,
                     sleep=sleeps.append)
    assert calls == [0, 1, 2, 3] and len(sleeps) == 3
    assert all(0 <= s <= min(1.0, 0.5 * 2 ** i) for i, s in enumerate(sleeps))
    # a server hint is a floor, plus at most base_delay of jitter
    assert all(2.0 <= backoff_delay(i, 0.5, 1.0, rng, retry_after=2.0) <= 2.5 for i in range(20))
    # jitter really varies
    assert len({round(backoff_delay(3, 1.0, 30.0, rng), 6) for _ in range(20)}) > 10
    # non-transient errors are not retried; a Retry-After beyond max_retry_after gives up at once
    calls.clear()
    with pytest.raises(ValueError):
        with_retries(lambda a: calls.append(a) or (_ for _ in ()).throw(ValueError()), attempts=3, sleep=sleeps.append)
    assert calls == [0]
    Flaky.retry_after = 500
    calls.clear()
    with pytest.raises(Flaky):
        with_retries(call, attempts=3, retry_on=lambda e: True, max_retry_after=60, sleep=sleeps.append)
    assert calls == [0]
    assert with_retries(lambda a: a, attempts=1) == 0


def test_awith_retries():
    import asyncio

    from dspy.utils.exceptions import LMServerError

    from hiera_dspy.lm.retry import awith_retries

    calls = []

    async def call(attempt):
        calls.append(attempt)
        if attempt < 2:
            raise LMServerError("503", retry_after=0.01)
        return "ok"

    assert asyncio.run(awith_retries(call, attempts=3, base_delay=0.01)) == "ok" and calls == [0, 1, 2]


def test_runner_hooks_the_retry_policy(isolated):
    """runner.judge_one (unpatched) retries an unparseable answer beyond DSPy's JSON fallback."""
    from hiera_dspy.data import load_dataset
    from hiera_dspy.lm.roles import build_lms
    from hiera_dspy.methods import BuildContext, build
    from hiera_dspy.runs.runner import judge_one

    dataset = load_dataset("msrd")
    with FaultServer(script=["garbage", "garbage", "ok"]) as server:
        lms = build_lms({role: LMSpec("openai/fake", api_base=server.url) for role in ("judge", "relation", "query",
                                                                                      "item")})
        program = build("judge-only", BuildContext(dataset.scheme, lms))
        row = judge_one(program, dataset.split("dev", 1)[0])
    assert row["error"] is None and row["label"] in LABELS and row["lm_calls"] == 3
