"""One pattern for every named thing: an `Entry` (name, one-line doc, parameter schema, loader) in a `Registry` of its
kind. Each kind keeps the place its entries are declared (datasets: `hiera_dspy.data.LOADERS`; label schemes:
`hiera_dspy.labels.register`; engines: `hiera_dspy.engines.ENGINES`; sample draws: `hiera_dspy.benchmark.draws.DRAWS`;
methods: the `hiera_dspy.methods.register` decorator; retrieval measures:
`hiera_dspy.conclude.retrieval.MEASURES`; commands: `hiera_dspy.cli.main.COMMANDS` and the CLI modules),
and its registry is built from that place each time it is read, so a one-line addition there is in the registry, its
help text and its errors at once.

Example:
    >>> from hiera_dspy.engines import ENGINE_REGISTRY
    >>> ENGINE_REGISTRY["threads"].doc
    'worker threads (--threads N); the default'
    >>> ENGINE_REGISTRY["nope"]
    Traceback (most recent call last):
        ...
    hiera_dspy.errors.UnknownName: unknown engine 'nope'; engines: threads, async, batch, ray
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from hiera_dspy.errors import UnknownName


@dataclass(frozen=True)
class Entry:
    """One named thing: its `name`, a one-line `doc`, its parameters (`params`: key -> its declared type or default,
    declared with the owner) and its `loader` (the object itself, or 'module:attribute' imported on first use)."""

    name: str
    doc: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    loader: Any = None

    def load(self) -> Any:
        """The loader's object (imported now when it is named as 'module:attribute')."""
        if isinstance(self.loader, str):
            module, _, attr = self.loader.partition(":")
            loaded = importlib.import_module(module)
            return getattr(loaded, attr) if attr else loaded
        return self.loader


class Registry(Mapping[str, Entry]):
    """The entries of one kind (`kind`: 'engine', 'method', ...), built from their declaring table at every read; an
    unknown name raises `UnknownName` listing the names there are (and `hint`, e.g. what else to pass)."""

    def __init__(self, kind: str, entries: Callable[[], Mapping[str, Entry]], hint: str = "", plural: str = ""):
        self.kind, self._entries, self.hint, self.plural = kind, entries, hint, plural or f"{kind}s"

    def __getitem__(self, name: str) -> Entry:
        entries = self._entries()
        if name not in entries:
            raise UnknownName(self.unknown(name))
        return entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def unknown(self, name: str) -> str:
        """The error text for a name this registry does not hold."""
        return f"unknown {self.kind} {name!r}; {self.plural}: {', '.join(self)}{self.hint}"

    def help(self, sep: str = "; ") -> str:
        """Every entry as 'name: doc', for a command's help."""
        return sep.join(f"{e.name}: {e.doc}" if e.doc else e.name for e in self._entries().values())


def first_line(text: str | None) -> str:
    """The first line of a docstring ('' for none)."""
    return (text or "").strip().splitlines()[0].strip() if (text or "").strip() else ""


@functools.lru_cache(maxsize=None)
def module_doc(target: str) -> str:
    """The first line of the docstring of the module a 'module:attribute' names, read without importing it (once a
    process: a command's help lists the registry every time its parser is built)."""
    spec = importlib.util.find_spec(target.partition(":")[0])
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return ""
    with open(spec.origin, encoding="utf-8") as fh:
        return first_line(ast.get_docstring(ast.parse(fh.read())))


@functools.lru_cache(maxsize=None)
def module_defines(target: str, name: str) -> bool:
    """Whether the module `target` binds `name` at its top level (a function, a class or an assignment), read
    without importing it: what a table of modules learns of each without loading them all."""
    spec = importlib.util.find_spec(target.partition(":")[0])
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return False
    with open(spec.origin, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def lazy_names(module: str, where: Mapping[str, str], namespace: dict) -> tuple[Callable, Callable]:
    """A module's PEP 562 `__getattr__` and `__dir__` for the names of `where` (name -> the module it lives in): a
    name is imported from its module on first use and kept in `namespace` (the module's globals())."""

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
