"""hiera_dspy/lm/cache.py extends DSPy's live cache object by swapping its class (see its docstring for why no public
hook does). These tests fail loudly, naming the method, when a DSPy upgrade moves what the swap relies on."""

from __future__ import annotations

import inspect

import dspy
from dspy.clients.cache import Cache

from hiera_dspy.lm import cache as lm_cache

OVERRIDDEN = {"get": ["self", "request", "ignored_args_for_cache_key"],
              "put": ["self", "request", "value", "ignored_args_for_cache_key", "enable_memory_cache"],
              "_prepare_cached_response": ["self", "response"]}


def test_dspy_cache_still_has_the_methods_honest_cache_overrides():
    for name, params in OVERRIDDEN.items():
        assert hasattr(Cache, name), f"dspy.clients.cache.Cache.{name} is gone: revisit hiera_dspy/lm/cache.py"
        got = list(inspect.signature(getattr(Cache, name)).parameters)
        assert got == params, f"Cache.{name}{got} changed: revisit hiera_dspy/lm/cache.py"
    for attr in ("memory_cache", "disk_cache", "enable_memory_cache", "enable_disk_cache", "_lock"):
        assert attr in vars(Cache(enable_disk_cache=False, enable_memory_cache=True, disk_cache_dir=None)), attr


class Tracker:
    def __init__(self):
        self.cached = []

    def add_cached_usage(self, model, usage):
        self.cached.append((model, usage))


def test_install_keeps_the_object_and_its_entries_books_hits_and_evicts():
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)
    plain = dspy.cache
    request = {"model": "openai/m", "messages": [{"role": "user", "content": "hi"}]}
    plain.put(request, {"_dspy_format": 1, "usage": {"prompt_tokens": 7, "completion_tokens": 2}})
    honest = lm_cache.install()
    assert honest is plain and isinstance(honest, Cache) and lm_cache.install() is honest
    tracker = Tracker()
    with dspy.context(usage_tracker=tracker), lm_cache.answers() as keys:
        assert honest.get(request) is not None  # the entry put before the swap is still there
    assert tracker.cached == [("cached", {"prompt_tokens": 7, "completion_tokens": 2})]
    assert keys == [honest.cache_key(request)]
    lm_cache.evict(keys)
    assert honest.get(request) is None
