"""Every public definition has a docstring: module-level functions and classes, and the public methods of public
classes, in hiera_dspy/, signatures/, eval/ and optimize/ (read with `ast`, nothing imported)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hiera_dspy", "signatures", "eval", "optimize")

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def undocumented(source: str) -> list[str]:
    """`line name` of each public definition in `source` without a docstring (methods as Class.method)."""
    missing = []

    def walk(nodes, prefix=""):
        for node in nodes:
            if isinstance(node, DEFINITIONS) and not node.name.startswith("_"):
                if not ast.get_docstring(node):
                    missing.append(f"{node.lineno} {prefix}{node.name}")
                if isinstance(node, ast.ClassDef):
                    walk(node.body, f"{prefix}{node.name}.")

    walk(ast.parse(source).body)
    return missing


def _files() -> list[str]:
    return sorted(p.relative_to(ROOT).as_posix() for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_every_public_definition_has_a_docstring():
    missing = [f"{path}:{entry}" for path in _files()
               for entry in undocumented((ROOT / path).read_text(encoding="utf-8"))]
    assert not missing, f"{len(missing)} public definitions without a docstring:\n" + "\n".join(missing)


def test_the_walk_finds_functions_classes_and_public_methods_only():
    source = '''
def documented():
    """Yes."""

def bare(): pass

async def abare(): pass

def _private(): pass

class Public:
    def method(self): pass

    @property
    def prop(self):
        """Yes."""

    def _helper(self): pass

    def __init__(self): pass

class _Private:
    def method(self): pass
'''
    assert undocumented(source) == ["5 bare", "7 abare", "11 Public", "12 Public.method"]
