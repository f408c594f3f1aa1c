"""Every environment knob is read in hiera_dspy/settings.py, and every consumer of the cache root agrees with it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hiera_dspy import settings
from hiera_dspy.lm import model_store
from hiera_dspy.knowledge import cache as knowledge_cache

ROOT = Path(__file__).resolve().parents[2]


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
    knob = re.compile(r"os\.environ(\.get|\.setdefault|\[)\(?\s*[\"'](HIERA_|XDG_|LITELLM_|DSPY_CACHEDIR|HF_ENDPOINT)")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "hiera_dspy").rglob("*.py")
                 if p.name != "settings.py" and knob.search(p.read_text())]
    assert offenders == []
