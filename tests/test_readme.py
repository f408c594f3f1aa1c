"""The README reads in two minutes: no table cell over 300 characters (a row is one sentence with its headline number
and a link; the detail lives in docs/measured.md), and the quick start stays on its first screen."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_CELL = 300


def table_cells(text: str) -> list[tuple[int, str]]:
    """(line number, cell text) of every cell of every markdown table row."""
    return [(n, cell.strip()) for n, line in enumerate(text.splitlines(), 1) if line.lstrip().startswith("|")
            for cell in line.strip().strip("|").split("|")]


def test_no_readme_table_cell_is_over_300_characters():
    long = [f"README.md:{n}: {len(cell)} characters: {cell[:60]}..."
            for n, cell in table_cells((ROOT / "README.md").read_text(encoding="utf-8")) if len(cell) > MAX_CELL]
    assert long == []


def test_the_rule_sees_a_long_cell():
    text = "| a | b |\n|---|---|\n| short | " + "x" * 301 + " |\n"
    assert [len(c) for _, c in table_cells(text) if len(c) > MAX_CELL] == [301]


def test_the_quick_start_is_on_the_first_screen():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines.index("## Quick start") < 20
    assert any(line.startswith("python3 -m venv .venv") and "optimize.compile --dataset msrd --method ce-blend "
               "--budget quickstart" in line for line in lines[:25])
