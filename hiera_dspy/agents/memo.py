"""Analyses computed once and reused: a program's `Memo` of pair-independent analyses (one per distinct query or item),
safe under worker threads and asyncio tasks, and the batch engine's provisional memos (an analysis enters the memo
only when the pair that paid for it finished). `fingerprint` keys a memo by the predictor's prompt.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import threading
from collections.abc import Callable
from contextlib import contextmanager

import dspy

from hiera_dspy.lm import vote_samples

_provisional: contextvars.ContextVar["dict | None"] = contextvars.ContextVar("hiera_memo_provisional", default=None)


@contextmanager
def provisional_memos():
    """Within the block, analyses computed are kept aside (visible to this context only) instead of entering the
    programs' memos; `commit_memos(scratch)` adds them afterwards. The batch engine judges a pair this way and
    commits only when the pair finished, so an analysis is paid for by exactly one finished pair."""
    scratch: dict = {}
    token = _provisional.set(scratch)
    try:
        yield scratch
    finally:
        _provisional.reset(token)


def commit_memos(scratch: dict) -> None:
    """Add the analyses a `provisional_memos()` block kept aside to their programs' memos (one already there
    wins)."""
    for memo, key, value in scratch.values():
        with memo._guard:
            memo._values.setdefault(key, value)


class Memo:
    """Per-program reuse of pair-independent analyses. Fresh on deepcopy (an optimizer's candidate starts empty).
    A value marked `parse_recovered` (salvaged from a malformed answer) is returned but never reused."""

    def __init__(self):
        self._values: dict = {}
        self._locks: dict = {}
        self._guard = threading.Lock()

    def __deepcopy__(self, memo):
        return Memo()

    def get_or_compute(self, key, compute: Callable[[], dict]) -> tuple[dict, bool]:
        """The value under `key` and whether it was reused; computes it once (threads on one key wait for it). Within a
        vote's sample the key is the sample's own (`hiera_dspy.lm.vote_samples.memo_key`)."""
        key = _per_sample(key)
        scratch = _provisional.get()
        if scratch is not None:  # the batch engine's replay: keep it aside until the pair finishes
            with self._guard:
                if key in self._values:
                    return self._values[key], True
            if (id(self), key) in scratch:
                return scratch[(id(self), key)][2], True
            value = compute()
            if not value.get("parse_recovered"):
                scratch[(id(self), key)] = (self, key, value)
            return value, False
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # two threads on one query wait for one analysis instead of paying twice
            if key in self._values:
                return self._values[key], True
            value = compute()
            if not value.get("parse_recovered"):  # salvaged from a malformed answer: not reused, the next pair asks
                self._values[key] = value
            return value, False

    async def aget_or_compute(self, key, compute) -> tuple[dict, bool]:
        """`get_or_compute` for coroutines on one event loop: concurrent tasks on one key await one analysis."""
        key = _per_sample(key)
        with self._guard:
            if key in self._values:
                return self._values[key], True
            pending = self._locks.get(("async", key))
            owner = pending is None
            if owner:
                pending = self._locks[("async", key)] = asyncio.get_running_loop().create_future()
        if not owner:
            return await asyncio.shield(pending), True
        try:
            value = await compute()
        except BaseException as exc:
            pending.set_exception(exc)
            pending.exception()  # retrieved: a failure nobody else awaited is not logged as "never retrieved"
            raise
        finally:
            with self._guard:
                self._locks.pop(("async", key), None)
        with self._guard:
            if not value.get("parse_recovered"):
                self._values[key] = value
        pending.set_result(value)
        return value, False


def _per_sample(key):
    """`key` within the current vote's sample (unchanged outside one)."""
    sample = vote_samples.memo_key()
    return key if sample is None else (key, sample)


def fingerprint(predictor: dspy.Predict) -> str:
    """Identifies a predictor's prompt (instructions + demos): compiled and uncompiled analyses are never mixed."""
    state = json.dumps(predictor.dump_state(), sort_keys=True, default=str)
    return hashlib.sha256(state.encode()).hexdigest()[:16]
