"""A method that calls no LM builds none and records none: in a venv without llama-cpp-python (simulated), compiling
and running embed-lr works and its artifact names no LM role."""

from __future__ import annotations

import json
import sys

import pytest

from eval import run as run_cli
from optimize import compile as compile_cli


@pytest.fixture
def no_llama_cpp(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` raises ImportError
    monkeypatch.delenv("HIERA_LM", raising=False)  # the default: the embedded local model
    from hiera_dspy.local import model as local

    def refuse(*args, **kwargs):
        raise AssertionError("an LM was built for a method that calls none")

    monkeypatch.setattr(local, "make_local_lm", refuse)


def test_embed_lr_compiles_and_runs_without_the_local_backend(tmp_path, no_llama_cpp, capsys):
    out = tmp_path / "embed-lr.json"
    compile_cli.main(["--dataset", "msrd", "--method", "embed-lr", "--budget", "smoke", "--knowledge", "none",
                      "--set", "embedder=lexical", "--out", str(out)])
    doc = json.loads(out.read_text())
    assert doc["method"] == "embed-lr" and doc["lms"] == {}
    metrics = run_cli.main(["--dataset", "msrd", "--split", "dev", "--judge", str(out), "--limit", "3",
                            "--knowledge", "none", "--out", str(tmp_path / "run")])
    assert metrics["n"] == 3 and metrics["errors"] == 0
    assert json.loads((tmp_path / "run" / "config.json").read_text())["lms"] == {}
