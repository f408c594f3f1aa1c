"""Engines: how the pending pairs of a run get judged. Every engine writes ordinary judgment rows
(`runner.judgment_row`) into the same run store, as each judgment finishes, so a run started with one engine can be
resumed with another and `hiera_dspy.metrics` cannot tell them apart.

    threads  a pool of worker threads, each judging one pair at a time (the default; `--threads N`)
    async    one event loop, DSPy's `acall` path, `--concurrency N` judgments in flight, `--rpm`/`--tpm` pacing
    batch    OpenAI's Batch API, level by level over all pairs; batch ids in the run store (restart polls, never resubmits)
    ray      a Ray actor pool (one program replica and LM endpoint per actor); rows flow back to the driver's store

The threads and async engines check the LM endpoints before the first pair and stop when one cannot be reached
(`Job.breaker`, hiera_dspy/lm/breaker.py): the rows they return then carry `stopped`.

A new engine is one module here with `run(job: Job) -> RunRows` and its line in ENGINES. Every engine reads the
pairs lazily through `runner.pending` (a window at a time), keeps a bounded number in flight, and returns the rows
streamed from the store (`runner.RunRows`): memory does not grow with the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # annotations only: a request names its engine without loading DSPy
    import dspy

from hiera_dspy.lm.breaker import CircuitBreaker
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.registry import Entry, Registry
from hiera_dspy.runs.progress import Display
from hiera_dspy.store.run_store import RunStore

ENGINES: dict[str, tuple[str, str]] = {
    "threads": ("hiera_dspy.engines.threads", "worker threads (--threads N); the default"),
    "async": ("hiera_dspy.engines.aio", "one event loop, DSPy acall, --concurrency N in flight, --rpm/--tpm pacing"),
    "batch": ("hiera_dspy.engines.batch", "OpenAI Batch API, level by level (half price, up to 24 h per level)"),
    "ray": ("hiera_dspy.engines.ray_engine", "Ray actors, one program replica + LM endpoint each (extra: ray)"),
}


@dataclass
class EngineOptions:
    """Every engine's settings; each engine reads only its own."""

    threads: int = 1
    concurrency: int = 64
    rpm: float | None = None
    tpm: float | None = None
    cooldown: float = 10.0
    poll_seconds: float = 30.0
    batch_max_requests: int = 50_000
    batch_max_bytes: int = 200 * 1024 * 1024
    batch_window: str = "24h"
    ray_address: str | None = None
    ray_actors: int = 2
    api_bases: list[str] = field(default_factory=list)


@dataclass
class Job:
    """One engine invocation: judge `pairs` of run `run_id` with `program` (its role LMs are `lms`); `pairs` is any
    re-iterable collection (a list, or a lazily read split)."""

    program: dspy.Module
    pairs: Iterable[Pair]
    store: RunStore
    run_id: str
    lms: dict | None = None
    retry_errors: bool = False
    progress: bool | Display = True  # False: silent; True or a Display: hiera_dspy.runs.progress
    options: EngineOptions = field(default_factory=EngineOptions)
    factory: Callable[[str | None], dspy.Module] | None = None  # ray: builds a replica, given an actor's api_base
    breaker: CircuitBreaker = field(default_factory=CircuitBreaker)  # threads, async: stop on an unreachable endpoint


ENGINE_REGISTRY = Registry("engine", lambda: {name: Entry(name, doc, loader=f"{module}:run")
                                             for name, (module, doc) in ENGINES.items()})


def judge(engine: str, job: Job) -> Sequence[Judgment]:
    """Run `job` with the named engine; returns the run's rows for the job's pairs, in split order (a `RunRows`:
    streamed from the store when iterated)."""
    run = ENGINE_REGISTRY[engine].load()
    job.store.claim(job.run_id)  # one writer per run, whatever the engine (a no-op when already held)
    try:
        return run(job)
    finally:
        job.store.release(job.run_id)
