"""Helpers for the core tests: per-role fake LMs, prompt recorders, a fake knowledge source, ledgers."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from hiera_dspy import testing
from hiera_dspy.lm import ledger
from hiera_dspy.lm.roles import RoleLMs

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


FakeKnowledge, make_role_lms = testing.FakeKnowledge, testing.role_lms  # shared helpers: hiera_dspy/testing.py


def engine_calls(lms: RoleLMs) -> dict[str, int]:
    return {role: lm.engine.calls for role, lm in lms.items()}


def run_ledgered(program, **inputs):
    book = ledger.Ledger()
    with ledger.bind(book):
        out = program(**inputs)
    return out, book


pair = testing.pair


@pytest.fixture
def h():
    """The helpers as one namespace (tests in this folder need no import path for them)."""
    return SimpleNamespace(Recorder=Recorder, FakeKnowledge=FakeKnowledge, make_role_lms=make_role_lms,
                           engine_calls=engine_calls, run_ledgered=run_ledgered, pair=pair,
                           is_decision=is_decision, query_of=query_of)
