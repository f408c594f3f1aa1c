"""Failures never become labels, and an unparseable answer is never served again from DSPy's cache.

Every test drives `python -m eval.run`'s main against the loopback fault server: refusals and negated sentences are
error rows (not the opposite label), a step that still fails after its retries is an error row or a counted
`degraded` judgment naming the step, and a retry after a garbage answer reaches the server.
"""

from __future__ import annotations

import json

import dspy
import pytest

from hiera_dspy.lm import retry
from hiera_dspy.lm.retry import RetryPolicy
from hiera_dspy.lm.roles import LMSpec, make_lm
from tests.fault_server import FaultServer
from tests.reliability.conftest import ANSWERS
from tests.reliability.test_faults import _store_rows

LABELS = {"Irrelevant", "Relevant"}


def _run(main, eval_args, server, tmp, run_id, method="hiera", limit=10, extra=None):
    return main(eval_args(server.url, tmp, run_id=run_id, limit=limit, threads=2, method=method,
                          store=tmp / "store.sqlite", out=tmp / "out" / run_id, extra=extra))


def _predictions(tmp, run_id):
    return [json.loads(line) for line in (tmp / "out" / run_id / "predictions.jsonl").read_text().splitlines()]


# --- item 3: refusals and negations are errors, not the opposite label -----------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("method", ["zero-shot", "hiera"])
@pytest.mark.parametrize("server_kwargs", [
    dict(faults={"refusal": 1.0}),  # the whole answer: "I'm sorry, but this item is not relevant."
    dict(answers={**ANSWERS, "label": "not relevant"}),  # a negation in the label field itself
    dict(answers={**ANSWERS, "label": "I'm sorry, but this item is not relevant"}),
], ids=["refusal", "label-field-negation", "label-field-refusal"])
def test_refusals_are_error_rows_not_labels(isolated, eval_args, capsys, method, server_kwargs):
    from eval.run import main

    with FaultServer(**server_kwargs) as server:
        metrics = _run(main, eval_args, server, isolated, "refused", method=method)
        assert server.requests > 0
    rows = _store_rows(isolated / "store.sqlite", "refused")
    assert len(rows) == 10
    assert [r["label"] for r in rows] == [None] * 10, "a refusal was turned into a label"
    assert all(r["error"] and "label" in r["error"] for r in rows)
    assert metrics["errors"] == 10 and metrics["answered"] == 0 and metrics["parse_recovered"] == 0
    assert metrics["n"] == 10 and metrics["coverage"] == 0 and metrics["accuracy"] == 0  # every pair scored
    err = capsys.readouterr().err
    assert "10 judgments ended in an error" in err


@pytest.mark.timeout(60)
@pytest.mark.parametrize("refusal", ["not an exact match", "This is not an Exact match, only partial."])
def test_a_negated_label_word_is_an_error_row(isolated, eval_args, refusal):
    """WANDS labels Exact/Partial/Irrelevant: "not an exact match" is no label (it read as "Exact" before)."""
    from eval.run import main

    data = isolated / "wands.jsonl"
    data.write_text("".join(json.dumps({"id": f"w{i}", "query": f"oak desk {i}", "item_title": f"Desk {i}",
                                        "item_text": "an oak desk", "label": "Exact"}) + "\n" for i in range(6)))
    with FaultServer(faults={"refusal": 1.0}, refusal=refusal) as server:
        args = eval_args(server.url, isolated, run_id="wands", limit=6, threads=2, method="zero-shot")
        args[args.index("msrd")] = f"jsonl:{data}"
        args[args.index("dev")] = "all"
        metrics = main([*args, "--scheme", "wands"])
    assert metrics["errors"] == 6 and metrics["answered"] == 0 and metrics["n"] == 6
    assert [r["label"] for r in _store_rows(isolated / "store.sqlite", "wands")] == [None] * 6


@pytest.mark.timeout(60)
def test_an_unambiguous_label_token_is_still_recovered_and_counted(isolated, eval_args, capsys):
    from eval.run import main

    # "Relevant." alone is a label token in the label position (a plain answer without field markers)
    with FaultServer(faults={"refusal": 1.0}, refusal="Relevant.") as server:
        metrics = _run(main, eval_args, server, isolated, "recovered", method="zero-shot", limit=4)
    assert metrics["errors"] == 0 and metrics["n"] == 4 and metrics["parse_recovered"] == 4
    assert all(p["label"] == "Relevant" and p["fields"]["parse_recovered"] for p in _predictions(isolated, "recovered"))
    assert "parse-recovered=4" in capsys.readouterr().out


# --- item 3: a step that still fails after retries -------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_a_truncated_plan_makes_a_counted_degraded_judgment_naming_the_step(isolated, eval_args, capsys):
    from eval.run import main

    # every Relation Analyzer plan is cut after its first field: consult_item_analyzer and lookups are missing
    with FaultServer(ANSWERS, rules={"`consult_item_analyzer`": "truncated"}) as server:
        metrics = _run(main, eval_args, server, isolated, "degraded")
    preds = _predictions(isolated, "degraded")
    delegated = [p for p in preds if p["delegated"]]
    assert delegated and len(delegated) < len(preds)
    assert all(p["label"] in LABELS and not p["error"] for p in preds)
    assert all(p["fields"].get("degraded") == ["relation.plan"] for p in delegated)
    assert not any(p["fields"].get("degraded") for p in preds if not p["delegated"])
    assert metrics["degraded"] == len(delegated) and metrics["degraded_steps"] == {"relation.plan": len(delegated)}
    assert f"degraded={len(delegated)}" in capsys.readouterr().out
    from eval.trace import format_step
    from hiera_dspy.store.run_store import RunStore

    row = next(r for r in RunStore(isolated / "store.sqlite").rows("degraded") if r["delegated"])
    plan = next(s for s in row["steps"] if s["name"] == "relation.plan")
    assert {"consult_item_analyzer", "lookups"} <= set(plan["degraded"]) and plan["outputs"]["consult_item_analyzer"]
    assert "consult_query_analyzer" not in plan["degraded"]  # the one field the cut-off answer had
    assert f"[salvaged]  [degraded: {', '.join(plan['degraded'])}]" in format_step(0, plan)[0]


@pytest.mark.timeout(60)
def test_an_unreadable_argument_is_an_error_row_naming_the_step(isolated, eval_args):
    from eval.run import main

    # the Relation Analyzer's synthesis answers garbage every time: no argument, so no success with an empty one
    with FaultServer(ANSWERS, rules={"`argument`": "garbage"}) as server:
        metrics = _run(main, eval_args, server, isolated, "no-argument")
    preds = _predictions(isolated, "no-argument")
    delegated = [p for p in preds if p["id"] in {p["id"] for p in preds if p["error"]}]
    assert metrics["errors"] == len(delegated) > 0
    assert all("relation.synthesize" in p["error"] and p["label"] is None for p in delegated)
    assert all(p["label"] in LABELS for p in preds if not p["error"])


# --- item 4: no poisoned cache ---------------------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_retry_errors_after_garbage_makes_real_calls(isolated, eval_args, monkeypatch):
    """Even with no content retries at all, --retry-errors asks the server again instead of replaying the garbage
    the first run was given (DSPy's disk cache outlives the process)."""
    from eval.run import main

    monkeypatch.setenv("HIERA_RETRY_ATTEMPTS", "1")
    with FaultServer(ANSWERS, faults={"garbage": 1.0}) as server:
        first = _run(main, eval_args, server, isolated, "poison", method="judge-only", limit=4)
        assert first["errors"] == 4 and server.requests == 8  # ChatAdapter + its JSON fallback, per pair
        server.set_faults({})
        server.reset_counts()
        second = _run(main, eval_args, server, isolated, "poison", method="judge-only", limit=4,
                      extra=["--retry-errors"])
        assert server.requests == 4, "each retried judgment reached the server once"
    assert second["errors"] == 0 and second["n"] == 4


def test_a_retry_after_garbage_reaches_the_server_and_its_good_answer_is_cached(isolated):
    class Sig(dspy.Signature):
        query: str = dspy.InputField()
        answer: str = dspy.OutputField()

    with FaultServer(script=["garbage", "garbage", "ok"]) as server:
        lm = make_lm(LMSpec("openai/fake", api_base=server.url))
        with dspy.context(lm=lm), retry.retrying(RetryPolicy(attempts=2, base_delay=0.01)):
            assert dspy.Predict(Sig)(query="q").answer == "fake answer"
        assert server.requests == 3  # garbage (chat) + garbage (JSON fallback), then the retry
        with dspy.context(lm=lm), retry.retrying(RetryPolicy(attempts=2, base_delay=0.01)):
            assert dspy.Predict(Sig)(query="q").answer == "fake answer"
        assert server.requests == 3, "the good answer came from the cache; the garbage was never served again"


def test_a_degraded_analysis_is_not_reused_for_the_next_pair(isolated, monkeypatch):
    """The Item Analyzer's answer is cut short for every request: each pair asks again (a salvaged analysis is not
    memoised) and each judgment names item.analyze as degraded."""
    from hiera_dspy.labels import get_scheme
    from hiera_dspy.lm.roles import build_lms
    from hiera_dspy.methods import BuildContext, build
    from hiera_dspy.records import Pair
    from hiera_dspy.runs.runner import judge_one

    monkeypatch.setenv("HIERA_RETRY_ATTEMPTS", "1")
    pairs = [Pair(id=f"p{i}", query=f"spy movie {i}", item_title="Mission: Impossible", item_text="An IMF agent.",
                  label="Relevant", query_id=f"q{i}", item_id="i0") for i in range(2)]
    with FaultServer(ANSWERS, rules={"`inferred_properties`": "truncated"}) as server:
        lms = build_lms({role: LMSpec("openai/fake", api_base=server.url) for role in ("judge", "relation", "query",
                                                                                      "item")})
        program = build("hiera", BuildContext(get_scheme("msrd"), lms), delegation="always")
        rows = [judge_one(program, pair) for pair in pairs]
        assert server.counts["truncated"] == 4  # 2 pairs x (ChatAdapter + its JSON fallback): asked again
    assert all(r["error"] is None and r["fields"]["degraded"] == ["item.analyze"] for r in rows)
    assert not any(s["outputs"].get("reused") for r in rows for s in r["steps"])


# --- item 8: a cache hit is booked at the cost its entry recorded ------------------------------------------------------

def test_a_judgment_answered_by_the_cache_costs_what_it_cost_when_paid(isolated):
    from hiera_dspy.data import load_dataset
    from hiera_dspy.lm.roles import build_lms
    from hiera_dspy.methods import BuildContext, build
    from hiera_dspy.runs.runner import judge_one

    dataset = load_dataset("msrd")
    pair = dataset.split("dev", 1)[0]
    with FaultServer(ANSWERS) as server:
        lms = build_lms({role: LMSpec("openai/fake", api_base=server.url) for role in ("judge", "relation", "query",
                                                                                      "item")})
        paid = judge_one(build("hiera", BuildContext(dataset.scheme, lms), delegation="always"), pair)
        requests = server.requests
        cached = judge_one(build("hiera", BuildContext(dataset.scheme, lms), delegation="always"), pair)
        assert server.requests == requests, "the second judgment was answered by DSPy's cache"
    assert paid["tokens"] > 0 and (cached["tokens"], cached["lm_calls"]) == (paid["tokens"], paid["lm_calls"])
    assert sum(s["cached_calls"] for s in paid["steps"]) == 0
    assert sum(s["cached_calls"] for s in cached["steps"]) == cached["lm_calls"]
    assert cached["tokens_by_role"] == paid["tokens_by_role"]
