"""Every command block of README.md and docs/ marked runnable (a fenced block whose info string is `bash runnable`) runs
here, so the docs never drift from the code: each command in a fresh folder holding the small input files the docs name
(tests/docs_fixtures/), with fake LMs (no model, no network). Only `python -m MODULE ...` and `hiera-dspy ...` lines may
appear in a runnable block; `#` starts a comment; a trailing backslash continues a line. A `python runnable` block
(docs/api.md) runs as a script, the same way, each in a fresh folder."""

from __future__ import annotations

import re
import runpy
import shlex
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "docs_fixtures"
RUNNABLE = re.compile(r"^```bash runnable[ \t]*\n(.*?)^```", re.M | re.S)
PYTHON = re.compile(r"^```python runnable[ \t]*\n(.*?)^```", re.M | re.S)


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(kind: re.Pattern = RUNNABLE) -> list[tuple[str, str]]:
    """(page:line, text) of every runnable block of a kind (bash, or python)."""
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for match in kind.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{page.relative_to(ROOT)}:{line}", match.group(1)))
    return found


def commands(block: str) -> list[list[str]]:
    """The block's commands as argv lists (continuation lines joined, comments and blank lines dropped)."""
    joined = re.sub(r"\\\n", " ", block)
    return [argv for line in joined.splitlines() if (argv := shlex.split(line, comments=True))]


def run(argv: list[str]) -> None:
    """One command of a block, in this process: `python -m MODULE` as runpy runs it, `hiera-dspy` by its main."""
    from hiera_dspy.cli import main as console

    if argv[:2] in (["python", "-m"], ["python3", "-m"]):
        saved = sys.argv
        sys.argv = [argv[2], *argv[3:]]
        try:
            runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        finally:
            sys.argv = saved
    elif argv[0] == "hiera-dspy":
        code = console.main(argv[1:])
        if code:
            raise SystemExit(code)
    else:
        pytest.fail(f"a runnable block holds only `python -m ...` and `hiera-dspy ...` commands, not {argv[0]!r}")


def test_the_docs_have_runnable_blocks_of_each_kind():
    found = blocks()
    assert len(found) >= 8
    assert any(argv[0] == "hiera-dspy" for _, block in found for argv in commands(block))
    assert any(argv[:2] == ["python", "-m"] for _, block in found for argv in commands(block))


@pytest.mark.parametrize("where,block", blocks(), ids=[where for where, _ in blocks()])
def test_runnable_block(where, block, tmp_path, monkeypatch, patch_make_lm):
    from hiera_dspy.cli import options

    shutil.copytree(FIXTURES, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HIERA_RUNS_DIR")  # runs/ in the block's folder, as the docs say
    monkeypatch.setattr(options, "redact_output", lambda: None)  # keep pytest's capture streams as they are
    patch_make_lm({"label": "Relevant"})
    for argv in commands(block):
        try:
            run(argv)
        except SystemExit as stop:
            if stop.code not in (0, None):
                pytest.fail(f"{where}: `{shlex.join(argv)}` exited with {stop.code}")


@pytest.mark.parametrize("where,block", blocks(PYTHON), ids=[where for where, _ in blocks(PYTHON)])
def test_python_block(where, block, tmp_path, monkeypatch, patch_make_lm):
    shutil.copytree(FIXTURES, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HIERA_RUNS_DIR")  # runs/ in the block's folder, as the docs say
    patch_make_lm({"label": "Relevant"})
    exec(compile(block, where, "exec"), {"__name__": "__main__"})


def test_the_api_page_has_python_blocks():
    assert len([w for w, _ in blocks(PYTHON) if w.startswith("docs/api.md")]) >= 4


LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_relative_links_and_anchors_resolve():
    broken = []
    anchors: dict[Path, set[str]] = {}  # each page's heading slugs, read once
    for page in pages():
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and file.suffix == ".md":
                if file not in anchors:
                    headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.M)
                    anchors[file] = {slug(h) for h in headings}
                if anchor not in anchors[file]:
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


PRODUCT_TEXT = ("README.md", "docs", "bench", "hiera_dspy", "eval", "optimize", "signatures")  # bench/results too
TEXT_SUFFIXES = {".py", ".md", ".html", ".txt", ".json"}
HISTORY = re.compile(r"\bsessions? \d+|\bsession-\d+|\b(this|last|next|previous|earlier) session\b", re.IGNORECASE)


def _product_files():
    for name in PRODUCT_TEXT:
        path = ROOT / name
        yield from [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in TEXT_SUFFIXES)


def test_product_text_speaks_of_dates_and_commits_not_of_work_sessions():
    """A reader cannot know what "session 6" was: the product says the date, the commit or the CPU."""
    bad = [f"{p.relative_to(ROOT)}:{n}" for p in _product_files()
           for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if HISTORY.search(line)]
    assert bad == []
    assert HISTORY.search("as measured in session 7") and not HISTORY.search("a review session of 20 pairs")


def test_every_docs_page_reads_as_a_reference_of_at_most_500_lines():
    """A page says how to use and read the product today; dated records live in bench/results/."""
    long = {p.name: n for p in sorted((ROOT / "docs").glob("*.md")) if (n := len(p.read_text().splitlines())) > 500}
    assert not long, long
