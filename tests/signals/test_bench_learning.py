"""bench/learning.py on a tiny synthetic pool with the bench's hashed fake embedder: held-out queries disjoint from
train, every row scored with kappa, CI and McNemar against the 300-pair judge, decisions picked least confident first."""

from __future__ import annotations

from hiera_dspy.data import Dataset
from hiera_dspy.labels import get_scheme
from hiera_dspy.records import Pair


def _pairs(prefix: str, queries: range) -> list[Pair]:
    words = ("alien", "space", "horror", "toy", "story", "fox", "owl")
    out = []
    for q in queries:
        w = words[q % len(words)]
        for j, (title, label) in enumerate([(f"{w} {w} saga", "Relevant"), (f"quiet pond {q}", "Irrelevant"),
                                            (f"still {w} lake", "Irrelevant" if q % 3 else "Relevant"),
                                            (f"grey rock {q}", "Irrelevant")]):
            out.append(Pair(f"{prefix}:{q}:{j}", f"{w} film {q % 2}", title, f"{title} text", label, f"q{q}",
                            f"{prefix}{q}-{j}"))
    return out


def test_the_bench_rows_and_the_decision_rounds():
    import bench.learning as bench

    train, dev = _pairs("t", range(10)), _pairs("d", range(10, 16))
    pool = train + _pairs("p", range(16, 60))
    data = Dataset("msrd", get_scheme("msrd"), {"train": train, "dev": dev, "pool": pool})
    result = bench.run(data, bench.FakeEmbedder(), 8, 0, {"pool+balanced": {"class_weight": "balanced"}}, ("300",),
                       rounds=(3, 3), random_seeds=(1,))
    held = {p.query_id for p in pool if p.id.startswith("p")} - {p.query_id for p in train}
    assert result["holes"] == 32 and result["heldout_queries"] == 8 and result["pool_train"] == len(pool) - 32
    assert [r["name"] for r in result["holes_rows"]] == ["embed-lr 300", "embed-lr pool+balanced"]
    first = result["holes_rows"][0]
    assert first["mcnemar_b"] == first["mcnemar_c"] == 0 and first["n"] == 32 and len(first["kappa_ci"]) == 2
    rows = result["decisions"]["300"]
    assert [(r["decisions"], r["n"]) for r in rows] == [(3, 29), (6, 26), (3, 29), (6, 26)]
    assert "uncertainty" in rows[0]["name"] and "random, seed 1" in rows[2]["name"] and len(held) == 44
    assert "Kappa gained on the undecided holes" in bench.markdown(result)
