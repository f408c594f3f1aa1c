"""Per-judgment accounting: every agent step records its role, LM calls, tokens, seconds and outputs.

A `Ledger` is bound to the current context (thread or task) for one judgment; `step(...)` runs one agent step under
the role's LM and a usage tracker that feeds the ledger. An answer from DSPy's cache is booked at the cost recorded
with it when it was paid for (hiera_dspy/lm/cache.py) and counted in `cached_calls`: a judgment costs the same
whether its answers came from the server or from the cache, so a run killed and resumed reports what a clean run
reports. Analyses reused within a run (`reused` steps) cost nothing. A step whose answer was salvaged is marked
`parse_recovered`, and `degraded` lists the outputs it had to default. The ledger's steps are the judgment's trace
(`python -m eval.trace`).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import dspy

from hiera_dspy.lm import cache as lm_cache
from hiera_dspy.lm import sampling
from hiera_dspy.lm.retry import retrying_adapter

_current: contextvars.ContextVar["Ledger | None"] = contextvars.ContextVar("hiera_ledger", default=None)


@dataclass
class Step:
    """One agent step of a judgment: its LM calls, tokens, seconds, outputs and salvage notes."""
    name: str
    role: str
    seconds: float = 0.0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_calls: int = 0  # of `calls`, the ones DSPy's cache answered (booked at their recorded cost)
    parse_recovered: bool = False  # the answer did not parse and was salvaged
    degraded: list[str] = field(default_factory=list)  # outputs the salvage had to default
    outputs: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)  # what this step was given beyond the pair (see `shown`)
    profile: str | None = None  # the model profile its prompt was fitted to (hiera_dspy.lm.profiles)

    def to_dict(self) -> dict:
        """The step as a plain dict (what a judgment row stores)."""
        return dict(self.__dict__)


@dataclass
class Ledger:
    """The steps of one judgment, added from any thread of it."""
    steps: list[Step] = field(default_factory=list)
    cuts: set[str] = field(default_factory=set)  # pair fields cut to fit a prompt (hiera_dspy.untrusted.blocks)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def note_cut(self, field_name: str) -> None:
        """Record that a field of the judged pair was cut to its prompt budget."""
        with self._lock:
            self.cuts.add(field_name)

    def add(self, step: Step) -> None:
        """Record a finished step."""
        with self._lock:
            self.steps.append(step)

    def by_role(self) -> dict[str, dict[str, int]]:
        """role -> calls, prompt and completion tokens summed over its steps."""
        roles: dict[str, dict[str, int]] = defaultdict(lambda: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        for s in self.steps:
            roles[s.role]["calls"] += s.calls
            roles[s.role]["prompt_tokens"] += s.prompt_tokens
            roles[s.role]["completion_tokens"] += s.completion_tokens
        return dict(roles)

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens of every step."""
        return sum(s.prompt_tokens + s.completion_tokens for s in self.steps)

    @property
    def calls(self) -> int:
        """LM calls of every step (cache hits included)."""
        return sum(s.calls for s in self.steps)

    def recovered_steps(self) -> list[str]:
        """Names of the steps whose answer was salvaged from a malformed one."""
        return [s.name for s in self.steps if s.parse_recovered]

    def degraded_steps(self) -> list[str]:
        """Names of the steps that had to default some of their outputs (the judgment is `degraded`)."""
        return [s.name for s in self.steps if s.degraded]


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


PAIR_INPUTS = frozenset({"query", "item", "item_title", "item_text", "label_definitions"})


def shown(inputs: dict[str, Any]) -> dict[str, Any]:
    """A step's inputs worth keeping in its trace: what it was handed beyond the pair itself (a question, the gaps,
    the triage, the evidence)."""
    return {k: v for k, v in inputs.items() if k not in PAIR_INPUTS}


@contextmanager
def bind(ledger: Ledger):
    """Make `ledger` the current judgment's ledger in this context."""
    token = _current.set(ledger)
    try:
        yield ledger
    finally:
        _current.reset(token)


def current() -> Ledger | None:
    """The ledger bound to this thread or task (`bind`), else None."""
    return _current.get()


@contextmanager
def step(name: str, role: str, lm: dspy.BaseLM | None):
    """Run one agent step with the role's LM, recording its cost into the current ledger (if any). Within a vote's
    sample (`hiera_dspy.lm.sampling`), the LM is that sample's copy: its temperature, its own rollout id."""
    lm_cache.install()
    lm = sampling.sampled(lm) if lm is not None else None
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
        ledger = _current.get()
        if ledger is not None:
            ledger.add(record)


_ADAPTERS: dict[str, Any] = {}


def _adapter_for(lm) -> Any:
    """The adapter an LM asks for (`lm.preferred_adapter`, e.g. "json" for the embedded model), with the retry policy."""
    name = getattr(lm, "preferred_adapter", None)
    if name is None:
        return None
    if name not in _ADAPTERS:
        _ADAPTERS[name] = retrying_adapter({"json": dspy.JSONAdapter, "chat": dspy.ChatAdapter}[name]())
    return _ADAPTERS[name]
