"""The foundation loads no DSPy: every module of data/, metrics/, conclude/ and store/, and the root modules labels,
records, registry, errors and settings, imported each in a fresh process, leaves `dspy` and `litellm` out of
`sys.modules` (numpy, scipy, ppi_py and ir_measures are theirs to load). The check is `.ci/dspy_at_import.py`, which
also counts the library's modules that do load DSPy at import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIGHT = ("hiera_dspy.data", "hiera_dspy.metrics", "hiera_dspy.conclude", "hiera_dspy.store", "hiera_dspy.labels",
         "hiera_dspy.records", "hiera_dspy.registry", "hiera_dspy.errors", "hiera_dspy.settings")
CHECK = ROOT / ".ci" / "dspy_at_import.py"


def test_the_light_layers_import_without_dspy_or_litellm():
    out = subprocess.run([sys.executable, str(CHECK), *LIGHT], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("0 of "), out.stdout


def test_the_check_sees_a_module_that_loads_dspy():
    """The check's own check: a module that loads DSPy (an accounted step under an LM) is named and fails it."""
    out = subprocess.run([sys.executable, str(CHECK), "hiera_dspy.lm.steps"], cwd=ROOT, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 1 and out.stdout.startswith("hiera_dspy.lm.steps: dspy"), out.stdout + out.stderr


def test_at_most_fifty_of_the_librarys_modules_load_dspy_at_import():
    """Only what builds, runs or serves an LM program loads DSPy (read from the imports as written: a module-level
    import, or one under a module-level if/try, counts; one inside a function or under TYPE_CHECKING does not)."""
    out = subprocess.run([sys.executable, str(CHECK), "--list"], cwd=ROOT, capture_output=True, text=True, timeout=240)
    heavy, _, total = out.stdout.strip().splitlines()[-1].partition(" of ")
    assert int(heavy) <= 50, out.stdout
