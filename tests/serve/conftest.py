"""Fixtures of the serve tests: a compiled embed-lr judge (lexical features, fitted on the bundled MSRD train split)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    from hiera_dspy.artifacts.judge_file import save_judge
    from hiera_dspy.data import load_dataset
    from hiera_dspy.lm.roles import RoleLMs
    from hiera_dspy.methods import BuildContext, build

    dataset = load_dataset("msrd")
    program = build("embed-lr", BuildContext(dataset.scheme, train=dataset.split("train")), embedder="lexical")
    program.prepare()
    return save_judge(program, tmp_path_factory.mktemp("art") / "embed-lr.json", scheme=dataset.scheme,
                      lms=RoleLMs(), knowledge="none", dataset="msrd")
