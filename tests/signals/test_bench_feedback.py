"""`python -m bench.feedback` on a small synthetic TREC folder (the TREC DL layout, no MS MARCO text), with the real
MiniLM pass: every policy gets its row with the judge's agreement without and with known judgments, the seeds'
win counts are within the seeds run, and the nothing-known line is the judge alone."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tests.bench_command import run_bench


@pytest.mark.slow  # the ONNX export of MiniLM on a fresh cache and 6 late-lr compiles with their stage: ~2 min
def test_every_policy_is_judged_with_and_without_feedback_on_every_seed(tmp_path, minilm_trec_folder):
    folder = minilm_trec_folder(16)
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
        assert all(0 <= c["top"]["holes"] <= c["holes"] for c in cells)  # the top-10 holes are some of the holes
    assert "On the holes in the retrieval systems' top 10 only" in text
    assert re.search(r"^\| random 5 \| 5\.0 \|", text, re.M)  # 5 random known a query
    nothing = sum(s["nothing_known"]["kappa"] for s in summary["per_seed"]) / len(summary["per_seed"])  # seeds' mean
    assert f"Nothing known (every pair judged alone, as before): kappa {nothing:.3f}" in text
    assert summary["learned"]["policies"][0] == "pool 1" and summary["ms_feedback"] > 0



@pytest.mark.slow  # 3 late-lr compiles with their stage on the synthetic folder: ~1 min
def test_a_shifted_and_weakened_target_is_measured_on_its_own_pairs(tmp_path, minilm_trec_folder):
    folder = minilm_trec_folder(16)
    work = tmp_path / "work"
    run_bench("feedback", "--data", folder, "--work", work, "--seeds", "0", "--folds", "3", "--target-keep", "0.3",
              "--target-degrade", "0.5", timeout=1200)
    assert not (work / "feedback.md").exists()  # a shifted run keeps its tables apart
    text = (work / "feedback-keep0.3-degrade0.5.md").read_text()
    summary = json.loads((work / "feedback-keep0.3-degrade0.5.json").read_text())
    row = json.loads((work / "feedback-seed0-keep0.3-degrade0.5.json").read_text())
    out = np.array(row["out_of_target"])
    gold = np.array(row["gold"])
    assert out.any() and (gold[out] == 0).all()  # only lowest-grade pairs leave the target
    assert summary["target_pairs"] == int((~out).sum())
    assert summary["lowest_share"]["target"] < summary["lowest_share"]["collection"]
    assert "**Shifted target**: each target fold keeps 30%" in text and "**Weakened judge**" in text
    cell = summary["per_seed"][0]["policies"]["random 5"]
    assert cell["holes"] == summary["target_pairs"] - round(cell["known_a_query"] * 15)  # holes of the target only
    assert re.search(r"^Holes given the lowest grade \(truth / without / with feedback\): pool depth 1 \d+%", text,
                     re.M)
    assert f"of the target's {summary['target_pairs']:,} pairs" in text
