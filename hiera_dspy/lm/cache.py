"""DSPy's response cache, kept honest for judging runs: hits are booked at their cost, bad answers are evicted.

DSPy caches every HTTP 200 answer (memory LRU + disk, persisting across processes) and reports a hit as free. Two
additions, installed on the live `dspy.cache` by `install()` (its class is swapped for a subclass, so the memory and
disk tiers stay as configured; idempotent, and re-applied by every accounted step in case `dspy.configure_cache`
replaced the object):

- **Booked cost.** The cache entry keeps the usage of the call that paid for it. A hit is reported to the current
  usage tracker's `add_cached_usage(model, usage)` (accounting's step tracker has one; DSPy's own tracker has not, so
  it still sees hits as free). A judgment then costs the same whether its answers came from the server or from the
  cache: a run killed with `kill -9` and resumed reports the tokens of a clean run.
- **No poisoned entries.** `answers()` collects the keys of the entries an adapter call read or stored, and
  `evict(keys)` deletes them from both tiers. The retry layer (hiera_dspy/lm/retry.py) evicts an answer that did not
  parse, so neither its own retry nor a later `--retry-errors` run is served the same garbage, and the retry's good
  answer is cached like any other.

- **Bounded memory tier.** DSPy's memory tier keeps up to a million answers by default, which a million-pair run
  fills (gigabytes); `install()` caps it at `MEMORY_ENTRIES` (the most recent answers; the disk tier keeps the rest).

Why a class swap and not a public hook (DSPy 3.4): DSPy has no cache callback, and the documented way to customise
the cache, assigning `dspy.cache = MyCache(...)`, builds a new object: it would drop the entries already in memory,
and every `dspy.configure_cache(...)` (the CLIs and tests call it) assigns a plain `Cache` again, whose settings (size
limits, pickle policy) the new object would have to copy from private state. Swapping the live object's class to a
subclass keeps its tiers, settings and entries, and is re-applied whenever the object changed. It relies on
`Cache.get`, `Cache.put`, `Cache._prepare_cached_response` and the `memory_cache`/`disk_cache`/`_lock` attributes;
tests/reliability/test_cache_hook.py fails, naming the method, if a DSPy upgrade changes any of them.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

import dspy

_answers: ContextVar[list | None] = ContextVar("hiera_cache_answers", default=None)
_CLASSES: dict[type, type] = {}
_LOCK = threading.Lock()
MEMORY_ENTRIES = 2_000  # answers kept in DSPy's memory tier (its default, 1,000,000, grows with a long run)


def _usage_of(record: Any) -> dict | None:
    """The usage stored with an LM answer: DSPy's native record (a dict) or a provider response object (litellm)."""
    if isinstance(record, dict):
        return record.get("usage") if record.get("_dspy_format") else None
    if hasattr(record, "choices"):
        usage = getattr(record, "usage", None)
        return dict(usage) if usage else None
    return None


class HonestCache:
    """Mixed into the class of `dspy.cache` by `install()`; see the module doc."""

    def get(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> Any:
        """DSPy's lookup; a hit's key is noted for `answers()`."""
        response = super().get(request, ignored_args_for_cache_key)
        if response is not None:
            _note(self, request, ignored_args_for_cache_key)
        return response

    def put(self, request: dict[str, Any], value: Any, ignored_args_for_cache_key: list[str] | None = None,
            enable_memory_cache: bool = True) -> None:
        """DSPy's store; the stored key is noted for `answers()`."""
        super().put(request, value, ignored_args_for_cache_key, enable_memory_cache)
        _note(self, request, ignored_args_for_cache_key)

    def _prepare_cached_response(self, response):
        # DSPy's one hook that sees a hit's stored entry before the copy handed out is stripped of its usage
        usage = _usage_of(response)
        tracker = dspy.settings.usage_tracker
        if usage and hasattr(tracker, "add_cached_usage"):
            tracker.add_cached_usage(str(getattr(response, "model", "") or "cached"), dict(usage))
        return super()._prepare_cached_response(response)

    def evict(self, keys: list[str]) -> None:
        """Delete these entries from the memory and the disk tier."""
        for key in keys:
            with self._lock:
                self.memory_cache.pop(key, None)
            if self.enable_disk_cache:
                self.disk_cache.delete(key)


def _note(cache, request, ignored) -> None:
    """Add the request's cache key to the keys `answers()` is collecting in this thread or task (if any)."""
    keys = _answers.get()
    if keys is not None and (cache.enable_memory_cache or cache.enable_disk_cache):
        try:
            keys.append(cache.cache_key(request, ignored))
        except Exception:  # noqa: BLE001 - DSPy itself skips caching a request it cannot key
            pass


def install() -> HonestCache:
    """Make the live `dspy.cache` an HonestCache (same object, same tiers and entries); returns it."""
    cache = dspy.cache
    if not isinstance(cache, HonestCache):
        with _LOCK:
            cls = type(cache)
            if cls not in _CLASSES:
                _CLASSES[cls] = type(f"Honest{cls.__name__}", (HonestCache, cls), {})
            cache.__class__ = _CLASSES[cls]
            _cap_memory(cache)
    return cache


def _cap_memory(cache) -> None:
    """Replace an LRU memory tier larger than MEMORY_ENTRIES by one of that size, keeping its newest entries."""
    tier = getattr(cache, "memory_cache", None)
    if getattr(tier, "maxsize", 0) <= MEMORY_ENTRIES:
        return
    from cachetools import LRUCache

    capped = LRUCache(maxsize=MEMORY_ENTRIES)
    for key in list(tier)[-MEMORY_ENTRIES:]:
        capped[key] = tier[key]
    with cache._lock:
        cache.memory_cache = capped


@contextmanager
def answers() -> Iterator[list[str]]:
    """Collect the cache keys of the LM answers read or stored within this block (this thread or task)."""
    install()
    keys: list[str] = []
    token = _answers.set(keys)
    try:
        yield keys
    finally:
        _answers.reset(token)


def evict(keys: list[str]) -> None:
    """Delete these entries from DSPy's cache (both tiers)."""
    if keys:
        install().evict(keys)
