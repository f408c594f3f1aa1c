"""Shared setup for the engine tests: 40 MSRD dev pairs, HIERA on a deterministic fake LM that delegates about half
of the pairs, and the comparison of a run's rows with the thread engine's."""

from __future__ import annotations

import zlib

import pytest

from hiera_dspy.data import load_dataset
from hiera_dspy.lm.roles import ROLES, RoleLMs
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.testing import fake_lm


def _odd(prompt: str) -> bool:
    return zlib.crc32(prompt.encode()) % 2 == 1


# deterministic per prompt: some triages unclear (so about half the pairs delegate), labels vary with the prompt
ANSWERS = {
    "query_interpretability": lambda prompt: "unclear" if _odd(prompt) else "clear",
    "label": lambda prompt: "Relevant" if zlib.crc32(prompt.encode()) % 3 else "Irrelevant",
}
ROW_KEYS = ("id", "position", "gold", "label", "fields", "error", "escalated", "delegated", "attempts")


def hiera_lms(answers=None, latency: float = 0.0) -> RoleLMs:
    lm = fake_lm(answers if answers is not None else ANSWERS, latency=latency)
    return RoleLMs.of({role: lm for role in ROLES})


@pytest.fixture(scope="session")
def msrd():
    return load_dataset("msrd")


@pytest.fixture
def pairs40(msrd):
    return msrd.split("dev")[:40]


def make_program(msrd, lms, method: str = "hiera"):
    return build(method, BuildContext(msrd.scheme, lms))


def comparable(rows: list[dict]) -> list[dict]:
    """What must be identical whatever the engine: everything but wall-clock times."""
    return [{k: r[k] for k in ROW_KEYS} for r in rows]


def step_multiset(rows: list[dict]) -> list[tuple]:
    """Every LM step of the run (name, role, calls, tokens, outputs): which pair paid for a shared query analysis
    may differ between engines, the steps taken and paid for may not."""
    steps = []
    for r in rows:
        for s in r["steps"]:
            outputs = {k: v for k, v in (s.get("outputs") or {}).items() if k != "reused"}
            steps.append((s["name"], s["role"], s["calls"], s["prompt_tokens"], s["completion_tokens"],
                          repr(sorted(outputs.items()))))
    return sorted(steps)


def assert_same_run(rows: list[dict], reference: list[dict]) -> None:
    assert comparable(rows) == comparable(reference)
    assert step_multiset([{**r, "steps": [s for s in r["steps"] if s["calls"]]} for r in rows]) == \
        step_multiset([{**r, "steps": [s for s in r["steps"] if s["calls"]]} for r in reference])
    assert sum(r["tokens"] for r in rows) == sum(r["tokens"] for r in reference)
    assert sum(r["lm_calls"] for r in rows) == sum(r["lm_calls"] for r in reference)

