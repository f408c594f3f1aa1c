"""Per-judgment accounting: every agent step records its role, LM calls, tokens, seconds and outputs.

A `Ledger` is bound to the current context (thread or task) for one judgment; `hiera_dspy.lm.steps.step(...)` runs one
agent step under the role's LM and a usage tracker that feeds the ledger. The ledger itself is plain Python: the
untrusted-text blocks note their cuts on it without loading DSPy. An answer from DSPy's cache is booked at the cost recorded
with it when it was paid for (hiera_dspy/lm/cache.py) and counted in `cached_calls`: a judgment costs the same
whether its answers came from the server or from the cache, so a run killed and resumed reports what a clean run
reports. Analyses reused within a run (`reused` steps) cost nothing. A step whose answer was salvaged is marked
`parse_recovered`, and `degraded` lists the outputs it had to default. The ledger's steps are the judgment's trace
(`python -m eval.trace`).
"""

from __future__ import annotations

import contextvars
import threading
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field

from hiera_dspy.records import Step

_current: contextvars.ContextVar["Ledger | None"] = contextvars.ContextVar("hiera_ledger", default=None)


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
