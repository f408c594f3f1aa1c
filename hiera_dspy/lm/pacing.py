"""Request- and token-per-minute pacing with a shared cool-down after 429s, for many requests in flight on one
event loop (`--engine async`).

A `Pacer` reserves each request a start time on two virtual clocks, one advancing 60/rpm seconds per request and one
advancing tokens x 60/tpm seconds, so requests leave evenly spaced rather than in a burst at the top of each minute.
The tokens of a request are estimated before it is sent as its input characters / 4 plus the LM's `max_tokens` (what
OpenAI's limiter counts against TPM). A 429 that reaches hiera's retry layer (after DSPy's own retries) starts a
cool-down for every request on the loop: its Retry-After, else `cooldown` seconds.

Bound with `bound(pacer)`; `hiera_dspy.lm.retry.RetryingAdapter.acall` calls `before_request` / `after_error`
around each attempt, so nothing else changes. Without a bound pacer both are no-ops.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from contextlib import contextmanager
from typing import Callable

from hiera_dspy.errors import HieraError

_current: contextvars.ContextVar["Pacer | None"] = contextvars.ContextVar("hiera_pacer", default=None)


class Pacer:
    """Even spacing under `rpm` requests and `tpm` tokens per minute (None = unlimited), plus a 429 cool-down."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None, cooldown: float = 10.0,
                 clock: Callable[[], float] = time.monotonic):
        if (rpm is not None and rpm <= 0) or (tpm is not None and tpm <= 0):
            raise HieraError("rpm and tpm must be positive")
        self.rpm, self.tpm, self.cooldown, self.clock = rpm, tpm, cooldown, clock
        self._next_request = self._next_token = self.cool_until = 0.0
        self.rate_limits = 0  # 429s seen (diagnostics)
        self.waited = 0.0  # seconds requests spent waiting for their slot (diagnostics)

    def reserve(self, tokens: int) -> float:
        """Reserve the next slot for a request of `tokens`; returns its start time on `clock`."""
        now = self.clock()
        start = max(now, self._next_request, self._next_token, self.cool_until)
        if self.rpm:
            self._next_request = start + 60.0 / self.rpm
        if self.tpm:
            self._next_token = start + tokens * 60.0 / self.tpm
        return start

    async def acquire(self, tokens: int) -> None:
        """Wait for this request's slot (and for any cool-down that began meanwhile)."""
        start = self.reserve(tokens)
        while True:
            delay = max(start, self.cool_until) - self.clock()
            if delay <= 0:
                return
            self.waited += delay
            await asyncio.sleep(delay)

    def rate_limited(self, retry_after: float | None = None) -> None:
        """A 429: no request on this loop starts before the cool-down ends."""
        self.rate_limits += 1
        self.cool_until = max(self.cool_until, self.clock() + (retry_after if retry_after else self.cooldown))


@contextmanager
def bound(pacer: Pacer | None):
    """Make `pacer` pace every async LM call in this context (tasks created inside inherit it)."""
    token = _current.set(pacer)
    try:
        yield pacer
    finally:
        _current.reset(token)


def estimate_tokens(lm, inputs: dict) -> int:
    """Tokens a request may count against a TPM limit: input characters / 4 plus the output cap."""
    chars = sum(len(str(v)) for v in (inputs or {}).values())
    return chars // 4 + int((getattr(lm, "kwargs", None) or {}).get("max_tokens") or 0)


async def before_request(lm, inputs: dict) -> None:
    """Wait for the bound pacer's turn for this request (no-op without one)."""
    pacer = _current.get()
    if pacer is not None:
        await pacer.acquire(estimate_tokens(lm, inputs))


def retry_after_of(exc: BaseException) -> float | None:
    """The exception's Retry-After in seconds when it carries a usable one, else None."""
    value = getattr(exc, "retry_after", None)
    try:
        value = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return value if value is not None and value >= 0 and value == value and value != float("inf") else None


def after_error(exc: BaseException) -> None:
    """A 429 starts the bound pacer's cool-down (no-op without a pacer or for other errors)."""
    from dspy.utils.exceptions import LMRateLimitError

    pacer = _current.get()
    if pacer is not None and isinstance(exc, LMRateLimitError):
        pacer.rate_limited(retry_after_of(exc))
