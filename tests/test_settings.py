"""Every environment knob is read in hiera_dspy/settings.py, and every consumer of the cache root agrees with it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hiera_dspy import settings
from hiera_dspy.knowledge import cache as knowledge_cache
from hiera_dspy.local import model_store

ROOT = Path(__file__).resolve().parents[1]


def test_cache_root_honours_hiera_cache_dir_then_xdg_everywhere(tmp_path, monkeypatch):
    monkeypatch.delenv("HIERA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    expected = tmp_path / "xdg" / "hiera-dspy"
    assert settings.cache_dir() == model_store.cache_dir() == knowledge_cache.cache_root() == expected
    monkeypatch.setenv("HIERA_CACHE_DIR", str(tmp_path / "mine"))
    assert settings.cache_dir() == model_store.cache_dir() == knowledge_cache.cache_root() == tmp_path / "mine"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HIERA_CACHE_DIR")
    assert knowledge_cache.cache_root() == Path.home() / ".cache" / "hiera-dspy"


def test_dspy_cache_follows_the_cache_root_and_litellm_stays_offline(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in {"HIERA_CACHE_DIR", "DSPY_CACHEDIR", "LITELLM_LOCAL_MODEL_COST_MAP"}}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    out = subprocess.run([sys.executable, "-c", "import os, hiera_dspy; print(os.environ['DSPY_CACHEDIR']); "
                          "print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])"],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(tmp_path / "xdg" / "hiera-dspy" / "dspy"), "True"]


def test_knobs_keep_their_names_and_defaults(monkeypatch):
    for name in ("HIERA_RUNS_DIR", "HIERA_LM", "HIERA_LM_NUM_RETRIES", "HIERA_LM_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    assert (settings.runs_dir(), settings.default_lm(), settings.lm_num_retries(), settings.lm_timeout()) == (
        Path("runs"), None, 3, 300.0)
    monkeypatch.setenv("HIERA_LM_NUM_RETRIES", "0")
    monkeypatch.setenv("HIERA_LM_TIMEOUT", "12.5")
    assert (settings.lm_num_retries(), settings.lm_timeout()) == (0, 12.5)
    monkeypatch.setenv("HIERA_LM_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="HIERA_LM_TIMEOUT='soon'"):
        settings.lm_timeout()


def test_no_module_but_settings_reads_a_knob_or_sets_the_process_environment():
    """A knob is named in settings.py only: no module reads one through os.environ or a settings.env_* helper, and
    the environment other libraries read (litellm's offline cost map) is spelled out nowhere else, CLIs and benches
    included (benches may set a knob for the runs they drive)."""
    names = r"(HIERA_|XDG_|LITELLM_|DSPY_CACHEDIR|HF_ENDPOINT|HF_HUB_OFFLINE)"
    knob = re.compile(r"os\.environ(\.get|\.setdefault|\[)\(?\s*[\"']" + names
                      + r"|env_(text|flag|int|float|choice)\(\s*[\"']" + names + r"|[\"']LITELLM_LOCAL_MODEL_COST_MAP[\"']")
    files = [p for folder in ("hiera_dspy", "eval", "optimize") for p in (ROOT / folder).rglob("*.py")]
    offenders = [str(p.relative_to(ROOT)) for p in files if p.name != "settings.py" and knob.search(p.read_text())]
    # benches set knobs for the runs they drive, as a user would; they spell out no library's environment
    offenders += [str(p.relative_to(ROOT)) for p in (ROOT / "bench").rglob("*.py")
                  if "LITELLM_LOCAL_MODEL_COST_MAP" in p.read_text()]
    assert offenders == []


def test_named_knobs_read_their_variables(monkeypatch):
    from hiera_dspy.lm.retry import RetryPolicy

    for name in ("HIERA_LOCAL_CTX", "HIERA_LOCAL_MAX_CHARS", "HF_ENDPOINT", "HF_HUB_OFFLINE", "HIERA_OFFLINE",
                 "HIERA_REFERENCE", "HIERA_REFERENCE_EMBEDDER", *settings.RETRY_KNOBS.values()):
        monkeypatch.delenv(name, raising=False)
    assert (settings.local_ctx(4096), settings.local_max_chars(150), settings.hub_endpoint()) == (
        4096, 150, "https://huggingface.co")
    assert (settings.hub_offline(), settings.reference_enabled(), settings.reference_embedder()) == (
        False, True, "auto")
    assert RetryPolicy.from_env() == RetryPolicy()
    monkeypatch.setenv("HIERA_LOCAL_CTX", "0")  # 0: the default
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HIERA_REFERENCE", "off")
    monkeypatch.setenv("HIERA_RETRY_ATTEMPTS", "5")
    monkeypatch.setenv("HIERA_RETRY_BASE_DELAY", "0.5")
    assert (settings.local_ctx(4096), settings.hub_offline(), settings.reference_enabled()) == (4096, True, False)
    assert RetryPolicy.from_env() == RetryPolicy(attempts=5, base_delay=0.5)


def test_worker_processes_get_the_process_environment(monkeypatch):
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    assert settings.process_env()["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert settings.process_env()["DSPY_CACHEDIR"] == os.environ["DSPY_CACHEDIR"]
