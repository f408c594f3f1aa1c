"""`hiera-dspy serve` without the serve extra: one line saying which extra to install, exit status 1, no traceback."""

from __future__ import annotations

import sys

import pytest

from hiera_dspy.cli.main import main


def test_serve_without_the_extra_says_which_to_install(monkeypatch, capsys, tmp_path):
    for name in ("starlette", "uvicorn", "hiera_dspy.serve.app", "hiera_dspy.serve.batcher"):
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: an import fails, find_spec finds none
    monkeypatch.delitem(sys.modules, "eval.serve", raising=False)
    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--judge", str(tmp_path / "judge.json")])
    err = capsys.readouterr().err
    assert stopped.value.code == 1
    assert "pip install 'hiera-dspy[serve]'" in err and "Traceback" not in err
