"""Adding a method touches only its own file: a module dropped into the methods package registers itself, reaches
`eval.run --method NAME`, and its own output fields reach predictions.jsonl, with no list anywhere to edit."""

from __future__ import annotations

import json
import sys

import pytest

from hiera_dspy import methods

MODULE = '''
"""A method module as a user would add it: one file with its @register line."""
import dspy

from hiera_dspy.methods import register


class TopLabel(dspy.Module):
    """Labels every pair with the scheme's top label and reports two outputs of its own."""

    def __init__(self, scheme):
        super().__init__()
        self.scheme = scheme

    def forward(self, query, item_title, item_text):
        return dspy.Prediction(label=self.scheme.labels[-1], query_words=len(query.split()),
                               seen={"title": item_title, "chars": len(item_text)}, _scratch=object())


@register("top-label-test", "Every pair gets the top label (a test's method)", family="baseline", lm_roles=())
def build_top_label(ctx):
    return TopLabel(ctx.scheme)
'''


@pytest.fixture
def dropped_in(tmp_path, monkeypatch):
    """The methods package with one more module file in it (a second folder on its __path__, as a file dropped into
    hiera_dspy/methods/ would be), removed again after the test."""
    folder = tmp_path / "more_methods"
    folder.mkdir()
    (folder / "top_label_test.py").write_text(MODULE)
    monkeypatch.setattr(methods, "__path__", [*methods.__path__, str(folder)])
    yield "top-label-test"
    methods.METHODS.pop("top-label-test", None)
    sys.modules.pop("hiera_dspy.methods.top_label_test", None)


def test_discovery_imports_every_method_module():
    names = methods.discover()
    assert {"hiera", "baselines", "dream", "probs", "learned_scorer", "react"} <= set(names)
    assert {m.builder.__module__.rpartition(".")[2] for m in methods.available().values()} <= set(names)


def test_a_new_method_module_reaches_eval_run_and_its_fields_reach_predictions(dropped_in, tmp_path):
    from eval.run import main

    assert dropped_in in methods.available()
    out = tmp_path / "out"
    main(["--dataset", "msrd", "--split", "dev", "--method", dropped_in, "--knowledge", "none", "--limit", "3",
          "--out", str(out)])
    lines = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(lines) == 3
    for line in lines:
        assert line["label"] == "Relevant" and line["error"] is None
        assert isinstance(line["fields"]["query_words"], int) and line["fields"]["query_words"] > 0
        assert set(line["fields"]["seen"]) == {"title", "chars"}
        assert "_scratch" not in line["fields"] and "label" not in line["fields"]
    assert json.loads((out / "metrics.json").read_text())["pairs"] == 3
