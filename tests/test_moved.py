"""A moved module keeps its earlier import path for one release (`hiera_dspy/moved.py`): the earlier name gives the
module itself, a name under a moved package follows it, a light module stays light, and an earlier command name
still runs with `python -m`."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from hiera_dspy.moved import MOVED, current_name

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_earlier_name_imports_the_module_itself(old):
    assert importlib.import_module(old) is importlib.import_module(MOVED[old])


def test_a_name_under_a_moved_package_follows_it():
    assert current_name("hiera_dspy.labelling.queue") == "hiera_dspy.review.queue"
    assert current_name("hiera_dspy.labelling.plan") == "hiera_dspy.jobs.planning"  # the longest moved prefix wins
    assert current_name("hiera_dspy.review.queue") is None
    from hiera_dspy.labelling import queue  # the earlier form of a from-import

    assert queue is importlib.import_module("hiera_dspy.review.queue")


def test_an_earlier_light_name_loads_no_dspy():
    code = "import sys, hiera_dspy.conclude.plan; print('dspy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_an_earlier_command_name_runs():
    out = subprocess.run([sys.executable, "-m", "eval.errors", "--help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "--run" in out.stdout, out.stderr
