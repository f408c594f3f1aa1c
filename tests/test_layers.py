"""The package layers hold: no import cycle (the benchmarks included) between modules or between rooms (packages),
nothing in the library imports a CLI package or a benchmark, no test imports a benchmark, no benchmark edits
`sys.path` (each runs as `python -m bench.NAME`), no CLI imports another, below `hiera_dspy/cli/` nothing parses flags
or exits, the library's root holds only the judgment's own concepts, every library folder is a package, one module opens
the run-store file, the tests mirror the tree, and no module keeps a back-compat shim (a moved module's earlier name is one entry of
`hiera_dspy/moved.py`'s table, for one release).

Imports are read with `ast` from every module of the project, module-level and function-level alike: an import inside
a function hides a cycle (or a CLI importing a CLI) from a reader as much as from the interpreter, so it counts."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hiera_dspy", "signatures", "eval", "optimize", "bench")
LIBRARY = ("hiera_dspy", "signatures")
CLI_PACKAGES = ("eval", "optimize")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _imports(name: str, path: Path, modules: dict[str, Path], top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    if top_level_only:  # statements under if/try at module level still run at import
        stack, nodes = list(tree.body), []
        while stack:
            node = stack.pop()
            nodes.append(node)
            if isinstance(node, (ast.If, ast.Try)):
                stack.extend(ast.iter_child_nodes(node))
    package = name if _is_package(name, modules) else name.rpartition(".")[0]
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph(top_level_only: bool) -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules, top_level_only) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles, state, stack = [], {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def _parents(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_import_cycles():
    graph = _graph(top_level_only=True)
    graph = {m: {t for t in ts if t not in _parents(m)} for m, ts in graph.items()}
    assert _cycles(graph) == []


def test_no_import_cycles_through_function_level_imports():
    graph = _graph(top_level_only=False)
    # a package's __init__ importing its own submodules is the package's index, not a cycle
    graph = {m: {t for t in ts if t not in _parents(m)} for m, ts in graph.items()}
    assert _cycles(graph) == []


def test_library_never_imports_a_cli_package():
    bad = [(m, t) for m, ts in _graph(top_level_only=False).items() if m.split(".")[0] in LIBRARY
           for t in ts if t.split(".")[0] in CLI_PACKAGES]
    assert bad == []


def test_no_cli_imports_another_cli():
    graph = _graph(top_level_only=False)
    clis = {m for m, p in _modules().items() if m.split(".")[0] in CLI_PACKAGES and "__main__" in p.read_text()}
    bad = [(m, t) for m in clis for t in graph[m] if t in clis]
    assert bad == []


# The judgment's own concepts and the foundation every part shares (errors, knobs, redaction); everything else lives
# in a sub-package named for what it is about.
ROOT_MODULES = {"__init__", "api", "errors", "registry", "labels", "records", "settings", "secrets", "testing", "moved"}


def test_library_root_holds_only_the_core_concepts():
    loose = {p.stem for p in (ROOT / "hiera_dspy").glob("*.py")} - ROOT_MODULES
    assert loose == set(), f"group these into a sub-package of hiera_dspy/: {sorted(loose)}"


def test_library_never_imports_a_cli_by_name():
    """A module name in a string (importlib, runpy) is an import too: the library may not reach a CLI that way."""
    pattern = re.compile(r"""(import_module|run_module)\(\s*f?["'](eval|optimize)\b|["'](eval|optimize)\.\w+:\w+["']""")
    bad = [str(p.relative_to(ROOT)) for name, p in _modules().items() if name.split(".")[0] in LIBRARY
           and name != "hiera_dspy.cli.main" and pattern.search(p.read_text())]
    assert bad == []


def test_no_back_compat_shims():
    """Nothing is re-exported under an earlier name by a module of its own: one file per definition. A module that
    moved keeps its earlier name for one release in one table (`hiera_dspy/moved.py`), whose entries name no file."""
    bad = [str(p.relative_to(ROOT)) for p in _modules().values() if "old import path" in p.read_text()]
    assert bad == []
    from hiera_dspy.moved import MOVED
    modules = _modules()
    assert [old for old in MOVED if old in modules] == []
    assert [new for new in MOVED.values() if new not in modules] == []


def _cli_only(tree: ast.AST) -> list[str]:
    """What only a command line may do, found in a module: import argparse, name a parameter `args` (a parsed
    `argparse.Namespace`), raise SystemExit or call sys.exit."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "argparse" for a in node.names):
            found.append(f"line {node.lineno}: import argparse")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "argparse":
            found.append(f"line {node.lineno}: from argparse import")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "argparse":
            found.append(f"line {node.lineno}: argparse.{node.attr}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            if any(p.arg == "args" for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)):
                found.append(f"line {node.lineno}: a parameter named args")
        elif isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "SystemExit":
                found.append(f"line {node.lineno}: raise SystemExit")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "exit" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "sys":
            found.append(f"line {node.lineno}: sys.exit()")
    return found


def test_only_the_cli_parses_flags_or_exits():
    """Below hiera_dspy/cli/ nothing reads an argparse.Namespace or exits: library functions take typed objects
    (RunSpec, EngineOptions, LMSpec, BuildContext, ...) and raise HieraError; hiera_dspy/cli/ turns it into an exit
    status."""
    bad = {str(p.relative_to(ROOT)): found for name, p in _modules().items()
           if name.split(".")[0] in LIBRARY and name.split(".")[:2] != ["hiera_dspy", "cli"]
           and (found := _cli_only(ast.parse(p.read_text(), filename=str(p))))}
    assert bad == {}


def test_the_cli_rule_sees_what_it_forbids():
    """The rule's own check: each forbidden form is found."""
    source = ("import argparse\nimport sys\n\ndef f(args): pass\n\ndef g(p: argparse.ArgumentParser):\n"
              "    raise SystemExit('error: x')\n\ndef h():\n    sys.exit(1)\n")
    found = " ".join(_cli_only(ast.parse(source)))
    for form in ("import argparse", "parameter named args", "argparse.ArgumentParser", "raise SystemExit",
                 "sys.exit()"):
        assert form in found


def test_bench_is_a_package_run_with_python_m():
    assert (ROOT / "bench" / "__init__.py").is_file()
    assert "bench.common" in _modules()


def test_library_never_imports_bench():
    bad = [(m, t) for m, ts in _graph(top_level_only=False).items() if m.split(".")[0] in LIBRARY
           for t in ts if t.split(".")[0] == "bench"]
    assert bad == []


def _names_imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found |= {node.module or ""} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def test_no_test_imports_bench():
    """A test checks the library function a benchmark calls, or runs the benchmark (`tests/bench_command.py`), never
    imports the benchmark script itself."""
    bad = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py")
                 if any(n == "bench" or n.startswith("bench.") for n in _names_imported(p)))
    assert bad == []


def test_no_bench_file_edits_sys_path():
    bad = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "bench").rglob("*.py")
                 if re.search(r"\bsys\.path\b", p.read_text()))
    assert bad == []


# --- the plan of the house: rooms (packages) and the arrows between them ----------------------------------------------

def _room(module: str) -> str | None:
    """The room a module lives in: a sub-package of hiera_dspy (`hiera_dspy.runs`), a root module of hiera_dspy
    (`hiera_dspy.records`), or a top-level package (`eval`). None for hiera_dspy's own __init__: the public facade
    re-exports what users import, and every `from hiera_dspy import settings` names it on the way."""
    parts = module.split(".")
    if parts[0] != "hiera_dspy":
        return parts[0]
    if len(parts) == 1:
        return None
    return ".".join(parts[:2])


def _rooms() -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = {}
    for module, targets in _graph(top_level_only=False).items():
        room = _room(module)
        if room is None:
            continue
        rooms.setdefault(room, set()).update(r for t in targets if (r := _room(t)) not in (None, room))
    return rooms


def test_the_rooms_import_each_other_without_a_circle():
    """Between rooms the arrows all point one way (the order docs/index.md draws): no two rooms import each other,
    however long the way round, function-level imports included."""
    assert _cycles(_rooms()) == []


# The plan of the house, ground floor first (docs/index.md, "Architecture"): a room imports only rooms on its own line
# or on the lines before it, so every arrow between rooms points down.
FLOORS = (
    ("errors", "settings", "registry", "moved", "secrets"),  # the judgment's words; redaction
    ("records", "labels"),  # Pair, Judgment, Step; label schemes
    ("local", "signatures"),  # the embedded model; the paper's prompts
    ("lm",),  # hosted-LM plumbing: roles, retry, breaker, pacing, cache, the ledger
    ("store", "untrusted"),  # the run store; item text made safe
    ("data", "knowledge", "signals"),  # datasets, look-ups, features
    ("agents", "metrics", "testing", "review"),  # the paper's agents; agreement; the test kit; a person's review:
    # queue, decisions, the human sample's table (it needs no statistics)
    ("methods", "conclude"),  # registered judges; what the labels let you conclude
    ("artifacts",),  # compiled judges
    ("runs", "engines", "benchmark"),  # what a run is; how its pairs are scheduled; a benchmark with holes
    ("jobs", "api"),  # the main jobs, one call each
    ("cli", "serve"),  # flags -> requests -> api calls; the judge over HTTP (an ASGI app over api)
    ("eval", "optimize", "bench"),  # commands and benchmarks
)


def _floor(room: str) -> int:
    name = room.removeprefix("hiera_dspy.")
    return next(i for i, line in enumerate(FLOORS) if name in line)


def test_every_room_stands_above_what_it_imports():
    rooms = _rooms()
    unplaced = sorted(r for r in rooms if not any(r.removeprefix("hiera_dspy.") in line for line in FLOORS))
    assert unplaced == [], f"place these rooms on a floor of FLOORS (and docs/index.md): {unplaced}"
    up = sorted((r, t) for r, ts in rooms.items() for t in ts if _floor(t) > _floor(r))
    assert up == [], f"arrows running back up (room -> a room on a higher floor): {up}"


def test_the_rule_for_rooms_sees_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert _room("hiera_dspy.store.run_store") == "hiera_dspy.store" and _room("bench.common") == "bench"


def test_every_library_folder_is_a_package():
    """A folder of modules without __init__.py is left out of the wheel by setuptools' package finder."""
    bare = sorted(str(d.relative_to(ROOT)) for package in LIBRARY for d in (ROOT / package).rglob("*")
                  if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py")) and not (d / "__init__.py").is_file())
    assert bare == []


# The modules that open a SQLite file: the run-store file only through hiera_dspy.store.sqlite; the two caches own
# files of their own (embeddings, knowledge lookups).
SQLITE_OPENERS = {"hiera_dspy/store/sqlite.py", "hiera_dspy/signals/embed_cache.py", "hiera_dspy/knowledge/cache.py"}


def test_one_module_opens_the_run_store_file():
    opens = {str(p.relative_to(ROOT)) for package in LIBRARY for p in (ROOT / package).rglob("*.py")
             if "sqlite3.connect(" in p.read_text()}
    assert opens == SQLITE_OPENERS


# Test folders that are not a room of their own: shared fixtures and the cross-cutting reliability checks.
TEST_FOLDERS_BESIDE_THE_TREE = {"fixtures", "docs_fixtures", "reliability"}


def test_the_tests_mirror_the_tree():
    """tests/NAME/ holds the tests of the room NAME (hiera_dspy/NAME/ or the command package NAME/); the root
    modules' tests (labels, records, settings) sit in tests/ itself."""
    rooms = {d.name for d in (ROOT / "hiera_dspy").iterdir() if (d / "__init__.py").is_file()} | set(CLI_PACKAGES)
    folders = {d.name for d in (ROOT / "tests").iterdir() if d.is_dir() and d.name != "__pycache__"}
    assert folders - rooms - TEST_FOLDERS_BESIDE_THE_TREE == set()


def test_every_command_main_is_a_few_lines():
    """A command's `main` maps flags onto a request, calls the library (hiera_dspy.api) and prints: at most 30 lines."""
    long = {}
    for package in CLI_PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            for node in ast.parse(path.read_text(), filename=str(path)).body:
                if isinstance(node, ast.FunctionDef) and node.name == "main" and node.end_lineno - node.lineno >= 30:
                    long[str(path.relative_to(ROOT))] = node.end_lineno - node.lineno + 1
    assert long == {}
