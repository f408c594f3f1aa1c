"""Shared test setup: no network, no real model, no state shared between tests (DSPy's disk cache off, our caches and
run stores in a temp folder)."""

from __future__ import annotations

import contextlib
import copy
import os
import threading
from types import SimpleNamespace

import pytest

os.environ.setdefault("HIERA_OFFLINE", "1")

import dspy  # noqa: E402
from dspy.dsp.utils.settings import DEFAULT_CONFIG  # noqa: E402

import hiera_dspy  # noqa: E402,F401  (first: hiera_dspy.settings sets the process environment dspy reads)
from hiera_dspy import testing  # noqa: E402
from hiera_dspy.testing import fake_lm  # noqa: E402


@pytest.fixture(autouse=True)
def lexical_reference(monkeypatch):
    """The embed-lr reference line under eval.run/optimize.compile, fitted on lexical features (no MiniLM): every
    folder, whatever its own `isolated` fixture."""
    monkeypatch.setenv("HIERA_REFERENCE_EMBEDDER", "lexical")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HIERA_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("HIERA_LM", "fake")
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    yield


@pytest.fixture(autouse=True)
def restore_dspy_settings():
    """dspy.settings back to DSPy's defaults after every test (as DSPy's own tests/conftest.py does): an LM or
    adapter one test configures (e.g. a CLI's dspy.configure(lm=...)) never answers in the next."""
    yield
    stale = set(dspy.settings.copy()) - set(DEFAULT_CONFIG)
    dspy.configure(**copy.deepcopy(DEFAULT_CONFIG), **dict.fromkeys(stale))


@pytest.fixture
def fake_lms():
    """hiera_dspy.testing.role_lms: RoleLMs answered by fake LMs."""
    return testing.role_lms


@pytest.fixture(scope="session")
def msrd():
    """The bundled MSRD dataset, loaded once for the whole session (tests read it, never change it)."""
    from hiera_dspy.data import load_dataset

    return load_dataset("msrd")


@pytest.fixture
def patch_make_lm():
    """Make every CLI-built LM a fake one answering `answers` (returns the setter), through the supported injection
    point `hiera_dspy.lm.roles.lm_factory`; the last call wins, and the factory is gone after the test."""
    from hiera_dspy.lm.roles import lm_factory

    with contextlib.ExitStack() as stack:
        def apply(answers: dict | None = None):
            stack.close()
            stack.enter_context(lm_factory(lambda spec, role="judge": fake_lm(answers)))

        yield apply


# --- `h`: the judging tests' helpers ----------------------------------------------------------------------------
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
    """The shared test kit (hiera_dspy/testing.py), a prompt recorder and the mark of the Judge's decision prompt, as
    one namespace: a test asks for `h` and needs no import path for them."""
    return SimpleNamespace(Recorder=Recorder, FakeKnowledge=testing.FakeKnowledge, make_role_lms=testing.role_lms,
                           engine_calls=testing.engine_calls, judge_once=testing.judge_once, pair=testing.pair,
                           is_decision=is_decision, query_of=testing.input_of)
