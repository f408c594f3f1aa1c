"""`python -m bench.trecdl` end to end on a tiny synthetic TREC folder (topics.tsv, qrels.txt, corpus.jsonl.gz in the
TREC DL layout; no MS MARCO text): every pair is scored out of fold, the tables and the hole-filling taus are
written, and the token budget and item-prior choices are recorded."""

from __future__ import annotations

import gzip
import json

import pytest

from hiera_dspy.testing import write_trec_folder
from tests.bench_command import run_bench


def tiny_trec(folder, queries: int = 6, per_query: int = 24) -> None:
    """The test kit's synthetic TREC folder (grade i % 4, the query's words said more the higher the grade), its
    corpus gzipped as the DL 2020 folder ships it."""
    write_trec_folder(folder, queries=queries, passages=per_query, seed=3)
    plain = folder / "corpus.jsonl"
    (folder / "corpus.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()


@pytest.mark.slow  # two fine-tunings of a few steps and the bootstrap: ~60 s
def test_trecdl_bench_scores_every_pair_out_of_fold_and_fills_holes(tmp_path):
    tiny_trec(tmp_path / "trec")
    work = tmp_path / "work"
    run_bench("trecdl", "--data", tmp_path / "trec", "--work", work, "--folds", "2", "--ce-pairs", "64",
              "--embedder", "lexical", "--no-accelerate", "--resamples", "20", "--threads", "1", timeout=600)
    folds = [json.loads((work / f"fold{f}.json").read_text()) for f in (0, 1)]
    ids = [i for f in folds for i in f["ids"]]
    assert len(ids) == len(set(ids)) == 6 * 24  # every pair once, scored by the fold that did not train on it
    for f in folds:
        assert f["budget"]["max_len"] in (64, 96, 128) and f["budget"]["truncated"] <= 0.10  # free text: 90% read
        assert f["item_prior"]["features"] == "query"  # every passage judged once: no item prior
    queries = [{i.split(":")[0] for i in f["ids"]} for f in folds]
    assert queries[0].isdisjoint(queries[1])
    result = json.loads((work / "trecdl.json").read_text())
    assert [j["name"] for j in result["judges"]][:4] == ["embed-lr", "ce-blend", "cross-encoder alone",
                                                         "trees scorer alone"]
    for j in result["judges"]:
        assert set(j) >= {"kappa", "kappa_binary", "alpha", "weighted_kappa", "shares", "ms_a_pair"}
        assert j["kappa"]["ci"][0] <= j["kappa"]["value"] <= j["kappa"]["ci"][1]
    assert result["judges"][-1]["name"] == "late-lr"  # the passage judge, from its own per-fold files
    late = [json.loads((work / f"late{f}.json").read_text()) for f in (0, 1)]
    assert sorted(i for f in late for i in f["ids"]) == sorted(ids)
    assert all(len(f["grading"]["thresholds"]) == 3 for f in late)
    holes = json.loads((work / "holes.json").read_text())
    assert holes["filler"] == "late-lr" and len(holes["without_kin"]) == len(holes["runs"]) - 2  # no embed-lr run
    assert holes["holes"] > 0 and holes["tau_machine"] is not None and -1 <= holes["tau_filled"] <= 1
    assert "Kendall tau" in (work / "holes.md").read_text()
