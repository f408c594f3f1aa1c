"""`hiera-dspy`: one command for every tool; `hiera-dspy run ARGS` is `python -m eval.run ARGS`.

The tools stay modules of the CLI packages (eval/, optimize/), and their `python -m` forms stay. This dispatcher names
them by string and runs them with runpy at call time, so the library never imports a CLI package
(tests/test_layers.py). `COMMANDS` gives the main tools their order and one-line descriptions; any other eval/ or
optimize/ module with a `__main__` block is a subcommand too (named after its file, described by its docstring), so a
new tool needs no edit here.

Example:
    $ hiera-dspy --help
    $ hiera-dspy run --dataset msrd --split dev --method embed-lr
    $ hiera-dspy methods --config hiera
"""

from __future__ import annotations

import ast
import importlib.util
import runpy
import sys
from pathlib import Path

from hiera_dspy.registry import Entry, Registry

CLI_PACKAGES = ("optimize", "eval")

COMMANDS: dict[str, tuple[str, str]] = {
    "compile": ("optimize.compile", "compile a judge on labelled pairs: dev scores before/after, one artifact"),
    "run": ("eval.run", "judge a dataset split with a method or a compiled judge: metrics, predictions"),
    "ablate": ("eval.ablate", "the paper's comparison: every method on the same pairs, one report"),
    "label": ("eval.label", "label pairs that have no labels: qrels, each label with its confidence"),
    "holes": ("eval.holes", "fill the holes of a retrieval benchmark (unjudged top-k documents)"),
    "plan": ("eval.plan", "before labelling: how many queries a person must label, per system and per pair"),
    "holes-demo": ("eval.holes_demo", "the hole-filling demo on the bundled MSRD sample, offline"),
    "review": ("eval.review", "the review page: a person decides what the machine could not"),
    "escalations": ("eval.escalations", "the review queue as text; decisions back in from a file"),
    "errors": ("eval.mistakes", "error analysis: disagreements with gold and the path of each judgment"),
    "trace": ("eval.trace", "one judgment's whole path: every agent step, its outputs and its cost"),
    "methods": ("eval.methods", "the registered methods; one method's config keys (--config NAME)"),
    "export": ("eval.export", "judgments as a list for a team's tool: qrels, Quepid, OpenSearch SRW, LTR"),
    "serve": ("eval.serve", "a compiled judge as an HTTP service: POST /judge, GET /health, GET /metrics"),
    "search": ("optimize.search", "search HIERA's graph configuration: dev kappa against tokens"),
}


def commands() -> dict[str, tuple[str, str]]:
    """name -> (module, one-line description): COMMANDS, then every other CLI module of eval/ and optimize/."""
    table = dict(COMMANDS)
    known = {module for module, _ in table.values()}
    for module, path in _cli_modules():
        if module not in known:
            name = module.rpartition(".")[2].replace("_", "-")
            table.setdefault(name, (module, _first_sentence(path)))
    return table


# the commands as a registry (hiera_dspy.registry): COMMANDS and every other CLI module; the loader is the module's name
COMMAND_REGISTRY = Registry("command", lambda: {name: Entry(name, doc, loader=module)
                                                for name, (module, doc) in commands().items()},
                            hint=" (hiera-dspy --help)")


def _cli_modules() -> list[tuple[str, Path]]:
    """(module, file) of every module of the CLI packages with a `__main__` block (read as text, never imported)."""
    found = []
    for package in CLI_PACKAGES:
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for path in sorted(Path(folder).glob("*.py")):
                if not path.stem.startswith("_") and '__name__ == "__main__"' in path.read_text(encoding="utf-8"):
                    found.append((f"{package}.{path.stem}", path))
    return found


def _first_sentence(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    sentence = text.split(". ")[0].rstrip(".")
    return sentence[:1].lower() + sentence[1:] if sentence else ""


def version() -> str:
    """The installed distribution's version (the package's own when it is run from a checkout)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("hiera-dspy")
    except PackageNotFoundError:
        from hiera_dspy import __version__

        return __version__


def usage(table: dict[str, tuple[str, str]]) -> str:
    """The `hiera-dspy --help` text: every command with its one-line description and its `python -m` form."""
    width, doc_width = max(len(name) for name in table), max(len(doc) for _, doc in table.values())
    lines = ["usage: hiera-dspy COMMAND [OPTIONS]    (hiera-dspy COMMAND --help: its options)", "",
             "Relevance judgments by a hierarchy of LLM agents (HIERA, arXiv 2608.00785) as a DSPy program.", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {doc:<{doc_width}}  python -m {module}" for name, (module, doc) in table.items()]
    lines += ["", "options:", "  -h, --help     this list", "  -V, --version  the installed version"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run `hiera-dspy COMMAND ARGS...`: the command's module as `python -m` runs it (its exit status is the
    command's); `--help`, `help [COMMAND]` and `--version` answer here."""
    argv = list(sys.argv[1:] if argv is None else argv)
    table = commands()
    if argv[:1] == ["help"] and len(argv) > 1:
        argv = [argv[1], "--help"]
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(table))
        return 0
    if argv[0] in ("-V", "--version"):
        print(f"hiera-dspy {version()}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMAND_REGISTRY:
        print(f"error: {COMMAND_REGISTRY.unknown(name)}", file=sys.stderr)
        return 2
    module = COMMAND_REGISTRY[name].loader
    saved = sys.argv
    sys.argv = [f"hiera-dspy {name}", *rest]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        sys.argv = saved
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
