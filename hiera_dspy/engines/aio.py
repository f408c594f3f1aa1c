"""The async engine: one process, one event loop, many requests in flight (`--engine async`).

Each judgment runs through DSPy's async path (`program.acall` -> `Predict.acall` -> `LM.acall`); `--concurrency N`
worker coroutines pull pairs from the queue, so at most N judgments (hence N LM requests: a judgment's steps are
sequential) are in flight. `--rpm` / `--tpm` pace the requests and a 429 pauses all of them (`hiera_dspy.lm.pacing`).
Finished judgments are written to the run store by one writer task, on a thread, each batch in one transaction (the
judgments that finished while the last batch was written, at most `WRITE_BATCH`): the event loop never waits on the
disk, and a killed run resumes, losing at most the batch in flight. DSPy's own hops off the loop (request preparation,
the response cache, pricing) share `HOPS` threads; a thread per judgment in flight is kept only for work that blocks
one (`executor_threads`).

A method whose program has no `aforward` of its own (most baselines; HIERA's graphs and the single-call baselines
have one) is judged by its synchronous `forward` on worker threads under the same concurrency bound, without pacing (said
on stderr).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import dspy

from hiera_dspy.engines import Job
from hiera_dspy.lm import breaker as breakers
from hiera_dspy.lm import ledger, pacing, query_demos, retention
from hiera_dspy.lm.breaker import EndpointDown
from hiera_dspy.lm.retry import retrying
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.runs.runner import Progress, RunRows, check_endpoints_first, judge_one, judgment_row, pending, run_rows
from hiera_dspy.untrusted.screen import program_inputs

WRITE_BATCH = 64  # judgments written in one transaction, at most
HOPS = 8  # the loop's worker threads when only DSPy's short hops run there (see `executor_threads`)


def has_async_path(program: dspy.Module) -> bool:
    """True when the class that defines the program's `forward` also defines its `aforward` (a subclass that
    overrides `forward` alone must not inherit a parent's `aforward`, which would run the parent's graph)."""
    for cls in type(program).__mro__:
        if "forward" in vars(cls):
            return "aforward" in vars(cls)
    return False


def looks_up(program: dspy.Module) -> bool:
    """True when a module of the program holds a knowledge source (web search, a catalog): its look-ups block a worker
    thread of the loop for their duration."""
    from hiera_dspy.knowledge import NoKnowledge

    return any(getattr(module, "knowledge", None) is not None and not isinstance(module.knowledge, NoKnowledge)
               for _, module in program.named_sub_modules())


def executor_threads(program: dspy.Module, native: bool, concurrency: int) -> int:
    """The worker threads of the loop's default executor. A program judged by its synchronous `forward`, or one that
    looks things up, blocks one for each judgment in flight: `concurrency` of them (at most 64) and 4 spare. Otherwise
    only DSPy's hops run there (request preparation, the response cache, routing, pricing: short, and all under one
    GIL), and `HOPS` threads keep up: more only add thread switches and memory (each thread opens its own connections
    to the cache's 16 SQLite shards)."""
    threads = min(concurrency, 64) + 4
    return threads if not native or looks_up(program) else min(HOPS, threads)


async def ajudge_one(program: dspy.Module, pair: Pair, position: int | None = None) -> Judgment:
    """`runner.judge_one` through `program.acall`; never raises for a failure of the LM or the program, except
    EndpointDown (the breaker tripped: this pair was not judged)."""
    book = ledger.Ledger()
    start = time.perf_counter()
    prediction, error = None, None
    with ledger.bind(book), retrying(), retention.bounded(), query_demos.reading(program, pair) as demos:
        try:
            prediction = await program.acall(**program_inputs(pair))
        except EndpointDown:
            raise
        except Exception as exc:  # noqa: BLE001 - one pair's failure must not stop the run
            error = exc
    return judgment_row(pair, position, book, prediction, error, time.perf_counter() - start, demos)


async def judge_all(job: Job, todo: Iterable[tuple[int, Pair]], report) -> pacing.Pacer:
    """Judge `todo` with `concurrency` workers on the running loop; returns the pacer (its counters)."""
    opts = job.options
    concurrency = max(1, opts.concurrency)
    loop = asyncio.get_running_loop()
    native = has_async_path(job.program)
    loop.set_default_executor(ThreadPoolExecutor(max_workers=executor_threads(job.program, native, concurrency)))
    if not native and job.progress:
        print(f"{getattr(job.program, 'method', type(job.program).__name__)} has no async path: judged on "
              f"{concurrency} worker threads instead (no RPM/TPM pacing)", file=sys.stderr)
    pacer = pacing.Pacer(opts.rpm, opts.tpm, opts.cooldown)
    queue = iter(todo)  # read lazily: only the `concurrency` pairs being judged are in memory

    finished: asyncio.Queue = asyncio.Queue()

    async def judge(position: int, pair: Pair, alone: bool = False):
        """Judge one pair; its row, or None when the run stops (an endpoint is down). `alone`: nothing else is in
        flight, a synchronous program is judged on this thread."""
        if job.breaker.tripped is not None:
            return None  # an endpoint is down: the pairs left are not sent (no row)
        try:
            if native:
                return await ajudge_one(job.program, pair, position)
            if alone:
                return judge_one(job.program, pair, position)
            return await asyncio.to_thread(judge_one, job.program, pair, position)  # copies the context
        except EndpointDown:
            return None

    async def worker():
        for position, pair in queue:  # one shared iterator: each pair is taken by exactly one worker
            row = await judge(position, pair)
            if row is None:
                return
            finished.put_nowait(row)

    async def writer():
        """Write what has finished, a batch a transaction, until the workers are done (None)."""
        done = False
        while not done:
            batch = [await finished.get()]
            while len(batch) < WRITE_BATCH and not finished.empty():
                batch.append(finished.get_nowait())
            done = batch[-1] is None
            rows = [r for r in batch if r is not None]
            if rows:
                await asyncio.to_thread(job.store.record_many, job.run_id, rows)
                for row in rows:
                    report(row)

    with pacing.bound(pacer), breakers.bound(job.breaker):  # the workers' tasks inherit both
        first = next(queue, None)  # judged alone: what its path imports is imported before the others start
        row = None if first is None else await judge(*first, alone=True)
        if row is None:
            return pacer
        job.store.record(job.run_id, row)
        report(row)
        writing = asyncio.create_task(writer())
        try:
            await asyncio.gather(*(worker() for _ in range(min(concurrency, max(1, len(todo) - 1)))))
        finally:
            finished.put_nowait(None)
            await writing
    return pacer


def run(job: Job) -> RunRows:
    """Judge the pending pairs concurrently on one asyncio loop, paced by the rpm/tpm limits; return the run's rows."""
    todo = pending(job.pairs, job.store, job.run_id, job.retry_errors, job.progress)
    if not check_endpoints_first(todo, job.lms, job.breaker):
        return run_rows(job.store, job.run_id, todo, job.breaker)
    report = Progress(todo.total, todo.done, job.progress)
    if todo:
        pacer = asyncio.run(judge_all(job, todo, report))
        if job.progress and (pacer.rate_limits or pacer.waited):
            print(f"async: {pacer.rate_limits} rate limits (429) seen, {pacer.waited:.1f} s waited for pacing",
                  file=sys.stderr)
    return run_rows(job.store, job.run_id, todo, job.breaker)
