"""`python -m bench.cross_encoder` without fine-tuning (and the library's item view, which it reads): the view keeps
what a 128-token cut would drop, the splits never share a query, and the table picks the blend on dev only (scores
planted so that only the blend is right)."""

from __future__ import annotations

import json

import pytest

from tests.bench_command import run_bench


def test_item_view_puts_the_short_fields_before_the_overview():
    from hiera_dspy.signals.cross_encoder import item_view

    text = "Overview: A long plot.\nYear: 1979\nGenres: Horror\nDirector: Ridley Scott\nActors: Sigourney Weaver"
    assert item_view("Alien", text) == ("Alien. Year: 1979. Genres: Horror. Director: Ridley Scott. "
                                        "Actors: Sigourney Weaver. A long plot.")


@pytest.mark.slow  # the real pool's splits, twice: ~30 s
def test_splits_are_query_disjoint_and_the_table_chooses_on_dev(tmp_path):
    from hiera_dspy.labels import get_scheme

    run_bench("cross_encoder", "splits", "--work", tmp_path)
    sets = json.loads((tmp_path / "splits.json").read_text())
    first, fresh, dev = sets["first"], sets["fresh"], sets["dev"]
    queries = [{q for _, q, _ in s} for s in (first, fresh, dev)] + [set(sets["pool_queries"])]
    assert all(not (a & b) for i, a in enumerate(queries) for b in queries[i + 1:])
    assert (len(first), len(fresh), len(dev)) == (400, 400, 300)
    rel = get_scheme("msrd").labels[-1]
    # each model alone is wrong on a third of the pairs (different thirds); their mean is right everywhere
    scorer, ce = {}, {}
    for i, (pair_id, _, label) in enumerate(first + fresh + dev):
        good, bad = (0.9, 0.3) if label == rel else (0.1, 0.7)
        scorer[pair_id], ce[pair_id] = (bad, good) if i % 3 == 0 else (good, bad) if i % 3 == 1 else (good, good)
    (tmp_path / "scorer_scores.json").write_text(json.dumps(scorer))
    (tmp_path / "ce_scores.json").write_text(json.dumps(ce))
    (tmp_path / "ref_labels.json").write_text(json.dumps({i: label for i, _, label in first + fresh + dev}))
    (tmp_path / "scorer_fit.json").write_text(json.dumps({"fit_s": 1.0, "train_pairs": 100_000}))
    (tmp_path / "ce_fit.json").write_text(json.dumps({"fit_s": 1.0, "fit_cpu_s": 1.0, "train_pairs": 10, "max_len": 8,
                                                      "lr": 1e-4, "batch": 2, "s_per_pair": 0.01}))
    run_bench("cross_encoder", "table", "--work", tmp_path, "--out", tmp_path / "out")
    result = json.loads((tmp_path / "out" / "cross_encoder.json").read_text())
    both = result["sets"][-1]
    names = [r["name"] for r in both["rows"]]
    assert names[0] == "embed-lr 300" and names[1] == "whole-pool scorer (argmax)" and names[3].startswith("blend: ")
    kappas = [r["kappa"] for r in both["rows"]]
    assert kappas[0] == 1.0 and kappas[3] == 1.0 and kappas[1] < 0.7 and kappas[2] < 0.7
    assert both["blend_vs_scorer"][0] == 0 and both["blend_vs_scorer"][1] > 200
    assert (tmp_path / "out" / "cross_encoder.md").exists()
