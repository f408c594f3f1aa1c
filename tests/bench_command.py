"""Run a benchmark the way a person does, `python -m bench.NAME ARGS` from the repository root, in a child process:
a test checks a benchmark's command and its files, never imports the benchmark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_module(module: str, *args, cwd: Path | str = ROOT, timeout: float = 280) -> subprocess.CompletedProcess:
    """`python -m MODULE ARGS` with this process's environment (the test's caches and runs folders; DSPy's disk cache
    under the test's cache folder); fails the test with the child's stderr when it exits non-zero."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if "HIERA_CACHE_DIR" in env:
        env["DSPY_CACHEDIR"] = str(Path(env["HIERA_CACHE_DIR"]) / "dspy")
    done = subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def run_bench(name: str, *args, cwd: Path | str = ROOT, timeout: float = 280) -> subprocess.CompletedProcess:
    """`python -m bench.NAME ARGS` (see `run_module`)."""
    return run_module(f"bench.{name}", *args, cwd=cwd, timeout=timeout)
