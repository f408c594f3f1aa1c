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
    from optimize import compile as compile_cli

    art = tmp_path / "esci.json"
    compile_cli.main(["--dataset", f"esci:{_esci_folder(tmp_path)}", "--split", "all", "--method", "ce-blend",
                      "--knowledge", "none", "--skip-before", "--set", "embedder=lexical", "--set", "ce_pairs=128",
                      "--set", "ce_max_len=16", "--set", "ce_lr=0.001", "--set", "dev_queries=12",
                      "--out", str(art)])
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
