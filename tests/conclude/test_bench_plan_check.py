"""bench.conclusions --plan-check (bench/conclusions_plan.py) run small, as a person runs it: on 40 of MSRD's bundled
queries, 4 systems, 4 repetitions, a first sample of 6 queries and target widths at 10; its table names each
simulated judge with the plan's n against what labelling needed."""

import pytest

from tests.bench_command import run_bench


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_plan_check_runs_small(tmp_path):
    table = tmp_path / "plan.md"
    run_bench("conclusions", "--plan-check", "--dataset", "msrd", "--queries", 40, "--systems", 4, "--samples", 4,
              "--sample-size", 14, "--first", 6, "--widths-at", 10, "--table", table, timeout=880)
    rows = [line.split("|")[1:-1] for line in table.read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| judge")]
    judges = {row[0].strip() for row in rows}
    assert {"probabilities", "labels", "overconfident", "correlated"} <= judges
