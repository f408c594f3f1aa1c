"""One error family: every exception class the library defines derives from `hiera_dspy.errors.HieraError` (and so
carries its exit status), found by reading every module of the library with `ast`; the commands turn one into
`error: ...` and that status in one place (`hiera_dspy.cli.options.cli_main`). A control signal that derives from
`BaseException` alone (the batch engine's `Pending`: nothing may swallow it) is not an error and stays out."""

from __future__ import annotations

import ast
import builtins
import subprocess
import sys
from pathlib import Path

import pytest

from hiera_dspy.errors import HieraError, RequestError, UnknownName

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("hiera_dspy", "signatures")


def _classes() -> dict[str, tuple[str, list[str]]]:
    """name -> (where, base names) of every class the library defines."""
    found = {}
    for package in LIBRARY:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.ClassDef):
                    bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
                    found[f"{path.relative_to(ROOT)}:{node.name}"] = (node.name, bases)
    return found


def _outside_the_family(classes: dict[str, tuple[str, list[str]]]) -> list[str]:
    by_name: dict[str, list[str]] = {}
    for name, bases in classes.values():
        by_name.setdefault(name, []).extend(bases)

    def builtin_exception(name: str) -> bool:
        value = getattr(builtins, name, None)
        return isinstance(value, type) and issubclass(value, Exception)  # a BaseException signal is no error

    def is_exception(name: str, seen=()) -> bool:
        return builtin_exception(name) or any(is_exception(b, (*seen, name)) for b in by_name.get(name, ())
                                              if b not in seen)

    def in_family(name: str, seen=()) -> bool:
        return name == "HieraError" or any(in_family(b, (*seen, name)) for b in by_name.get(name, ()) if b not in seen)

    return sorted(where for where, (name, bases) in classes.items()
                  if any(is_exception(b) for b in bases) and not in_family(name))


def test_every_exception_class_of_the_library_is_a_hiera_error():
    assert _outside_the_family(_classes()) == []


def test_the_rule_sees_an_exception_outside_the_family():
    classes = {"a.py:Bad": ("Bad", ["ValueError"]), "a.py:Deep": ("Deep", ["Bad"]), "a.py:Good": ("Good", ["HieraError"]),
               "a.py:Plain": ("Plain", ["object"]), "a.py:Both": ("Both", ["Good", "KeyError"]),
               "a.py:Signal": ("Signal", ["BaseException"])}
    assert _outside_the_family(classes) == ["a.py:Bad", "a.py:Deep"]


def test_each_error_carries_its_exit_status_and_keeps_the_builtin_callers_catch():
    assert (HieraError.exit_status, RequestError.exit_status, UnknownName.exit_status) == (2, 1, 2)
    with pytest.raises(KeyError):
        raise UnknownName("unknown method 'x'")
    assert str(UnknownName("unknown method 'x'")) == "unknown method 'x'"  # not KeyError's quoted repr


@pytest.mark.parametrize("module", ["hiera_dspy.metrics", "hiera_dspy.conclude"])
def test_a_light_module_loads_no_dspy(module):
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.split('.')[0] == 'dspy')[:3])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
