"""DSPy's model metadata, looked up once a model: `dspy.clients.model_metadata.model_info` scans its whole map (some
2,000 entries) for aliases whenever a model is not listed under its own name (a self-hosted or loopback model, an
unknown name), and DSPy calls it on every LM call to price the answer (`dspy.clients.costs`) and to read the model's
capabilities. The map is loaded once and never changes, so its answer for a (provider, model, namespaces) is memoized
(each caller still gets its own copy). bench/llm_overhead.py measures the difference (bench/results/llm_overhead.md).
"""

from __future__ import annotations

import copy
import functools


def memoize_model_info() -> None:
    """Make DSPy's pricing and capability lookups read a memoized `model_info` (once a process; a DSPy without these
    modules is left as it is)."""
    try:
        from dspy.clients import capabilities, costs, model_metadata
    except ImportError:
        return
    if getattr(costs.model_info, "memoized", False):
        return
    original = model_metadata.model_info

    @functools.lru_cache(maxsize=1024)
    def looked_up(provider, model, namespaces):
        return original(provider, model, namespaces=namespaces)

    def model_info(provider, model, *, namespaces=None):
        try:
            key = tuple(namespaces) if namespaces is not None else None
            return copy.deepcopy(looked_up(provider, model, key))
        except TypeError:  # an unhashable argument: DSPy's own lookup
            return original(provider, model, namespaces=namespaces)

    model_info.memoized = True  # type: ignore[attr-defined]
    costs.model_info = model_info
    capabilities.model_info = model_info
