"""A tiny retrieval benchmark and a scripted DREAM for the labelling commands (eval.label, eval.holes, eval.review).

Debate by query word: "spy" -> both debaters say relevant in round 1 (confidence 1.0); "cat" -> both not relevant;
"late" -> the skeptic concedes in round 2 (confidence 0.75); "maybe" -> nobody moves: escalated.
"""

from __future__ import annotations

from pathlib import Path

from hiera_dspy.testing import input_of

ADVOCATE = "[[ ## initial_stance ## ]]\nrelevant"


def stance(prompt: str) -> str:
    q = input_of(prompt)
    if "spy" in q:
        return "relevant"
    if "cat" in q:
        return "not relevant"
    if "late" in q:
        return "relevant" if ADVOCATE in prompt or "Round 1," in prompt else "not relevant"
    return "relevant" if ADVOCATE in prompt else "not relevant"  # "maybe": stubborn debaters


ANSWERS = {"stance": stance}


def write(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def holes_argv(bench: dict, out: Path, *extra: str) -> list[str]:
    return ["--topics", bench["topics"], "--corpus", bench["corpus"], "--qrels", bench["qrels"],
            "--runs", ",".join(bench["runs"]), "--depth", "3", "--scheme", "msrd", "--method", "dream",
            "--lm", "fake", "--knowledge", "none", "--out", str(out), *extra]


def open_store():
    """The test's run store (HIERA_RUNS_DIR is a temp folder)."""
    from hiera_dspy.cli.options import runs_dir
    from hiera_dspy.store.run_store import RunStore

    return RunStore(runs_dir() / "store.sqlite")
