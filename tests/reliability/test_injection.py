"""Hostile item text must not change the parsing or the structure of a judgment (table-driven over the attacks)."""

from __future__ import annotations

import re

import pytest

from hiera_dspy.data import load_dataset
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.runs.runner import judge_one
from hiera_dspy.untrusted.attacks import ATTACKS, inject, opposite


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("method", ["hiera", "zero-shot"])
def test_injection_keeps_prompt_structure(attack, method, fake_lms):
    dataset = load_dataset("msrd")
    pair = dataset.split("dev", 1)[0]
    prompts: list[str] = []

    def label(prompt):
        prompts.append(prompt)
        return "Irrelevant"

    lms = fake_lms({"label": label, "query_interpretability": "unclear"})
    program = build(method, BuildContext(dataset.scheme, lms))
    hostile = inject(pair, attack, opposite("Irrelevant", dataset.scheme.labels))
    clean_row, hostile_row = judge_one(program, pair), judge_one(program, hostile)
    assert hostile_row["error"] is None and hostile_row["label"] == clean_row["label"]
    assert [s["name"] for s in hostile_row["steps"]] == [s["name"] for s in clean_row["steps"]]
    markers = [re.findall(r"\[\[ ## (\w+) ## \]\]", p) for p in prompts]
    half = len(markers) // 2
    assert markers[:half] == markers[half:]  # the attack added no field marker to any prompt
    items = [block for p in prompts[half:] for block in re.findall(r"<item>(.*?)</item>", p, flags=re.S)]
    assert items and not any("[[" in block or "##" in block and "]]" in block for block in items)
