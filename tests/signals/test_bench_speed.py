"""`python -m bench.speed` run small (slow: ce-blend is compiled for real, MiniLM fine-tuned a few steps at 32 tokens):
every stage writes its rows (compile, each scoring path on the same dev pairs, embeddings, training steps, eval.label
with the artifact) and the page names the path the compile shipped."""

from __future__ import annotations

import json

import pytest

from tests.bench_command import run_bench

pytest.importorskip("onnxruntime")


@pytest.mark.slow
@pytest.mark.timeout(2400)  # a real compile and every measurement: minutes on 2 cores
def test_speed_runs_every_stage_small(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERA_REFERENCE", "none")
    results = tmp_path / "results"
    run_bench("speed", "--work", tmp_path / "work", "--set", "ce_pairs=64", "--set", "ce_max_len=32", "--set",
              "embedder=lexical", "--pairs", "16", "--embed-texts", "8", "--train-pairs", "64", "--train-steps", "1",
              "--label-pairs", "4", "--out-dir", results, cwd=tmp_path, timeout=2400)
    record = json.loads((results / "speed.json").read_text())
    compiled, measured = record["compile"], record["measure"]
    assert compiled["fine_tune_steps"] >= 1 and compiled["wall_s"] > 0 and "--set ce_pairs=64" in compiled["command"]
    assert measured["n_pairs"] == 16 and measured["flops_per_pair"] > 0 and measured["gemm_gflops"] > 0
    paths = {r["path"]: r for r in measured["paths"]}
    assert list(paths)[:2] == ["torch fp32", "ONNX fp32"]
    assert paths["torch fp32"]["max_dp"] == 0.0 and paths["torch fp32"]["agreement"] == 1.0  # the reference itself
    assert paths["ONNX fp32"]["max_dp"] < 1e-3  # the same weights through ONNX Runtime
    assert sum(r["shipped"] for r in paths.values()) == 1  # the path the compile chose is named once
    assert all(set(r["timing"]) == {"1", "16", "64"} for r in paths.values())
    assert [e["texts"] for e in measured["embedding"]] == [8, 8] and measured["embedding"][-1]["min_cosine"] > 0.99
    assert measured["training"] and all(r["steps"] == 1 for r in measured["training"])
    assert measured["label"]["pairs"] == 4
    page = (results / "speed.md").read_text()
    assert "| torch fp32 |" in page and "| whole compile |" in page and "eval.label with the artifact" in page
