"""`python -m bench.learning --fake` on a tiny synthetic MSRD folder (the bench's hashed fake embedder): held-out
queries disjoint from train, every row scored with kappa, CI and McNemar against the 300-pair judge, decisions picked
least confident first."""

from __future__ import annotations

import gzip
import json

from tests.bench_command import run_bench

WORDS = ("alien", "space", "horror", "toy", "story", "fox", "owl")


def _items(q: int) -> list[tuple[str, str]]:
    w = WORDS[q % len(WORDS)]
    return [(f"{w} {w} saga", "Relevant"), (f"quiet pond {q}", "Irrelevant"),
            (f"still {w} lake", "Irrelevant" if q % 3 else "Relevant"), (f"grey rock {q}", "Irrelevant")]


def _folder(path, train: range, dev: range, pool: range):
    """train.jsonl and dev.jsonl of their queries; the judgments pool (train and pool queries) and its catalog."""
    path.mkdir()
    catalog, judgments = [], ["query_id\tquery\tdoc_id\tgrade"]
    for split, queries in (("train", train), ("dev", dev)):
        with open(path / f"{split}.jsonl", "w") as fh:
            for q in queries:
                for j, (title, label) in enumerate(_items(q)):
                    fh.write(json.dumps({"id": f"msrd:q{q}:{q}-{j}", "query": f"{WORDS[q % 7]} film {q % 2}",
                                         "item_title": title, "item_text": f"Overview: {title} text",
                                         "label": int(label == "Relevant"), "query_id": f"q{q}",
                                         "item_id": f"{q}-{j}"}) + "\n")
    for q in [*train, *pool]:
        for j, (title, label) in enumerate(_items(q)):
            catalog.append({"id": f"{q}-{j}", "title": title, "overview": f"{title} text"})
            judgments.append(f"q{q}\t{WORDS[q % 7]} film {q % 2}\t{q}-{j}\t{int(label == 'Relevant')}")
    with gzip.open(path / "movies-corpus.jsonl.gz", "wt") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in catalog)
    with gzip.open(path / "judgments-pool.tsv.gz", "wt") as fh:
        fh.write("\n".join(judgments) + "\n")
    return 4 * (len(train) + len(pool))


def test_the_bench_rows_and_the_decision_rounds(tmp_path):
    pool = _folder(tmp_path / "msrd", range(10), range(10, 16), range(16, 60))
    run_bench("learning", "--fake", "--dataset", f"msrd:{tmp_path / 'msrd'}", "--heldout", "8", "--seed", "0",
              "--configs", "pool+balanced", "--simulate-from", "300", "--rounds", "3,3", "--random-seeds", "1",
              "--out", tmp_path / "out")
    result = json.loads((tmp_path / "out" / "learning_fake.json").read_text())
    assert result["holes"] == 32 and result["heldout_queries"] == 8 and result["pool_train"] == pool - 32
    assert [r["name"] for r in result["holes_rows"]] == ["embed-lr 300", "embed-lr pool+balanced"]
    first = result["holes_rows"][0]
    assert first["mcnemar_b"] == first["mcnemar_c"] == 0 and first["n"] == 32 and len(first["kappa_ci"]) == 2
    rows = result["decisions"]["300"]
    assert [(r["decisions"], r["n"]) for r in rows] == [(3, 29), (6, 26), (3, 29), (6, 26)]
    assert "uncertainty" in rows[0]["name"] and "random, seed 1" in rows[2]["name"]
    assert "Kappa gained on the undecided holes" in (tmp_path / "out" / "learning_fake.md").read_text()
