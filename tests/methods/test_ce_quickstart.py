"""`optimize.compile --method ce-blend --budget quickstart` (README command 1) with the tiny BERT of
test_ce_blend.py: the quickstart config is applied (lexical trees scorer, fewer cross-encoder pairs), the learned judge
is scored on every dev pair, and the report says what each part learned from and names no optimizer."""

from __future__ import annotations

import json

from tests.methods.test_ce_blend import _pairs


def _rows(pairs):
    return "".join(json.dumps({"id": p.id, "query": p.query, "item_title": p.item_title, "item_text": p.item_text,
                               "query_id": p.query_id, "item_id": p.item_id, "label": int(p.label == "Relevant")})
                   + "\n" for p in pairs)


def test_quickstart_compile_reports_each_part_and_every_dev_pair(tiny_base, tmp_path, monkeypatch, capsys):
    from hiera_dspy.artifacts.format import read_artifact
    from hiera_dspy.jobs import optimizers
    from optimize import compile as compile_cli

    monkeypatch.setitem(optimizers.QUICKSTART, "ce-blend", {"split": "pool", "config": {
        **optimizers.QUICKSTART["ce-blend"]["config"], "ce_pairs": 64, "ce_max_len": 32}})
    data = tmp_path / "data"
    data.mkdir()
    pairs = _pairs(44)
    (data / "train.jsonl").write_text(_rows(pairs[:136]))
    (data / "dev.jsonl").write_text(_rows(pairs[136:]))  # 40 dev pairs
    art = tmp_path / "qs.json"
    metrics = compile_cli.main(["--dataset", f"msrd:{data}", "--method", "ce-blend", "--budget", "quickstart",
                                "--knowledge", "none", "--set", "ce_lr=0.001", "--set", "dev_queries=6",
                                "--out", str(art)])
    out = capsys.readouterr()
    assert metrics["optimizer"] == "none" and metrics["n_dev"] == 40 and metrics["after"]["n"] == 40
    assert "optimizer" not in out.out.split("compiled:")[1].split("\n")[0]
    assert "optimizer" not in out.err.split("compiling ce-blend")[1].split("\n")[0]
    assert "learned from 136 pairs of split 'train'" in out.err  # no pool split in this folder: train
    learned = [line.strip() for line in out.out.splitlines() if line.strip().startswith("learned:")]
    assert learned[0] == "learned: scorer: 112 pairs" and learned[1].startswith("learned: cross-encoder: 64 of them")
    assert "held-out pairs of train queries neither model saw" in learned[2]
    config = read_artifact(art)["config"]
    assert config["embedder"] == "lexical" and config["model"] == "hgb" and config["ce_pairs"] == 64


def test_a_learned_judge_is_scored_on_every_dev_pair_whatever_the_budget(tmp_path):
    """--budget smoke allows 4 dev pairs for a prompt's optimizer; a judge with no prompt and no LM costs seconds to
    score, so it is scored on all of them (a kappa CI on 4 pairs means nothing)."""
    from optimize import compile as compile_cli

    data = tmp_path / "data"
    data.mkdir()
    pairs = _pairs(30)
    (data / "train.jsonl").write_text(_rows(pairs[:80]))
    (data / "dev.jsonl").write_text(_rows(pairs[80:]))
    metrics = compile_cli.main(["--dataset", f"msrd:{data}", "--method", "embed-lr", "--budget", "smoke",
                                "--knowledge", "none", "--set", "embedder=lexical", "--out", str(tmp_path / "e.json")])
    assert metrics["n_dev"] == 40 and metrics["after"]["n"] == 40 and metrics["optimizer"] == "none"
