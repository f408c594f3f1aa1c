"""Shared fixtures for the reliability tests: an isolated DSPy cache / run dir, the fault server, eval.run arguments."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import eval.run  # noqa: E402,F401  - imported at collection: hiera_dspy.cli.options.print_metrics binds sys.stdout at import
from tests.fault_server import FaultServer  # noqa: E402


def _crc(prompt: str) -> int:
    return zlib.crc32(prompt.encode())


# Deterministic per prompt (so an interrupted run and an uninterrupted one agree), and about half the pairs delegate,
# so hiera makes 1 LM call for some pairs and 5-6 for others (triage, plan, query/item analyses, synthesis, decision).
ANSWERS = {
    "query_interpretability": lambda p: "unclear" if _crc(p) % 2 else "clear",
    "label": lambda p: "Relevant" if _crc(p) % 3 else "Irrelevant",
}

# Short client timeout and tiny backoff for the tests (DSPy's own fixed 1, 2 s backoff applies to 500s, timeouts and
# dropped connections; 429/503 carry Retry-After: 0.05 s, which DSPy honours).
FAST_RETRY_ENV = {
    "HIERA_LM_TIMEOUT": "0.5",
    "HIERA_LM_NUM_RETRIES": "2",
    "HIERA_RETRY_ATTEMPTS": "3",
    "HIERA_RETRY_BASE_DELAY": "0.02",
    "HIERA_RETRY_MAX_DELAY": "0.2",
}


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Run dir, knowledge cache and DSPy disk cache under tmp_path; the process-wide dspy.cache is restored after."""
    import dspy

    cache = tmp_path / "dspy-cache"
    monkeypatch.setenv("HIERA_CACHE_DIR", str(tmp_path / "hiera-cache"))
    monkeypatch.setenv("DSPY_CACHEDIR", str(cache))
    monkeypatch.setenv("HIERA_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.delenv("HIERA_LM", raising=False)
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    for key, value in FAST_RETRY_ENV.items():
        monkeypatch.setenv(key, value)
    previous = dspy.cache  # DSPY_CACHEDIR is read once, at dspy's import: point the live cache at tmp explicitly
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(cache))
    yield tmp_path
    dspy.cache = previous


@pytest.fixture
def fault_server():
    """A started FaultServer (no faults; tests call set_faults) answering with ANSWERS."""
    with FaultServer(ANSWERS, retry_after=0.05, hang=1.0, seed=1234) as server:
        yield server


@pytest.fixture
def retry_hook(monkeypatch):
    """Run judge_one inside hiera_dspy.lm.retry.retrying() (idempotent: harmless once runner.judge_one does it itself)."""
    from hiera_dspy.lm import retry
    from hiera_dspy.runs import runner

    original = runner.judge_one

    def judge_one(*args, **kwargs):
        with retry.retrying():
            return original(*args, **kwargs)

    monkeypatch.setattr(runner, "judge_one", judge_one)
    return original


def run_args(url: str, tmp: Path, *, run_id: str, limit: int, threads: int, method: str = "hiera",
             store: Path | None = None, out: Path | None = None, extra: list[str] | None = None) -> list[str]:
    """eval.run's argv; these tests inspect error rows, so the exit status ignores the error rate unless `extra` sets
    --max-error-rate (the last one wins; tests/reliability/test_runs.py tests the exit status)."""
    return ["--dataset", "msrd", "--split", "dev", "--method", method, "--limit", str(limit),
            "--threads", str(threads), "--run-id", run_id, "--store", str(store or tmp / "store.sqlite"),
            "--out", str(out or tmp / "out" / run_id), "--knowledge", "none", "--lm", "openai/fake",
            "--api-base", url, "--max-error-rate", "1", *(extra or [])]


@pytest.fixture
def eval_args():
    """run_args(url, tmp, run_id=..., limit=..., threads=...) -> argv for eval.run.main / python -m eval.run."""
    return run_args
