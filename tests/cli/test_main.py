"""The `hiera-dspy` console script (hiera_dspy/cli/main.py): every CLI module is a subcommand, --help lists them
with one line each, --version, and a subcommand runs its module as `python -m` does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hiera_dspy.cli import main as console

ROOT = Path(__file__).resolve().parents[2]


def cli_modules() -> set[str]:
    """Every module of eval/ and optimize/ with a __main__ block, found on disk (independently of the dispatcher)."""
    return {f"{p.parent.name}.{p.stem}" for package in ("eval", "optimize") for p in (ROOT / package).glob("*.py")
            if '__name__ == "__main__"' in p.read_text(encoding="utf-8")}


def test_every_cli_module_is_a_subcommand_listed_by_help(capsys):
    table = console.commands()
    assert {module for module, _ in table.values()} == cli_modules()
    assert console.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, (module, doc) in table.items():
        line = next(line for line in out.splitlines() if line.startswith(f"  {name} "))
        assert doc and doc in line and line.endswith(f"python -m {module}")
    for name in ("compile", "run", "ablate", "label", "holes", "review", "trace", "errors", "methods", "search"):
        assert name in table


def test_version_and_unknown_command(capsys):
    assert console.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"hiera-dspy {console.version()}"
    assert console.main(["nope"]) == 2
    assert "unknown command 'nope'" in capsys.readouterr().err


def test_pyproject_declares_the_console_script():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"]["hiera-dspy"] == "hiera_dspy.cli.main:main"


def test_subcommand_runs_its_module_like_python_m(capsys):
    argv = list(sys.argv)
    assert console.main(["methods"]) == 0
    assert "hiera" in capsys.readouterr().out and sys.argv == argv
    with pytest.raises(SystemExit) as stop:  # argparse's own --help, through the subcommand
        console.main(["help", "trace"])
    assert stop.value.code == 0 and "--run" in capsys.readouterr().out


def test_subcommand_exit_status_is_the_tools(capsys):
    with pytest.raises(SystemExit) as stop:
        console.main(["run", "--dataset", "msrd", "--method", "no-such-method", "--limit", "1"])
    assert stop.value.code not in (0, None)


def test_a_library_error_exits_with_its_status_and_one_line(capsys, tmp_path, monkeypatch):
    """The library raises (a RequestError: status 1); the CLI prints `error: ...` and exits, as it always did."""
    monkeypatch.setenv("HIERA_RUNS_DIR", str(tmp_path))
    with pytest.raises(SystemExit) as stop:
        console.main(["review", "--run", "nope"])
    assert stop.value.code == 1
    assert capsys.readouterr().err.startswith("error: no run 'nope' in ")
