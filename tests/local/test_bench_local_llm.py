"""`python -m bench.local_llm` run small against a loopback model (never the embedded one): its --votes table grown
a step at a time (each step a resume of the same runs), and its table of the flat judge, uncompiled HIERA and HIERA
compiled at a budget on the first dev pairs."""

from __future__ import annotations

import pytest

from tests.bench_command import run_bench
from tests.optimize.any_signature_server import AnySignatureServer


def rows(text: str) -> dict[str, list[str]]:
    return {cells[1].strip(): [c.strip() for c in cells[2:-1]] for cells in
            (line.split("|") for line in text.splitlines() if line.startswith("| ") and "---" not in line)}


def served(server, tmp_path) -> list:
    return ["--lm", "openai/any-signature", "--api-base", server.url, "--knowledge", "none",
            "--store", tmp_path / "store.sqlite"]


@pytest.mark.slow  # a bench run against a loopback model: ~12 s (CI runs the slow tests; the default suite stays under 10 minutes)
def test_votes_table_grows_a_step_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERA_REFERENCE", "none")
    with AnySignatureServer() as server:
        run_bench("local_llm", "--votes", "1,2", "--limit", "4", "--step", "2", "--out", tmp_path / "votes.md",
                  *served(server, tmp_path), cwd=tmp_path)
        asked = len(server.requests)
    votes = (tmp_path / "votes.md").read_text()
    assert votes.startswith("# Votes: zero-shot on the first 4 MSRD dev pairs, LM openai/any-signature")
    counts = rows(votes)
    assert counts["1"][0] == counts["2"][0] == "4" and counts["1"][-1] == counts["2"][-1] == "0"  # n, errors
    assert float(counts["2"][5]) == 2 * float(counts["1"][5]) == 2.0  # LM calls a judgment: one per sample
    # each step judged only its new pairs; the vote's first sample is the one-sample answer (the LM's own request,
    # from the cache): every pair is asked once, and once more for the second sample
    assert asked == 4 + 4


@pytest.mark.slow
def test_configurations_table_compiles_and_judges_the_same_pairs(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERA_REFERENCE", "none")
    with AnySignatureServer() as server:
        run_bench("local_llm", "--limit", "3", "--budgets", "smoke", "--out", tmp_path / "local_llm.md",
                  *served(server, tmp_path), cwd=tmp_path)
    table = rows((tmp_path / "local_llm.md").read_text())
    assert set(table) == {"configuration", "zero-shot (uncompiled)", "hiera (uncompiled)", "hiera compiled (smoke)"}
    assert all(r[0] == "3" and r[9] == "0" for name, r in table.items() if name != "configuration")  # n, errors
    assert "optimizer bootstrap" in table["hiera compiled (smoke)"][10]
    assert (tmp_path / "artifacts" / "bench" / "hiera-smoke.json").is_file()
