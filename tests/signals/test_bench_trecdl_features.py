"""`python -m bench.trecdl_features` on a small synthetic TREC folder (the TREC DL layout, no MS MARCO text), with
the real MiniLM pass: every seed and feature set gets its row, and the summary's means and win counts are the
per-seed rows'."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.bench_command import run_bench


@pytest.mark.slow  # the ONNX export of MiniLM on a fresh cache and 8 late-lr fits: ~40 s
def test_each_feature_set_is_cross_validated_on_every_seed_and_summarised(tmp_path, minilm_trec_folder):
    folder = minilm_trec_folder(8)
    work = tmp_path / "work"
    run_bench("trecdl_features", "--data", folder, "--work", work, "--seeds", "0,1", "--folds", "3", timeout=600)
    text = (work / "features.md").read_text()
    assert np.load(work / "late_features.npy").shape == (15 * 8, 3)  # late_maxsim, late_cosine, late_min
    rows = {(int(seed), name): [float(v) for v in values.split(" | ")]
            for seed, name, values in re.findall(r"^\| (\d) \| ([a-z+]+) \| ([-0-9. |]+) \|$", text, re.M)}
    assert set(rows) == {(s, n) for s in (0, 1) for n in ("late", "late+coverage")}
    assert all(-1 <= v <= 1 for values in rows.values() for v in values)
    assert rows[0, "late"][0] > 0.2  # kappa: the synthetic grades are learnable out of fold
    wins = sum(rows[s, "late+coverage"][0] > rows[s, "late"][0] for s in (0, 1))
    mean = np.mean([rows[s, "late+coverage"][0] for s in (0, 1)])
    summary = re.search(r"^\| late\+coverage \| ([0-9.-]+) \((\d) of 2\) \|", text, re.M)
    assert summary is not None and int(summary.group(2)) == wins
    assert float(summary.group(1)) == pytest.approx(mean, abs=0.0011)  # the rows are rounded to 3 decimals
