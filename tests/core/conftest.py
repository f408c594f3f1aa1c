"""The core tests' helpers as one fixture `h`: the shared test kit (hiera_dspy/testing.py) plus a prompt recorder and
the mark of the Judge's decision prompt."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from hiera_dspy import testing

DECISION_MARK = "[[ ## evidence ## ]]"  # only the Judge's decision prompt has an `evidence` input


def is_decision(prompt: str) -> bool:
    return DECISION_MARK in prompt


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


@pytest.fixture
def h():
    """The helpers as one namespace (tests in this folder need no import path for them)."""
    return SimpleNamespace(Recorder=Recorder, FakeKnowledge=testing.FakeKnowledge, make_role_lms=testing.role_lms,
                           engine_calls=testing.engine_calls, judge_once=testing.judge_once, pair=testing.pair,
                           is_decision=is_decision, query_of=testing.input_of)
