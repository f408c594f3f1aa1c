"""A judging run over a real HTTP endpoint keeps DSPy's per-call windows (histories, trace) at
hiera_dspy/lm/retention.py's bound, not DSPy's 10,000 entries each; and the DSPy attributes it relies on still exist."""

from __future__ import annotations

import dspy
from dspy.clients import base_lm

from hiera_dspy.data import load_dataset
from hiera_dspy.lm import retention
from hiera_dspy.lm.roles import LMSpec, RoleLMs, make_lm
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.runs.runner import run_pairs
from hiera_dspy.store.run_store import RunStore


def test_dspy_still_has_the_history_windows_retention_bounds():
    assert isinstance(base_lm.GLOBAL_HISTORY, list), "dspy.clients.base_lm.GLOBAL_HISTORY moved: see retention.py"
    assert base_lm.MAX_HISTORY_SIZE >= retention.HISTORY_ENTRIES
    for name in ("max_history_size", "max_trace_size", "trace"):
        assert name in dspy.settings.config, f"dspy.settings.{name} is gone: revisit hiera_dspy/lm/retention.py"


def test_a_run_over_http_keeps_dspy_windows_bounded(isolated, fault_server):
    """More judgments than the bound through a loopback OpenAI-compatible server (8 threads): every window DSPy keeps
    of the calls stays within retention's bound (with today's DSPy each would hold every call of the run)."""
    n = retention.HISTORY_ENTRIES + 60
    msrd = load_dataset("msrd")
    pairs = msrd.split("dev", n)  # distinct prompts: every call goes to the server (none is a cache hit)
    lm = make_lm(LMSpec("openai/bench", api_base=fault_server.url))
    lms = RoleLMs.of({role: lm for role in ("judge", "relation", "query", "item")})
    program = build("zero-shot", BuildContext(msrd.scheme, lms))
    base_lm.GLOBAL_HISTORY.clear()
    trace = dspy.settings.trace
    if trace is not None:
        trace.clear()
    rows = list(run_pairs(program, pairs, RunStore(isolated / "store.sqlite"), "r", threads=8, progress=False))
    assert len(rows) == n and not any(r["error"] for r in rows)
    assert fault_server.counts["ok"] >= n  # the calls really went over HTTP (zero-shot: one per pair)
    bound = retention.HISTORY_ENTRIES
    assert len(base_lm.GLOBAL_HISTORY) <= bound
    assert 0 < len(lm.history) <= bound and lm.history[-1]["messages"]  # the latest calls are still inspectable
    for predictor in program.predictors():
        assert len(predictor.history) <= bound
    assert trace is None or len(trace) <= bound
