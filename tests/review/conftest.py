"""Fixtures of the labelling tests; helpers in labelling_helpers.py (importable: pytest runs with importlib mode)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from labelling_helpers import write  # noqa: E402


@pytest.fixture
def bench(tmp_path) -> dict:
    """Topics q1..q4, documents d1..d8, 3 judgments, two runs (depth 3 pools 7 holes)."""
    topics = write(tmp_path / "topics.tsv", ["q1\tspy movie", "q2\tcat film", "q3\tlate night show",
                                              "q4\tmaybe something"])
    docs = [{"id": f"d{i}", "title": f"Doc {i}", "text": f"text {i}", "genres": ["drama", "crime"]}
            for i in range(1, 9)]
    corpus = write(tmp_path / "corpus.jsonl", [json.dumps(d) for d in docs])
    qrels = write(tmp_path / "qrels.txt", ["q1 0 d1 1", "q2 0 d2 0", "q3 0 d8 1"])
    run_a = write(tmp_path / "a.run", ["q1 Q0 d1 1 3.0 a", "q1 Q0 d2 2 2.0 a", "q1 Q0 d3 3 1.0 a",
                                       "q1 Q0 d4 4 0.5 a", "q2 Q0 d2 1 2.0 a", "q2 Q0 d5 2 1.0 a",
                                       "q3 Q0 d6 1 1.0 a"])
    run_b = write(tmp_path / "b.run", ["q1 Q0 d3 1 9.0 b", "q1 Q0 d4 2 8.0 b", "q1 Q0 d1 3 7.0 b",
                                       "q2 Q0 d5 1 5.0 b", "q2 Q0 d6 2 4.0 b", "q4 Q0 d7 1 1.0 b",
                                       "q3 Q0 d8 1 2.0 b"])
    return {"topics": topics, "corpus": corpus, "qrels": qrels, "runs": [run_a, run_b], "dir": tmp_path}


@pytest.fixture
def unlabelled(tmp_path) -> str:
    """Five pairs without a label field: one per debate outcome, plus a second spy pair."""
    rows = [("p1", "spy movie", "q1", "d1"), ("p2", "cat film", "q2", "d2"), ("p3", "late night show", "q3", "d3"),
            ("p4", "maybe something", "q4", "d4"), ("p5", "another spy story", "q5", "d5")]
    return write(tmp_path / "pairs.jsonl", [json.dumps({"id": i, "query": q, "item_title": f"T {d}",
                                                        "item_text": f"text of {d}", "query_id": qid,
                                                        "item_id": d}) for i, q, qid, d in rows])


@pytest.fixture
def labelled(unlabelled, patch_make_lm, tmp_path):
    """The five unlabelled pairs labelled by the scripted DREAM with eval.label: (run id, output folder)."""
    from labelling_helpers import ANSWERS

    from eval import label as eval_label

    patch_make_lm(ANSWERS)
    out = tmp_path / "mine"
    run_id = eval_label.main(["--dataset", f"jsonl:{unlabelled}", "--labels", "Bad,Good", "--method", "dream",
                              "--lm", "fake", "--knowledge", "none", "--out", str(out)])["run_id"]
    return run_id, out
