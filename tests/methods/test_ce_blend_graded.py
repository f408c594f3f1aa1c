"""ce-blend on ESCI's four grades end to end, with a tiny BERT in place of MiniLM: the official parquet format in,
`optimize.compile --dataset esci:FOLDER --method ce-blend` out, then `eval.holes --scheme esci --judge ART` fills a
graded benchmark's holes and concludes with a person's sample: nDCG with ESCI's gains (1 / 0.1 / 0.01 / 0, checked
against ir_measures), PPI intervals on it."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from hiera_dspy.labels import get_scheme

LETTERS = "ESCI"  # Exact, Substitute, Complement, Irrelevant
WORDS = ("drill", "shovel", "battery", "hose", "ladder", "lamp", "rake", "saw")
TITLE = {"E": "{w} pro {q}", "S": "{w} lite {q}", "C": "case for {w} {q}", "I": "garden gnome {q}"}


def _esci_folder(tmp_path, n_queries: int = 48):
    """The two official parquet files: each query has one product of each label, the grade readable from the title."""
    examples, products = [], []
    for q in range(n_queries):
        w = WORDS[q % len(WORDS)]
        for k, letter in enumerate(LETTERS):
            pid = f"B{q:03d}{k}"
            examples.append(dict(example_id=1000 + 4 * q + k, query=f"{w} pro", query_id=q, product_id=pid,
                                 product_locale="us", esci_label=letter, small_version=1, large_version=1,
                                 split="train"))
            products.append(dict(product_id=pid, product_title=TITLE[letter].format(w=w, q=q),
                                 product_description=None, product_bullet_point=None, product_brand=None,
                                 product_color=None, product_locale="us"))
    folder = tmp_path / "esci"
    folder.mkdir()
    pd.DataFrame(examples).to_parquet(folder / "shopping_queries_dataset_examples.parquet", index=False)
    pd.DataFrame(products).to_parquet(folder / "shopping_queries_dataset_products.parquet", index=False)
    return folder


def _compile(dataset: str, out, ce_pairs: int, dev_queries: int) -> None:
    """`optimize.compile --split all --method ce-blend` on `dataset` with the tiny BERT's settings."""
    from optimize import compile as compile_cli

    compile_cli.main(["--dataset", dataset, "--split", "all", "--method", "ce-blend", "--knowledge", "none",
                      "--skip-before", "--set", "embedder=lexical", "--set", f"ce_pairs={ce_pairs}", "--set",
                      "ce_max_len=16", "--set", "ce_lr=0.001", "--set", f"dev_queries={dev_queries}",
                      "--out", str(out)])


def _benchmark(tmp_path):
    """Four queries, eight products, graded qrels (0-3 = ESCI's label indices) on a shallow pool, two runs."""
    def write(name, lines):
        path = tmp_path / name
        path.write_text("".join(line + "\n" for line in lines))
        return str(path)

    topics = write("topics.tsv", [f"t{q}\t{w} pro" for q, w in enumerate(WORDS[:4])])
    docs = [{"id": f"t{q}-{letter}", "title": TITLE[letter].format(w=w, q=100 + q), "text": ""}
            for q, w in enumerate(WORDS[:4]) for letter in LETTERS]
    corpus = write("corpus.jsonl", [json.dumps(d) for d in docs])
    qrels = write("qrels.txt", [f"t{q} 0 t{q}-E 3" for q in range(4)])  # only the exact product judged
    run_a = write("a.run", [f"t{q} Q0 t{q}-{letter} {r} {9 - r} a" for q in range(4)
                            for r, letter in enumerate("ESCI", 1)])
    run_b = write("b.run", [f"t{q} Q0 t{q}-{letter} {r} {9 - r} b" for q in range(4)
                            for r, letter in enumerate("ICSE", 1)])
    return ["--topics", topics, "--corpus", corpus, "--qrels", qrels, "--runs", f"{run_a},{run_b}", "--depth", "4",
            "--scheme", "esci", "--knowledge", "none"]


def test_esci_compiles_ce_blend_and_fills_graded_holes(tiny_base, tmp_path):
    import ir_measures
    from ir_measures import nDCG

    from eval import escalations
    from eval import holes as eval_holes
    from hiera_dspy.artifacts.format import read_artifact

    art = tmp_path / "esci.json"
    _compile(f"esci:{_esci_folder(tmp_path)}", art, ce_pairs=128, dev_queries=12)
    blend = read_artifact(art)["extra"]["blend"]
    assert len(blend["thresholds"]) == 3 and blend["thresholds"] == sorted(blend["thresholds"])
    assert blend["dev_label_counts"] == {label: 12 for label in get_scheme("esci").labels}

    out = tmp_path / "filled"
    argv = _benchmark(tmp_path) + ["--judge", str(art), "--out", str(out)]
    first = eval_holes.main(argv + ["--human-sample", "2", "--sample-seed", "1"])
    filled = [json.loads(line) for line in (out / "new.jsonl").read_text().splitlines()]
    assert len(filled) == 12 and {r["label"] for r in filled} <= set(get_scheme("esci").labels)
    assert len({r["label"] for r in filled}) >= 2  # the judge tells grades apart, not one label for all

    # nDCG after filling = ir_measures' nDCG with ESCI's gains on the exported qrels
    qrels = [ir_measures.Qrel(q, d, int(g)) for q, _, d, g in
             (line.split() for line in (out / "qrels.txt").read_text().splitlines())]
    run = [ir_measures.ScoredDoc(q, d, float(s)) for q, _, d, _, s, _ in
           (line.split() for line in open(argv[argv.index("--runs") + 1].split(",")[1]))]
    expected = ir_measures.calc_aggregate([nDCG(gains={0: 0, 1: 1, 2: 10, 3: 100}) @ 4], qrels, run)
    b = next(r for r in first["runs"] if r["run"] == "b")
    assert b["ndcg@4_after"] == pytest.approx(list(expected.values())[0])

    sample = [json.loads(line) for line in (out / "sample.jsonl").read_text().splitlines()]
    decisions = tmp_path / "human.jsonl"
    decisions.write_text("".join(json.dumps({"id": r["id"], "label": "Substitute"}) + "\n" for r in sample))
    escalations.main(["--run", first["run_id"], "--labels", str(decisions), "--who", "ana"])
    summary = eval_holes.main(argv)
    estimate = summary["runs"][0]["estimates"]["ndcg@4"]
    assert estimate["n"] == 2 and estimate["N"] == 4 and estimate["ppi"] is not None


HD_MEANS = {"1": ("1", "1.33"), "2": ("1.67", "2.33"), "3": ("2.67", "3")}  # raters' means of each level, two each
HD_TITLE = {"1": "garden gnome {n}", "2": "{w} lite {n}", "3": "{w} pro {n}"}


def _homedepot_folder(tmp_path, n_queries: int = 40):
    """Kaggle's train.csv (latin-1, CRLF): each search term has two products of each level, the level readable from
    the title, the raters' mean varying within a level."""
    rows = ["id,product_uid,product_title,search_term,relevance"]
    for q in range(n_queries):
        w = WORDS[q % len(WORDS)]
        for level, means in HD_MEANS.items():
            for k, mean in enumerate(means):
                n = 6 * q + 2 * int(level) + k
                rows.append(f"{n},{100000 + n},{HD_TITLE[level].format(w=w, n=n)},{w} pro {q},{mean}")
    folder = tmp_path / "homedepot"
    folder.mkdir()
    (folder / "train.csv").write_bytes(("\r\n".join(rows) + "\r\n").encode("latin-1"))
    return folder


def test_homedepot_folder_compiles_three_grades_from_the_raters_mean(tiny_base, tmp_path):
    """`--dataset homedepot:FOLDER --split all --method ce-blend`: every pair trains (no refusal of three labels),
    the cross-encoder learns from the raters' mean (the pairs' grade), two increasing cuts on a balanced dev split,
    and the artifact labels new pairs with all three levels."""
    from hiera_dspy.artifacts.format import read_artifact
    from hiera_dspy.artifacts.judge_file import load_judge
    from hiera_dspy.data import load_dataset

    folder = _homedepot_folder(tmp_path)
    pairs = load_dataset(f"homedepot:{folder}", get_scheme("homedepot")).split("all")
    assert len(pairs) == 240 and sorted({round(p.grade, 2) for p in pairs}) == [0.0, 0.33, 0.67, 1.33, 1.67, 2.0]
    art = tmp_path / "hd.json"
    _compile(f"homedepot:{folder}", art, ce_pairs=160, dev_queries=10)
    blend = read_artifact(art)["extra"]["blend"]
    low, high = blend["thresholds"]
    assert 0 < low < high < 2 and blend["fit_pairs"] == 180 and blend["dev_pairs"] == 30
    assert blend["dev_label_counts"] == {label: 10 for label in get_scheme("homedepot").labels}  # one each a query
    judge = load_judge(art)
    fresh = [judge(query=f"{w} pro 99", item_title=HD_TITLE[level].format(w=w, n=999), item_text="")
             for w in WORDS[:4] for level in HD_TITLE]
    assert len({p.label for p in fresh}) == 3
