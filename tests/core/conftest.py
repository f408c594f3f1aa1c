"""Helpers for the core tests: per-role fake LMs, prompt recorders, a fake knowledge source, ledgers."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from hiera_dspy import accounting
from hiera_dspy.knowledge import Passage
from hiera_dspy.lms import ROLES, RoleLMs
from hiera_dspy.testing import fake_lm
from hiera_dspy.types import Pair

DECISION_MARK = "[[ ## evidence ## ]]"  # only the Judge's decision prompt has an `evidence` input


def is_decision(prompt: str) -> bool:
    return DECISION_MARK in prompt


def query_of(prompt: str) -> str:
    """The value of the `query` input in a ChatAdapter user message."""
    after = prompt.split("[[ ## query ## ]]", 1)[-1]
    return after.split("[[ ##", 1)[0].strip()


class Recorder:
    """Collects (tag, prompt) pairs from answer callables; thread-safe."""

    def __init__(self):
        self.prompts: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def answer(self, tag: str, value):
        def call(prompt: str):
            with self._lock:
                self.prompts.append((tag, prompt))
            return value(prompt) if callable(value) else value

        return call

    def of(self, tag: str) -> list[str]:
        return [p for t, p in self.prompts if t == tag]


class FakeKnowledge:
    """A knowledge source returning fixed passages and recording every search."""

    name = "fake-knowledge"
    default_k = 3

    def __init__(self, passages: list[Passage] | None = None):
        self.passages = passages if passages is not None else [
            Passage(title="KB-TITLE", text="KB-PASSAGE-TEXT about the item", source="fake-knowledge")]
        self.calls: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def __deepcopy__(self, memo):
        return self

    def search(self, text: str, k: int | None = None) -> list[Passage]:
        k = self.default_k if k is None else k
        with self._lock:
            self.calls.append((text, k))
        return list(self.passages[:k])


def make_role_lms(answers: dict | None = None, per_role: bool = False, **kwargs) -> RoleLMs:
    """Every role answered by one fake LM, or (per_role=True) by its own fake LM with its own engine counter."""
    if per_role:
        return RoleLMs({role: fake_lm(answers, name=f"fake/{role}", **kwargs) for role in ROLES})
    lm = fake_lm(answers, **kwargs)
    return RoleLMs({role: lm for role in ROLES})


def engine_calls(lms: RoleLMs) -> dict[str, int]:
    return {role: lm.engine.calls for role, lm in lms.items()}


def run_ledgered(program, **inputs):
    ledger = accounting.Ledger()
    with accounting.bind(ledger):
        out = program(**inputs)
    return out, ledger


def pair(i: int = 0, query: str = "tom cruise spy movie", title: str = "Mission: Impossible",
         text: str = "An IMF agent is framed.", label: str | None = "Relevant") -> Pair:
    return Pair(id=f"p{i}", query=query, item_title=title, item_text=text, label=label, query_id=f"q-{query}",
                item_id=f"i-{title}")


@pytest.fixture
def h():
    """The helpers as one namespace (tests in this folder need no import path for them)."""
    return SimpleNamespace(Recorder=Recorder, FakeKnowledge=FakeKnowledge, make_role_lms=make_role_lms,
                           engine_calls=engine_calls, run_ledgered=run_ledgered, pair=pair,
                           is_decision=is_decision, query_of=query_of)
