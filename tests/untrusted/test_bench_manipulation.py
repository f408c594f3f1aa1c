"""bench.manipulation run small, as a person runs it: `--restored` on 10 held-out MSRD pairs of the bundled pool (no
judge), the share of hostile copies the screen restores to the clean item, per family."""

import json

from tests.bench_command import run_bench


def test_restored_counts_every_family_and_restores_no_control(tmp_path):
    done = run_bench("manipulation", "--restored", "--pairs", 10, "--splits", "test", "--out", tmp_path, timeout=120)
    result = json.loads((tmp_path / "restored.json").read_text())
    assert result["pairs"] == 10
    cells = result["cells"]
    assert cells["control/test"]["restored"] == 0  # a neutral sentence is not an attack: nothing to restore
    assert all(0 <= c["restored"] <= c["n"] and c["n"] > 0 for c in cells.values())
    assert sum(c["restored"] for name, c in cells.items() if name != "control/test") > 0
    assert "stuffing-repeat/test" in done.stdout
