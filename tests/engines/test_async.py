"""--engine async: the same judgments as the thread engine through DSPy's acall path, bounded concurrency, pacing."""

from __future__ import annotations

import asyncio
import time

from engine_helpers import ANSWERS, assert_same_run, make_program

from hiera_dspy.engines import EngineOptions, Job, judge
from hiera_dspy.engines.aio import HOPS, executor_threads, has_async_path
from hiera_dspy.lm import pacing
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.store.run_store import RunStore
from hiera_dspy.testing import role_lms


def _run(engine, msrd, pairs, tmp_path, name, **options):
    lms = role_lms(ANSWERS)
    program = make_program(msrd, lms)
    store = RunStore(tmp_path / f"{name}.sqlite")
    rows = judge(engine, Job(program, pairs, store, "r", lms, progress=False, options=EngineOptions(**options)))
    return rows, lms["judge"]


def test_async_gives_the_thread_engines_rows(msrd, pairs40, tmp_path):
    reference, ref_lm = _run("threads", msrd, pairs40, tmp_path, "threads")
    rows, lm = _run("async", msrd, pairs40, tmp_path, "async", concurrency=8)
    assert 5 < sum(1 for r in reference if r["delegated"]) < 35  # both paths exercised
    assert {r["label"] for r in reference} == {"Relevant", "Irrelevant"}
    assert not any(r["error"] for r in rows)
    assert_same_run(rows, reference)
    assert lm.history and all(not h.get("cache_hit") for h in lm.history)


def test_every_hiera_graph_and_single_call_baseline_has_an_async_path(msrd):
    lms = role_lms(ANSWERS)
    for method in ("hiera", "judge-only", "judge+qi+web", "judge+all-uncoordinated", "zero-shot", "dna"):
        assert has_async_path(make_program(msrd, lms, method)), method
    assert not has_async_path(make_program(msrd, lms, "raer"))  # judged on threads instead
    for method in ("hiera+signals", "hiera-cascade"):  # the scorer's evidence is an input: no context to carry
        assert has_async_path(make_program(msrd, lms, method)), method


def test_pacer_spaces_requests_evenly_and_cools_down_after_429():
    clock = [0.0]
    pacer = pacing.Pacer(rpm=60, tpm=None, cooldown=5.0, clock=lambda: clock[0])
    assert [pacer.reserve(10) for _ in range(3)] == [0.0, 1.0, 2.0]  # 60 per minute: one a second
    pacer.rate_limited(retry_after=None)
    assert pacer.reserve(10) == 5.0  # the cool-down outlasts the next free slot (3.0)
    tpm = pacing.Pacer(tpm=600, clock=lambda: clock[0])
    assert [tpm.reserve(100), tpm.reserve(100), tpm.reserve(300)] == [0.0, 10.0, 20.0]


def test_acquire_waits_for_a_cool_down_that_starts_while_waiting():
    async def main():
        pacer = pacing.Pacer(rpm=600)
        start = time.monotonic()
        first = asyncio.create_task(pacer.acquire(1))
        second = asyncio.create_task(pacer.acquire(1))  # its slot is 0.1 s away
        await first
        pacer.rate_limited(retry_after=0.3)
        await second
        return time.monotonic() - start

    assert asyncio.run(main()) >= 0.29


def _zero_shot_job(msrd, url, tmp_path, n, **options):
    from hiera_dspy.engines import EngineOptions, Job
    from hiera_dspy.lm.roles import ROLES, LMSpec, build_lms
    from hiera_dspy.methods import BuildContext, build

    lms = build_lms({role: LMSpec("openai/fake", api_base=url) for role in ROLES})
    program = build("zero-shot", BuildContext(msrd.scheme, lms))
    return Job(program, msrd.split("dev")[:n], RunStore(tmp_path / "s.sqlite"), "r", lms, progress=False,
               options=EngineOptions(**options))


def test_a_429_pauses_every_request_for_its_retry_after(msrd, tmp_path, monkeypatch):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from fault_server import FaultServer

    from hiera_dspy.engines.aio import judge_all
    from hiera_dspy.runs.runner import Progress

    monkeypatch.setenv("HIERA_LM_NUM_RETRIES", "0")  # the 429 reaches hiera's layer at once
    # the first pair is judged alone (its path's first imports on one thread); the 429 meets the workers after it
    with FaultServer(script=["ok", "rate_limit"], retry_after=0.6, latency=0.05) as server:
        job = _zero_shot_job(msrd, server.url, tmp_path, 12, concurrency=4)
        start = time.monotonic()
        pacer = asyncio.run(judge_all(job, list(enumerate(job.pairs)), Progress(12, 0, False)))
        wall = time.monotonic() - start
        assert server.counts["rate_limit"] == 1 and server.counts["ok"] == 12
    assert pacer.rate_limits == 1 and pacer.waited > 0
    # 12 calls of 50 ms, 4 at a time, take ~0.15 s; the cool-down holds every worker for 0.6 s
    assert wall >= 0.6
    assert not any(r["error"] for r in job.store.rows("r"))


def test_rpm_spaces_the_requests(msrd, tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from fault_server import FaultServer

    with FaultServer() as server:
        job = _zero_shot_job(msrd, server.url, tmp_path, 10, concurrency=10, rpm=600)  # one request per 0.1 s
        start = time.monotonic()
        rows = judge("async", job)
        wall = time.monotonic() - start
        assert server.requests == 10 and server.max_in_flight <= 2
    assert len(rows) == 10 and wall >= 0.9


def test_the_loop_keeps_a_thread_per_judgment_only_for_work_that_blocks(msrd):
    """DSPy's short hops share a few threads; a synchronous program or a knowledge source's look-ups (which block a
    thread each) get one per judgment in flight."""
    lms = role_lms(ANSWERS)
    assert executor_threads(make_program(msrd, lms, "zero-shot"), True, 64) == HOPS
    assert executor_threads(make_program(msrd, lms, "hiera"), True, 64) == HOPS  # no knowledge source: NoKnowledge
    assert executor_threads(make_program(msrd, lms, "hiera"), True, 2) == min(HOPS, 6)
    assert executor_threads(make_program(msrd, lms, "raer"), False, 64) == 68

    class Lookups:  # any source but NoKnowledge: a catalog, web search
        name, default_k = "catalog:test", 3

        def search(self, text, k=None):
            return []

    with_web = build("hiera", BuildContext(msrd.scheme, lms, knowledge=Lookups()))
    assert executor_threads(with_web, True, 64) == 68
    assert executor_threads(with_web, True, 500) == 68
