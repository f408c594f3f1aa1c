"""Shared test setup: no network, no real model, no state shared between tests (DSPy's disk cache off, our caches and
run stores in a temp folder)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HIERA_OFFLINE", "1")

import hiera_dspy  # noqa: E402,F401  (first: hiera_dspy.settings sets the process environment dspy reads)
import dspy  # noqa: E402

from hiera_dspy.lms import ROLES, RoleLMs  # noqa: E402
from hiera_dspy.testing import fake_lm  # noqa: E402


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HIERA_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("HIERA_LM", "fake")
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    yield


def role_lms(answers: dict | None = None, **kwargs) -> RoleLMs:
    """Every role answered by one fake LM."""
    lm = fake_lm(answers, **kwargs)
    lms = RoleLMs({role: lm for role in ROLES})
    return lms


@pytest.fixture
def fake_lms():
    return role_lms


@pytest.fixture
def patch_make_lm(monkeypatch):
    """Make every CLI-built LM a fake one answering `answers` (returns the setter)."""

    def apply(answers: dict | None = None):
        import hiera_dspy.lms as lms_module

        monkeypatch.setattr(lms_module, "make_lm", lambda spec, role="judge": fake_lm(answers))

    return apply
