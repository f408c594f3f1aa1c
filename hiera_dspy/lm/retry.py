"""Bounded retries with exponential backoff and full jitter for one predictor call, on top of DSPy's own retries.

Two layers, both bounded:

1. DSPy's LM (per HTTP request; `dspy/clients/execution.py`): `lm.num_retries` extra attempts for transient errors
   (`LMRateLimitError` 429, `LMServerError` 5xx, `LMTransportError` = read timeout or dropped connection,
   `LMTimeoutError`), sleeping the server's Retry-After when given, else 1, 2, 4 ... s (capped at 60 s), with NO
   jitter and a base that cannot be changed. Never retried after a completed response. `make_lm` sets
   `num_retries` ($HIERA_LM_NUM_RETRIES, default 3) and the read timeout ($HIERA_LM_TIMEOUT, default 300 s).
   DSPy's ChatAdapter then re-asks once through JSONAdapter when an answer does not parse; an empty or garbled
   answer after that raises `AdapterParseError`.
2. This module (per predictor call, i.e. per agent step): `RetryPolicy.attempts` tries in all for what is left —
   `AdapterParseError` (empty or unparseable answer, after DSPy's JSON fallback) and 429/5xx errors that outlived
   DSPy's loop (not timeouts or dropped connections: see `is_transient`) — sleeping
   `uniform(0, min(max_delay, base_delay * 2**attempt))` (full jitter, so 64 threads hit by one 429 burst do not
   retry in lockstep), or the server's Retry-After plus up to `base_delay` of jitter; a Retry-After longer than
   `max_retry_after` fails the call at once. An answer that did not parse is evicted from DSPy's cache
   (hiera_dspy/lm/cache.py): DSPy caches any HTTP 200 answer, garbage included, so a retry (or a later
   `--retry-errors` run) that read it would replay the same bad answer forever; the retry's good answer is cached.

   Worst case per agent step: attempts x (num_retries + 1) HTTP requests for 429/5xx and content faults (12 with the
   defaults), num_retries + 1 for timeouts (each up to the read timeout). After the last one the exception reaches
   `runner.judge_one`, which turns it into the judgment's error row; the run goes on.

Hook (one line, in `hiera_dspy.runs.runner.judge_one`): run the program inside `retrying()`::

    with ledger.bind(book), retrying():
        ...
        prediction = program(**pair.inputs())

`retrying()` sets DSPy's adapter for the current thread only (`dspy.context`), keeps an adapter already configured
(`RetryingAdapter` wraps it by composition: same prompts and parsing) and is idempotent. Every retried LM call
still goes through the step's usage tracker, so a judgment's `lm_calls` and tokens include its retries.

Every attempt reports to the run's circuit breaker (hiera_dspy/lm/breaker.py): connection failures in a row stop the
run; rate limits and 5xx keep the backoff above.

Environment: HIERA_RETRY_ATTEMPTS (default 3), HIERA_RETRY_BASE_DELAY (1.0 s), HIERA_RETRY_MAX_DELAY (30 s),
HIERA_RETRY_MAX_RETRY_AFTER (120 s).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, TypeVar

import dspy
from dspy.utils.exceptions import AdapterParseError, LMRateLimitError, LMServerError

from hiera_dspy import settings
from hiera_dspy.errors import HieraError
from hiera_dspy.lm import breaker, pacing, query_demos
from hiera_dspy.lm import cache as lm_cache
from hiera_dspy.lm.chat import ChatAdapter

T = TypeVar("T")


class _LockedRandom(random.Random):
    """One process-wide jitter source shared by worker threads (never re-seeded per judgment: threads that drew the
    same jitter would retry in lockstep)."""

    def __init__(self, seed=None):
        self._lock = threading.Lock()
        super().__init__(seed)

    def uniform(self, a, b):
        with self._lock:
            return super().uniform(a, b)


RNG = _LockedRandom()


def is_transient(exc: BaseException) -> bool:
    """Worth another try at this layer: an empty/unparseable answer, or a 429/5xx that outlived DSPy's retries.

    Timeouts and dropped connections (`LMTransportError`, `LMTimeoutError`) are left to DSPy's loop alone: each of
    those attempts may already have waited a full read timeout, and multiplying them would hold a worker for long.
    """
    return isinstance(exc, (AdapterParseError, LMRateLimitError, LMServerError))


def backoff_delay(attempt: int, base_delay: float, max_delay: float, rng: random.Random | None = None,
                  retry_after: float | None = None) -> float:
    """Seconds to wait before retry number `attempt + 1` (attempt 0 = the first failure).

    Full jitter, `uniform(0, min(max_delay, base_delay * 2**attempt))`; with a server hint, never earlier than the
    hint: `retry_after + uniform(0, base_delay)`.
    """
    rng = rng or RNG
    if retry_after is not None:
        return retry_after + rng.uniform(0, base_delay)
    return rng.uniform(0, min(max_delay, base_delay * (2 ** min(attempt, 30))))


def _plan(exc: BaseException, attempt: int, attempts: int, base_delay: float, max_delay: float, rng,
          retry_on: Callable[[BaseException], bool], max_retry_after: float) -> float | None:
    """The delay before the next try, or None to give up and re-raise."""
    if attempt + 1 >= attempts or not retry_on(exc):
        return None
    hint = pacing.retry_after_of(exc)
    if hint is not None and hint > max_retry_after:
        return None
    return backoff_delay(attempt, base_delay, max_delay, rng, hint)


def with_retries(call: Callable[[int], T], attempts: int = 3, base_delay: float = 1.0, max_delay: float = 30.0,
                 rng: random.Random | None = None, *, retry_on: Callable[[BaseException], bool] = is_transient,
                 max_retry_after: float = 120.0, sleep: Callable[[float], Any] = time.sleep,
                 on_retry: Callable[[int, BaseException, float], Any] | None = None) -> T:
    """Call `call(attempt)` (attempt = 0, 1, ...) until it returns, at most `attempts` times in all.

    An exception for which `retry_on(exc)` is false, or the last attempt's exception, propagates unchanged.
    `on_retry(attempt, exc, delay)` is called before each sleep.
    """
    if attempts < 1:
        raise HieraError("attempts must be at least 1")
    for attempt in range(attempts):
        try:
            return call(attempt)
        except Exception as exc:
            delay = _plan(exc, attempt, attempts, base_delay, max_delay, rng, retry_on, max_retry_after)
            if delay is None:
                raise
            if on_retry is not None:
                on_retry(attempt, exc, delay)
            sleep(delay)
    raise AssertionError("unreachable")


async def awith_retries(call: Callable[[int], Awaitable[T]], attempts: int = 3, base_delay: float = 1.0,
                        max_delay: float = 30.0, rng: random.Random | None = None, *,
                        retry_on: Callable[[BaseException], bool] = is_transient, max_retry_after: float = 120.0,
                        on_retry: Callable[[int, BaseException, float], Any] | None = None) -> T:
    """`with_retries` for a coroutine function; sleeps with asyncio.sleep."""
    if attempts < 1:
        raise HieraError("attempts must be at least 1")
    for attempt in range(attempts):
        try:
            return await call(attempt)
        except Exception as exc:
            delay = _plan(exc, attempt, attempts, base_delay, max_delay, rng, retry_on, max_retry_after)
            if delay is None:
                raise
            if on_retry is not None:
                on_retry(attempt, exc, delay)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class RetryPolicy:
    """This layer's budget for one predictor call (DSPy's per-request retries come on top; see the module doc)."""

    attempts: int = 3
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    @classmethod
    def from_env(cls) -> RetryPolicy:
        """The policy from $HIERA_RETRY_* (hiera_dspy/settings.py), this class's defaults for unset variables."""
        return cls(**settings.retry_budget({name: getattr(cls, name) for name in settings.RETRY_KNOBS}))


def _retry_predicate(lm) -> Callable[[BaseException], bool]:
    """An LM that declares `retry_parse_errors = False` (the in-process local model: at temperature 0 it repeats its
    answer) gets only transport faults retried; its unparseable answers are salvaged instead."""
    if not getattr(lm, "retry_parse_errors", True):
        return lambda exc: is_transient(exc) and not isinstance(exc, AdapterParseError)
    return is_transient


def _evicting(call: Callable[[], T]) -> T:
    """Run one adapter call; if its answer does not parse, evict what it read or stored from DSPy's cache, which keeps
    every HTTP 200 answer, garbage included: a retry (or a later --retry-errors run) then reaches the LM."""
    with lm_cache.answers() as keys:
        try:
            return call()
        except AdapterParseError:
            lm_cache.evict(keys)
            raise


async def _aevicting(call: Callable[[], Awaitable[T]]) -> T:
    with lm_cache.answers() as keys:
        try:
            return await call()
        except AdapterParseError:
            lm_cache.evict(keys)
            raise


class RetryingAdapter:
    """Another DSPy adapter (default: a ChatAdapter, hiera_dspy.lm.chat's: DSPy's prompts, formatted faster) with this
    module's retry policy around each call.

    Wraps by composition: the prompts, the parsing and ChatAdapter's JSON fallback are the wrapped adapter's (every
    attribute not defined here is read from it), and each attempt is one full call of it. `retries` counts the
    retries made (all threads; approximate under threads, for tests and diagnostics).

    Example:
        >>> with dspy.context(adapter=RetryingAdapter(dspy.JSONAdapter(), RetryPolicy(attempts=2))):
        ...     dspy.Predict("question -> answer")(question="...")
    """

    def __init__(self, adapter=None, policy: RetryPolicy | None = None, rng: random.Random | None = None):
        self.adapter = adapter if adapter is not None else ChatAdapter()
        self.retry_policy = policy or RetryPolicy.from_env()
        self.retry_rng = rng
        self.retries = 0

    def __getattr__(self, name: str):
        if name == "adapter":  # not set yet (copy/pickle): never recurse
            raise AttributeError(name)
        return getattr(self.adapter, name)

    def __repr__(self) -> str:
        return f"RetryingAdapter({self.adapter!r}, {self.retry_policy})"

    def _count_retry(self, attempt, exc, delay) -> None:
        self.retries += 1

    def __call__(self, lm, lm_kwargs, signature, demos, inputs):
        """The wrapped adapter's call, retried per the policy (an unparseable answer evicted from the cache first);
        the pair's known judgments read as demos after the predictor's own (`hiera_dspy.lm.query_demos`)."""
        p = self.retry_policy
        demos = query_demos.extended(signature, demos)

        def attempt(n: int):
            breaker.before_call(lm)  # a run whose endpoint is down starts no new call (hiera_dspy/lm/breaker.py)
            try:
                answer = _evicting(lambda: self.adapter(lm, lm_kwargs=lm_kwargs, signature=signature, demos=demos,
                                                        inputs=inputs))
            except Exception as exc:
                breaker.after_call(lm, exc)
                raise
            breaker.after_call(lm, None)
            return answer

        return with_retries(attempt, p.attempts, p.base_delay, p.max_delay, self.retry_rng,
                            max_retry_after=p.max_retry_after, on_retry=self._count_retry,
                            retry_on=_retry_predicate(lm))

    async def acall(self, lm, lm_kwargs, signature, demos, inputs):
        """`__call__` for the async path, paced (--engine async) before each request; same retry predicate."""
        p = self.retry_policy
        demos = query_demos.extended(signature, demos)

        async def attempt(n: int):
            breaker.before_call(lm)
            await pacing.before_request(lm, inputs)  # --engine async: RPM/TPM pacing, 429 cool-down (else no-op)
            try:
                answer = await _aevicting(lambda: self.adapter.acall(lm, lm_kwargs=lm_kwargs, signature=signature,
                                                                     demos=demos, inputs=inputs))
            except Exception as exc:
                pacing.after_error(exc)
                breaker.after_call(lm, exc)
                raise
            breaker.after_call(lm, None)
            return answer

        return await awith_retries(attempt, p.attempts, p.base_delay, p.max_delay, self.retry_rng,
                                   max_retry_after=p.max_retry_after, on_retry=self._count_retry,
                                   retry_on=_retry_predicate(lm))


def retrying_adapter(adapter=None, policy: RetryPolicy | None = None, rng: random.Random | None = None):
    """`adapter` (default: a ChatAdapter) with the retry policy; an adapter that already retries is returned as is."""
    if isinstance(adapter, RetryingAdapter):
        return adapter
    return RetryingAdapter(adapter, policy, rng)


@contextmanager
def retrying(policy: RetryPolicy | None = None, rng: random.Random | None = None):
    """Within this block (this thread/task only), every predictor call retries per `policy` (default: from env)."""
    current = dspy.settings.adapter
    if isinstance(current, RetryingAdapter):
        yield current
        return
    adapter = retrying_adapter(current, policy, rng)
    with dspy.context(adapter=adapter):
        yield adapter
