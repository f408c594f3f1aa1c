"""The five commands of TREC DL work end to end on tiny synthetic benchmarks in the TREC folder layout and as an
ir_datasets dataset registered from local files (no MS MARCO text, no download, fake LMs):

    hiera-dspy compile --dataset trec:DL20 --method ce-blend --out dl.json        (ce-blend: slow; embed-lr: fast)
    hiera-dspy compile --dataset irds:ID --method embed-lr ...
    hiera-dspy run --dataset trec:OTHER --judge dl.json --out runs/other          (kappa, binary kappa, alpha, CIs)
    hiera-dspy holes --dataset irds:ID --runs a.run,b.run --depth 10 --judge dl.json --out runs/filled  (tau, tau_ap)
    hiera-dspy ablate --dataset trec:OTHER --methods thomas,hiera,dream           (the field's baseline beside them)

and `thomas` compiles like any prompt method.
"""

from __future__ import annotations

import json

import pytest

from hiera_dspy.artifacts.format import read_artifact
from hiera_dspy.cli import main as console
from hiera_dspy.testing import register_irds, write_trec_folder, write_trec_run
from tests.methods.conftest import tiny_base  # noqa: F401  (a fixture: the 1-layer BERT in place of MiniLM)

FAST_JUDGE = ["--method", "embed-lr", "--set", "embedder=lexical", "--knowledge", "none", "--skip-before"]


@pytest.fixture
def bench(tmp_path):
    """DL20-like training folder, another folder to judge (one passage of 3,000 characters) with two runs over it,
    and that folder registered with ir_datasets."""
    pytest.importorskip("ir_datasets")
    train = write_trec_folder(tmp_path / "dl20", queries=16, passages=8)
    other = write_trec_folder(tmp_path / "other", queries=8, passages=8, seed=1, long_passage=3000)
    runs = [write_trec_run(tmp_path / "a.run", other, "a", noise=0.3),
            write_trec_run(tmp_path / "b.run", other, "b", noise=3.0, seed=1)]  # before registering: they add docs
    return {"train": train, "other": other, "runs": ",".join(map(str, runs)), "tmp": tmp_path,
            "irds": register_irds(f"hiera-test/{tmp_path.name}", other)}


def hiera(*argv: str) -> None:
    assert console.main([str(a) for a in argv]) == 0


def test_compile_a_trec_folder_and_judge_another_with_the_fields_measures(bench, capsys):
    art = bench["tmp"] / "dl.json"
    hiera("compile", "--dataset", f"trec:{bench['train']}", "--split", "all", *FAST_JUDGE, "--out", art)
    doc = read_artifact(art)
    assert doc["method"] == "embed-lr" and doc["scheme"]["name"] == "trec"
    out = bench["tmp"] / "runs-other"
    hiera("run", "--dataset", f"trec:{bench['other']}", "--split", "all", "--judge", art, "--out", out)
    printed = capsys.readouterr().out
    assert "binary kappa (>= Highly relevant)" in printed and "Krippendorff's alpha (ordinal)" in printed
    m = json.loads((out / "metrics.json").read_text())
    assert m["n"] == 64 and m["binary_from"] == 2 and len(m["confusion"]) == 4
    for name in ("kappa", "binary_kappa", "krippendorff_alpha", "weighted_kappa"):
        low, high = m[f"{name}_ci"]
        assert low <= m[name] <= high, name
    assert set(m["ci_by_query"]) == {"kappa", "binary_kappa", "krippendorff_alpha", "weighted_kappa"}
    assert m["kappa"] > 0.2  # the synthetic grades are learnable: a real check that the pairs reached the judge
    assert m["pairs_judged"] == 64 and m["wall_ms_per_pair"] >= 1000 * m["seconds_per_judgment"]


def test_compile_an_ir_datasets_id_and_fill_its_holes_with_tau_and_tau_ap(bench, capsys):
    art = bench["tmp"] / "irds.json"
    hiera("compile", "--dataset", bench["irds"], "--split", "all", *FAST_JUDGE, "--out", art)
    assert read_artifact(art)["dataset"] == bench["irds"]
    filled = bench["tmp"] / "filled"
    hiera("holes", "--dataset", bench["irds"], "--runs", bench["runs"], "--depth", "10", "--judge", art,
          "--out", filled, "--judge-pool")
    summary = json.loads((filled / "summary.json").read_text())
    assert summary["holes"] == 16 and summary["filled"] == 16  # two unjudged passages a query, in both top 10s
    assert summary["kendall_tau"] is not None and summary["tau_ap"] is not None
    assert summary["largest_change"]["run"] in ("a", "b")
    machine = summary["machine_only"]
    assert machine["pairs"] == 80 and machine["judged_pairs"] == 64
    assert machine["kendall_tau"] is not None and machine["tau_ap"] is not None
    assert machine["agreement"]["n"] == 64 and machine["agreement"]["krippendorff_alpha"] is not None
    assert len((filled / "machine_qrels.txt").read_text().splitlines()) == 80
    assert "tau_ap" in (filled / "report.md").read_text()


def test_holes_take_a_trec_folder_in_place_of_the_three_files(bench):
    filled = bench["tmp"] / "filled-trec"
    hiera("holes", "--dataset", f"trec:{bench['other']}", "--runs", bench["runs"], "--depth", "5",
          "--method", "embed-lr", "--set", "embedder=lexical", "--knowledge", "none", "--out", filled)
    summary = json.loads((filled / "summary.json").read_text())
    assert summary["original_judgments"] == 64 and summary["depth"] == 5


def test_ablate_thomas_beside_hiera_and_dream_on_the_same_pairs(bench, patch_make_lm, capsys):
    patch_make_lm({"grade": 2, "label": "Highly relevant"})
    out = bench["tmp"] / "ablate"
    hiera("ablate", "--dataset", f"trec:{bench['other']}", "--split", "all", "--limit", "16",
          "--methods", "thomas,hiera,dream", "--knowledge", "none", "--out", out)
    summaries = {s["method"]: s for s in json.loads((out / "summary.json").read_text())}
    assert list(summaries) == ["thomas", "hiera", "dream"]
    assert summaries["thomas"]["n"] == 16 and summaries["thomas"]["coverage"] == 1
    for s in summaries.values():
        assert {"kappa_ci", "binary_kappa", "binary_kappa_ci", "krippendorff_alpha", "weighted_kappa",
                "binary_confusion", "wall_ms_per_pair", "ci_by_query"} <= set(s)
        assert set(s["ci_by_query"]) >= {"kappa", "binary_kappa", "krippendorff_alpha", "weighted_kappa"}
    report = (out / "report.md").read_text()
    assert "κ binary [95% CI]" in report and "α ordinal [95% CI]" in report and "ms/pair (wall)" in report


def test_a_long_passage_is_cut_visibly_in_an_llm_judges_prompt(bench, patch_make_lm):
    patch_make_lm({"grade": 1})
    out = bench["tmp"] / "thomas"
    hiera("run", "--dataset", f"trec:{bench['other']}", "--split", "all", "--limit", "3", "--method", "thomas",
          "--knowledge", "none", "--out", out)
    assert json.loads((out / "metrics.json").read_text())["truncated"] == 1
    first = json.loads((out / "predictions.jsonl").read_text().splitlines()[0])
    assert first["label"] == "Related" and first["fields"]["truncated"] == {"item_text": 3000}


@pytest.mark.slow
def test_compile_ce_blend_on_a_trec_folder(bench, tiny_base):  # noqa: F811
    art = bench["tmp"] / "ce.json"
    hiera("compile", "--dataset", f"trec:{bench['train']}", "--split", "all", "--method", "ce-blend",
          "--knowledge", "none", "--skip-before", "--set", "embedder=lexical", "--set", "ce_pairs=64",
          "--set", "ce_max_len=32", "--set", "dev_queries=4", "--out", art)
    assert read_artifact(art)["method"] == "ce-blend"
    out = bench["tmp"] / "ce-run"
    hiera("run", "--dataset", f"trec:{bench['other']}", "--split", "all", "--judge", art, "--out", out)
    m = json.loads((out / "metrics.json").read_text())
    assert m["n"] == 64 and m["krippendorff_alpha"] is not None and m["wall_ms_per_pair"] is not None


def test_thomas_compiles_like_any_prompt_method(bench, patch_make_lm):
    patch_make_lm({"grade": 2})
    art = bench["tmp"] / "thomas.json"
    hiera("compile", "--dataset", f"trec:{bench['train']}", "--method", "thomas", "--budget", "smoke",
          "--knowledge", "none", "--out", art)
    doc = read_artifact(art)
    assert doc["method"] == "thomas" and list(doc["state"]) == ["judge"]  # its one predictor, demos and all
    out = bench["tmp"] / "thomas-run"
    hiera("run", "--dataset", f"trec:{bench['other']}", "--split", "all", "--limit", "4", "--judge", art,
          "--knowledge", "none", "--out", out)
    assert json.loads((out / "metrics.json").read_text())["n"] == 4
