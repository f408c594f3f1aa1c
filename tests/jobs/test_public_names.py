"""The public names live in one list (`hiera_dspy._API`): hiera_dspy.api exports exactly it, and each name reaches a
caller both as `hiera_dspy.NAME` (imported on first use) and from hiera_dspy.api."""

import hiera_dspy
from hiera_dspy import api


def test_the_api_exports_the_one_list():
    assert api.__all__ == list(hiera_dspy._API)
    assert [name for name in hiera_dspy._API if not hasattr(api, name)] == []
    assert all(getattr(hiera_dspy, name) is getattr(api, name) for name in hiera_dspy._API)


def test_plan_returns_a_typed_result():
    assert api.SamplePlan.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_ablate_writes_its_report(tmp_path, monkeypatch):
    """hd.ablate, called from Python, writes the ablation report itself (no command needed) and returns its scores."""
    from hiera_dspy.lm.roles import lm_factory
    from hiera_dspy.testing import fake_lm

    monkeypatch.setenv("HIERA_RUNS_DIR", str(tmp_path / "runs"))
    out = tmp_path / "report"
    request = api.AblateRequest(api.DataSource("msrd"), ("judge-only", "zero-shot"), limit=2, knowledge="none",
                                lms=api.LMChoice(lm="openai/fake"), reference="judge-only", out=str(out),
                                run=api.RunOptions(store=str(tmp_path / "store.sqlite")))
    with lm_factory(lambda spec, role="judge": fake_lm({})):
        done = api.ablate(request)
    assert done.report == str(out) and [s["method"] for s in done.summaries] == ["judge-only", "zero-shot"]
    assert {"report.md", "summary.json", "predictions.jsonl"} <= {p.name for p in out.iterdir()}
    assert done.reference == "judge-only" and done.summaries[1]["mcnemar"] is not None
