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


# Raises of a builtin exception the rule lets stand: a programming error no input reaches, keyed by the function that
# raises it (not its file, so a module may move) and the builtin, with the reason.
PROGRAMMING_ERRORS = {
    ("read_catalog", "TypeError"): "caught in the same loop and re-raised as a DataError naming file and line",
    ("resolve_embedder", "TypeError"): "an argument of the wrong Python type, not a value a user gives",
    ("with_retries", "AssertionError"): "after a loop that returns or raises: unreachable",
    ("awith_retries", "AssertionError"): "after a loop that returns or raises: unreachable",
    ("ensure", "AssertionError"): "after a call that raises the user's error itself: unreachable",
    ("draw_active", "ValueError"): "weights and queries come from the same list in the caller",
    ("probabilities", "ValueError"): "the caller stops drawing before no query is left",
}
PROTOCOL = {"__getitem__", "__iter__", "__len__", "__getattr__"}  # the data model's own errors (KeyError, ...)
CONTROL = {"StopIteration", "StopAsyncIteration", "SystemExit", "KeyboardInterrupt", "GeneratorExit"}


def _builtin_raises() -> list[tuple[str, int, str, str]]:
    """(file, line, builtin, enclosing function) of every `raise BUILTIN(...)` of the library."""
    found = []

    def walk(node, path, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                walk(child, path, [*scope, child.name])
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                target = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                name = getattr(target, "id", None)
                value = getattr(builtins, name or "", None)
                if isinstance(value, type) and issubclass(value, BaseException) and name not in CONTROL:
                    found.append((str(path.relative_to(ROOT)), child.lineno, name, scope[-1] if scope else ""))
            walk(child, path, scope)

    for package in LIBRARY:
        for path in sorted((ROOT / package).rglob("*.py")):
            walk(ast.parse(path.read_text(), filename=str(path)), path, [])
    return found


def _unexplained(raises) -> list[str]:
    return [f"{where}:{line}: raise {name} in {function}()" for where, line, name, function in raises
            if name != "NotImplementedError"  # an abstract method
            and function not in PROTOCOL and (function, name) not in PROGRAMMING_ERRORS]


def test_every_raise_a_user_can_reach_is_a_hiera_error():
    """A user's bad input ends in `error: ...`, never a traceback: the library raises a HieraError subclass (which
    keeps the builtin callers catch), and a bare builtin only where no input reaches (PROGRAMMING_ERRORS)."""
    assert _unexplained(_builtin_raises()) == []


def test_the_raise_rule_sees_a_bare_builtin():
    raises = [("a.py", 1, "ValueError", "parse"), ("a.py", 2, "KeyError", "__getitem__"),
              ("a.py", 3, "NotImplementedError", "prepare"), ("a.py", 4, "TypeError", "resolve_embedder"),
              ("a.py", 5, "RuntimeError", "resolve_embedder")]
    assert _unexplained(raises) == ["a.py:1: raise ValueError in parse()",
                                    "a.py:5: raise RuntimeError in resolve_embedder()"]
