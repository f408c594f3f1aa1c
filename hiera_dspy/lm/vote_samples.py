"""Samples of one judgment: within `sample(index, temperature)`, every accounted LM call (`hiera_dspy.lm.ledger.step`)
is sent by a copy of its LM at that temperature, with a rollout id of its own, so sample i is a distinct request.

Why rollout ids: DSPy's response cache keys a request by its model, messages and generation options; N samples of
one prompt at one temperature would be one cache entry, i.e. one answer N times. `rollout_id` is part of DSPy's
cache key and never sent to the provider (DSPy 3.4, `dspy.LM(rollout_id=...)`), so sample i's answer is cached
under its own key: a run killed mid-way and resumed finds each finished sample in the cache and pays for it once
(a hit is booked at its cost, `hiera_dspy.lm.cache`). Sample 0 keeps the LM's own rollout id (an endpoint's
partition, `roles.endpoint_cache_id`); sample i adds i to it.

An `own` sample (the first of an anchored vote, `methods.votes`) is sent as the LM itself sends it, at the LM's own
temperature: the very request of a one-sample run, so it is that run's answer (and its cache entry).

An LM that samples from a fixed seed (the embedded llama.cpp model, `fixed_seed`) gets seed i as well: the same
prompt at the same seed would give the same tokens whatever the rollout id. Hosted providers sample freely; their
requests carry no seed (not every provider takes one).

Pair-independent analyses (`hiera_dspy.agents.memo.Memo`) are kept per sample (`memo_key`), so each sample is a whole
judgment of its own and the votes are not tied together by one shared analysis.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    import dspy


@dataclass(frozen=True)
class Sample:
    """Which sample of a judgment is being judged (0-based) and at what temperature (`own`: the LM's own request)."""

    index: int
    temperature: float
    own: bool = False


_current: ContextVar[Sample | None] = ContextVar("hiera_sample", default=None)


@contextmanager
def sample(index: int, temperature: float, own: bool = False) -> Iterator[Sample]:
    """Within the block (this thread or task), LM calls are sample `index` at `temperature` (`own`: as the LM itself
    sends them, its own temperature and rollout id)."""
    token = _current.set(Sample(index, temperature, own))
    try:
        yield _current.get()  # type: ignore[misc]
    finally:
        _current.reset(token)


def current() -> Sample | None:
    """The sample being judged in this context, else None."""
    return _current.get()


def sampled(lm: dspy.BaseLM) -> dspy.BaseLM:
    """`lm` as the current sample sends it, or `lm` itself outside a sample: a shallow copy with the sample's
    generation options, sharing the LM's engine, its built clients and its history (what `dspy.LM.copy` does, without
    re-checking client settings against the engine: a dry run's counting engine is swapped in on the LM itself). A
    copy is made per call, so an engine swapped in later is the one used."""
    now = _current.get()
    if now is None or now.own or not isinstance(getattr(lm, "kwargs", None), dict):
        return lm
    base = lm.kwargs.get("rollout_id") or 0
    changes: dict = {"temperature": now.temperature, "rollout_id": base + now.index}
    if getattr(lm, "fixed_seed", False):
        changes["seed"] = now.index
    copied = copy.copy(lm)
    shared = {key: lm.__dict__[key] for key in ("_engine_store", "_engine_lock", "history") if key in lm.__dict__}
    copied.__dict__.update(shared, kwargs={**lm.kwargs, **changes})
    return copied


def memo_key() -> tuple | None:
    """What keeps a memoised analysis to its own sample: (index, temperature), or None outside a sample and in an
    `own` sample (it is the plain judgment's)."""
    now = _current.get()
    return None if now is None or now.own else (now.index, now.temperature)
