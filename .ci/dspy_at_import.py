"""Which of the library's modules load DSPy (or LiteLLM) when imported.

    python .ci/dspy_at_import.py                    # count over hiera_dspy/ from the imports as written (a second)
    python .ci/dspy_at_import.py --list             # ... and name every module that loads DSPy
    python .ci/dspy_at_import.py --fresh            # the same count, each module imported in a fresh process (minutes)
    python .ci/dspy_at_import.py hiera_dspy.data    # these modules or packages (and all under them), each imported in
                                                    # a fresh process; exit 1 if one loads dspy or litellm

The count follows what runs at import: module-level imports (under `if`/`try` too, but for `if TYPE_CHECKING:`)
and every parent package's `__init__`. A fresh import is a child forked from a parent that has imported nothing of the project, its `sys.modules`
read after the import. The parent loads the statistics libraries first (numpy, scipy.stats, ppi_py, ir_measures:
none loads DSPy), so each child pays only for the project's own modules.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("dspy", "litellm")


def modules(under: list[str] | None = None) -> dict[str, Path]:
    """Every module of hiera_dspy, or those named (a package names itself and every module under it)."""
    found = {}
    for path in sorted((ROOT / "hiera_dspy").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        if not under or any(name == u or name.startswith(u + ".") for u in under):
            found[name] = path
    return found


def _imported_at_load(name: str, path: Path, known: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(modules of the project, top-level third-party packages) that `name` imports when it is loaded."""
    stack, nodes = list(ast.parse(path.read_text()).body), []
    while stack:
        node = stack.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            stack.extend(node.orelse)  # what a type checker alone reads
        elif isinstance(node, (ast.If, ast.Try)):
            stack.extend(ast.iter_child_nodes(node))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    ours, theirs = set(), set()
    for node in nodes:
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for target in targets:
            theirs.add(target.split(".")[0])
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                ours.add(target)
    return ours, theirs


def heavy_by_reading() -> dict[str, list[str]]:
    """Every module whose import reaches a module that imports dspy or litellm, from the imports as written."""
    known = modules()
    read = {name: _imported_at_load(name, path, known) for name, path in known.items()}
    found = {}
    for name in known:
        seen, stack = set(), [name]
        while stack:
            module = stack.pop()
            if module in seen:
                continue
            seen.add(module)
            parts = module.split(".")
            stack.extend(p for i in range(1, len(parts)) if (p := ".".join(parts[:i])) in known)
            stack.extend(read[module][0])
        if heavy := sorted({h for m in seen for h in HEAVY if h in read[m][1]}):
            found[name] = heavy
    return found


def heavy_after_import(name: str) -> list[str]:
    """The heavy packages `sys.modules` holds after importing `name` in a forked child (["error: ..."] if it fails)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: import, report, leave without running the parent's cleanup
        os.close(read)
        try:
            __import__(name)
            answer = " ".join(h for h in HEAVY if h in sys.modules)
        except BaseException as e:  # reported to the parent
            answer = f"error: {type(e).__name__}: {e}"
        os.write(write, answer.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    return [answer] if answer.startswith("error:") else answer.split()


def main(argv: list[str]) -> int:
    named = [a for a in argv if not a.startswith("--")]
    sys.path.insert(0, str(ROOT))
    names = modules(named)
    if named or "--fresh" in argv:
        for library in ("numpy", "scipy.stats", "ppi_py", "ir_measures"):  # shared by every child (see above)
            __import__(library)
        heavy = {name: found for name in names if (found := heavy_after_import(name))}
    else:
        heavy = heavy_by_reading()
    if "--list" in argv or named:
        for name, found in heavy.items():
            print(f"{name}: {' '.join(found)}")
    print(f"{len(heavy)} of {len(names)} modules load dspy or litellm at import")
    return 1 if named and heavy else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
