"""ce-blend fine-tunes its cross-encoder on a worker thread beside the scorer's fit: in a fresh interpreter, what the
fine-tuning imports must be resolved before the worker starts (`cross_encoder.preload`), since transformers' lazy
module does not survive two threads' first imports at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.bench_command import ROOT, run_bench

pytest.importorskip("transformers")

AFTER_PRELOAD = """
import json, sys
from hiera_dspy.labels import get_scheme
from hiera_dspy.records import Pair
from hiera_dspy.signals.cross_encoder import fine_tune, preload

scheme, base = get_scheme("msrd"), sys.argv[1]
pairs = [Pair(f"p{i}", f"film {i % 5}", f"title {i}", f"Year: 1990\\nOverview: story {i}", scheme.labels[i % 2],
              f"q{i % 5}", f"i{i}") for i in range(40)]
start = preload(scheme, base=base, seed=0)
before = set(sys.modules)
fine_tune(pairs, scheme, train_pairs=40, max_len=16, batch=8, base=base, progress=False, start=start, bucketed=True)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_after_preload_the_fine_tuning_imports_nothing_for_the_first_time(tiny_base):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", AFTER_PRELOAD, str(tiny_base)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_two_workers_imports_at_once_never_fail_after_preload(tiny_base, tmp_path):
    """50 fresh interpreters, each: preload, then sentence-transformers' and the fine-tuning's imports released at
    once on two threads (bench/import_race.py)."""
    out = tmp_path / "race.json"
    run_bench("import_race", "--runs", 50, "--only", "preload", "--base", tiny_base, "--out", out, timeout=3500)
    (result,) = json.loads(out.read_text())
    assert result["runs"] == 50 and result["failed"] == 0, result["failures"]
