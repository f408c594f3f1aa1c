"""One agent step: a predictor called under its role's LM, accounted in the judgment's ledger, with an answer that
does not parse salvaged (`hiera_dspy.lm.salvage`) or failed, never turned into a label.

`step(...)` runs any step (an LM call, a knowledge look-up, a scorer) under the role's LM and a usage tracker that
books its calls and tokens on the `Step` it adds to the current ledger (`hiera_dspy.lm.ledger`). An answer from DSPy's
cache is booked at the cost recorded with it when it was paid for (hiera_dspy/lm/cache.py).
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from hiera_dspy.labels import LabelScheme
from hiera_dspy.lm import cache as lm_cache
from hiera_dspy.lm import ledger, vote_samples
from hiera_dspy.lm.chat import ChatAdapter
from hiera_dspy.lm.retry import retrying_adapter
from hiera_dspy.lm.roles import RoleLMs
from hiera_dspy.lm.salvage import salvage
from hiera_dspy.records import Step, shown


class _StepTracker:
    """Quacks like dspy's UsageTracker: DSPy calls add_usage once per uncached LM call; lm_cache calls
    add_cached_usage once per cache hit, with the usage the entry recorded."""

    def __init__(self, step: Step):
        self.step = step
        self.usage_data: dict = defaultdict(list)  # read by dspy when a parent tracker rolls up

    def add_usage(self, lm: str, usage: dict) -> None:
        self.step.calls += 1
        self.step.prompt_tokens += int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
        self.step.completion_tokens += int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)

    def add_cached_usage(self, lm: str, usage: dict) -> None:
        self.step.cached_calls += 1
        self.add_usage(lm, usage)


@contextmanager
def step(name: str, role: str, lm: dspy.BaseLM | None):
    """Run one agent step with the role's LM, recording its cost into the current ledger (if any). Within a vote's
    sample (`hiera_dspy.lm.vote_samples`), the LM is that sample's copy: its temperature, its own rollout id."""
    lm_cache.install()
    lm = vote_samples.sampled(lm) if lm is not None else None
    record = Step(name=name, role=role)
    overrides: dict[str, Any] = {"usage_tracker": _StepTracker(record)}
    if lm is not None:
        overrides["lm"] = lm
        adapter = _adapter_for(lm)
        if adapter is not None:
            overrides["adapter"] = adapter
    start = time.perf_counter()
    try:
        with dspy.context(**overrides):
            yield record
    finally:
        record.seconds = time.perf_counter() - start
        book = ledger.current()
        if book is not None:
            book.add(record)


_ADAPTERS: dict[str, Any] = {}


def _adapter_for(lm) -> Any:
    """The adapter an LM asks for (`lm.preferred_adapter`, e.g. "json" for the embedded model), with the retry policy."""
    name = getattr(lm, "preferred_adapter", None)
    if name is None:
        return None
    if name not in _ADAPTERS:
        _ADAPTERS[name] = retrying_adapter({"json": dspy.JSONAdapter, "chat": ChatAdapter}[name]())
    return _ADAPTERS[name]


def run_step(name: str, role: str, lms: RoleLMs, predictor: dspy.Module, scheme: LabelScheme | None = None,
             **inputs) -> dspy.Prediction:
    """Call one predictor as a named, accounted step. An answer that still does not parse after the retries is salvaged
    (see `salvage`): the step is `parse_recovered`, and `degraded` when some of its outputs had to be defaulted; an
    answer with no label, or with nothing readable, fails the step (an `AdapterParseError` naming it)."""
    with step(name, role, lms.for_role(role)) as record:
        record.inputs, record.profile = shown(inputs), getattr(predictor, "profile", None)
        try:
            prediction = predictor(**inputs)
        except AdapterParseError as exc:
            prediction, record.degraded = salvage(exc, scheme, name)
            record.parse_recovered = True
        record.outputs = {k: v for k, v in prediction.items()}
    return prediction


async def arun_step(name: str, role: str, lms: RoleLMs, predictor: dspy.Module, scheme: LabelScheme | None = None,
                    **inputs) -> dspy.Prediction:
    """`run_step` through DSPy's async path (`predictor.acall`)."""
    with step(name, role, lms.for_role(role)) as record:
        record.inputs, record.profile = shown(inputs), getattr(predictor, "profile", None)
        try:
            prediction = await predictor.acall(**inputs)
        except AdapterParseError as exc:
            prediction, record.degraded = salvage(exc, scheme, name)
            record.parse_recovered = True
        record.outputs = {k: v for k, v in prediction.items()}
    return prediction
