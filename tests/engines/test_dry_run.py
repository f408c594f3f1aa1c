"""--dry-run: real prompts rendered and counted, delegation mixed in, prices from LiteLLM's map, nothing sent."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import litellm
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine_helpers import ANSWERS, make_program  # noqa: E402
from fault_server import FaultServer  # noqa: E402

from hiera_dspy.runs.cost import forecast, format_forecast, price  # noqa: E402
from hiera_dspy.testing import role_lms  # noqa: E402

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _cli(module, argv):
    import importlib

    return importlib.import_module(module).main(argv)


def test_dry_run_sends_nothing_and_prices_the_split(tmp_path, capsys):
    with FaultServer() as server:
        est = _cli("eval.run", ["--dataset", "msrd", "--split", "dev", "--method", "hiera", "--limit", "60",
                                "--lm", "openai/gpt-4o-mini", "--api-base", server.url, "--dry-run",
                                "--dry-run-sample", "6", "--store", str(tmp_path / "s.sqlite")])
        assert server.requests == 0
    out = capsys.readouterr().out
    assert "dry run: hiera on 60 pairs" in out and "nothing sent" in out
    assert est["usd"] > 0 and est["usd_batch"] == pytest.approx(est["usd"] / 2, rel=1e-6)  # gpt-4o-mini: half
    assert set(est["roles"]) == {"judge", "relation", "query", "item"}
    assert est["delegation_source"] == "assumed" and est["delegation"] == 0.5
    from hiera_dspy.store.run_store import RunStore

    assert RunStore(tmp_path / "s.sqlite").run_ids() == []  # no run was started


def test_prompt_tokens_are_the_real_requests_counted(msrd, tmp_path):
    """The dry run's input tokens per call equal LiteLLM's count of the requests a real run sends."""
    from hiera_dspy.engines import Job, judge
    from hiera_dspy.lm.roles import ROLES, LMSpec, build_lms
    from hiera_dspy.methods import BuildContext, build
    from hiera_dspy.store.run_store import RunStore

    pairs = msrd.split("dev")[:8]
    bodies = []
    with FaultServer() as server:
        original = server.answer
        server.answer = lambda body: (bodies.append(body), original(body))[1]
        lms = build_lms({role: LMSpec("openai/gpt-4o-mini", api_base=server.url) for role in ROLES})
        program = build("zero-shot", BuildContext(msrd.scheme, lms))
        est = forecast(program, pairs, lms, sample=8)
        assert server.requests == 0
        judge("threads", Job(program, pairs, RunStore(tmp_path / "s.sqlite"), "real", lms, progress=False))
    counted = sum(litellm.token_counter(model="openai/gpt-4o-mini", messages=b["messages"]) for b in bodies)
    assert len(bodies) == 8 and est["calls"] == 8
    assert est["input_tokens"] == pytest.approx(counted)


def test_delegation_rate_changes_the_calls(msrd):
    pairs = msrd.split("dev")[:40]
    lms = role_lms(ANSWERS)
    program = make_program(msrd, lms)
    never = forecast(program, pairs, lms, sample=4, delegation=0.0)
    always = forecast(program, pairs, lms, sample=4, delegation=1.0)
    assert never["roles"]["judge"]["calls"] == 40 and "relation" not in {
        r for r, e in never["roles"].items() if e["calls"]}
    assert always["roles"]["judge"]["calls"] == 80 and always["roles"]["relation"]["calls"] == 80
    # query analyses once per distinct query (40 pairs of MSRD dev share some), R's directed question once per pair
    distinct_queries = len({p.query for p in pairs})
    assert always["roles"]["query"]["calls"] == pytest.approx(distinct_queries + 40)
    assert distinct_queries < 40
    assert never["usd"] is None and "fake/judge" in format_forecast(never) and "unknown price" in format_forecast(never)


def test_a_pilot_in_the_store_gives_the_delegation_rate(msrd, tmp_path):
    pairs = msrd.split("dev")[:40]
    lms = role_lms(ANSWERS)
    rows = [{"id": f"p{i}", "delegated": i < 3, "error": None,
             "steps": [{"name": "judge.triage", "calls": 1, "completion_tokens": 40}]} for i in range(10)]
    est = forecast(make_program(msrd, lms), pairs, lms, sample=4, pilot_rows=rows)
    assert est["delegation"] == pytest.approx(0.3) and est["delegation_source"].startswith("pilot (10")
    assert est["output_source"] == "pilot"


def test_price_map_is_local_and_says_unknown():
    assert price("openai/gpt-4o-mini")["input_batch"] == pytest.approx(price("openai/gpt-4o-mini")["input"] / 2)
    assert price("anthropic/claude-3-7-sonnet-20250219") is None  # not in LiteLLM's local map: "unknown price"
    assert price("bedrock/anthropic.claude-3-7-sonnet-20250219-v1:0")["input"] == pytest.approx(3e-6)


def test_ablate_dry_run_prints_every_method_and_a_total(tmp_path, capsys):
    with FaultServer() as server:
        estimates = _cli("eval.ablate", ["--dataset", "msrd", "--split", "dev", "--methods", "zero-shot,hiera",
                                         "--limit", "20", "--lm", "openai/gpt-4o-mini", "--api-base", server.url,
                                         "--dry-run", "--dry-run-sample", "3", "--store", str(tmp_path / "s.sqlite")])
        assert server.requests == 0
    out = capsys.readouterr().out
    assert [e["method"] for e in estimates] == ["zero-shot", "hiera"]
    assert "dry run total for 2 methods" in out
