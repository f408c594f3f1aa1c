"""bench.local_probs' train distributions, its 3-level table, and bench.make_three_level, each run as
`python -m bench.NAME`."""

from __future__ import annotations

import collections
import json
import re

import pytest

from hiera_dspy.data import load_dataset
from tests.bench_command import run_bench, run_module
from tests.signals.logprob_server import LogprobServer
from tests.signals.test_label_probs import relevance_answer

LEVELS = ("Irrelevant", "Partially relevant", "Highly relevant")


def test_eval_run_on_train_sends_the_stacked_methods_train_prompts_byte_for_byte(tmp_path, monkeypatch):
    """The bench reads the LLM's train distributions with eval.run --split train --method zero-shot+probs: every
    request it sends must be one `optimize.compile --method stacked` already sent (so DSPy's cache answers it)."""
    import eval.run as run_cli
    import optimize.compile as compile_cli

    monkeypatch.setenv("HIERA_REFERENCE", "none")
    data, msrd = tmp_path / "pairs.jsonl", load_dataset("msrd")
    with open(data, "w") as fh:
        for p in msrd.split("train")[:40] + msrd.split("dev")[:40]:
            fh.write(json.dumps({**p._asdict(), "label": p.label}) + "\n")
    with LogprobServer(relevance_answer) as server:
        lm = ["--lm", "openai/fake-logprobs", "--api-base", server.url]
        compile_cli.main(["--dataset", f"jsonl:{data}", "--scheme", "msrd", "--method", "stacked", "--set",
                          "judge=zero-shot", "--set", "embedder=lexical", "--optimizer", "none", "--budget", "smoke",
                          "--skip-before", "--out", str(tmp_path / "stacked.json"), *lm])
        compiled = [json.dumps(b, sort_keys=True) for b in server.requests]
        run_cli.main(["--dataset", f"jsonl:{data}", "--scheme", "msrd", "--split", "train", "--method",
                      "zero-shot+probs", "--out", str(tmp_path / "train"), *lm])
        bench = [json.dumps(b, sort_keys=True) for b in server.requests[len(compiled):]]
    assert len(bench) == len(load_dataset(f"jsonl:{data}", msrd.scheme).splits["train"]) > 10
    assert set(bench) <= set(compiled)


def words(text: str) -> set[str]:
    """Lower-cased words of 3+ letters or digits (as bench.make_three_level reads a title)."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3}


def test_make_three_level_writes_balanced_query_disjoint_home_depot_folders(tmp_path):
    run_bench("make_three_level", "--out", tmp_path / "tl", "--per-level", "8")
    halves = {h: load_dataset(f"homedepot:{tmp_path / 'tl' / h}").split("all") for h in ("train", "eval")}
    sizes = {h: len(pairs) for h, pairs in halves.items()}
    assert sizes == {"train": 24, "eval": 24}
    for pairs in halves.values():
        assert collections.Counter(p.label for p in pairs) == dict.fromkeys(LEVELS, 8)
        assert all(p.item_text.startswith("Description: Overview") or "Director" in p.item_text for p in pairs)
    assert not {p.query_id for p in halves["train"]} & {p.query_id for p in halves["eval"]}
    for p in halves["eval"]:  # the middle level: same director as the query's relevant movie, no query word in title
        if p.label == "Partially relevant":
            top = next(q for q in halves["eval"] if q.query == p.query and q.label == "Highly relevant")
            director = [line for line in top.item_text.split(" | ") if line.startswith("Director:")]
            assert director and director[0] in p.item_text and not words(p.query) & words(p.item_title)
    raw = (tmp_path / "tl" / "eval" / "train.csv").read_bytes()
    raw.decode("latin-1")  # the competition's encoding
    assert "CC BY-SA 4.0" in (tmp_path / "tl" / "NOTICE.txt").read_text()
    run_bench("make_three_level", "--out", tmp_path / "tl2", "--per-level", "8")
    assert (tmp_path / "tl2" / "eval" / "train.csv").read_bytes() == raw  # seeded


def three_level_answer(prompt: str):
    p = prompt.lower()
    if "drama" in p:
        return "Highly relevant", {"Irrelevant": .1, "Partially relevant": .3, "Highly relevant": .6}
    return "Irrelevant", {"Irrelevant": .6, "Partially relevant": .3, "Highly relevant": .1}


@pytest.mark.slow  # a bench run: ~13 s (CI runs the slow tests; the default suite stays under 10 minutes)
def test_three_level_table_fits_on_train_and_records_its_summary(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "best_local.json").write_text(json.dumps({"method": "stacked", "set": {}, "compile": [],
                                                         "measured": {"kappa": 0.5}}))
    folder = tmp_path / "tl"
    run_bench("make_three_level", "--out", folder, "--per-level", "10")
    with LogprobServer(three_level_answer) as server:
        run_bench("local_probs", "--three-level", folder, "--lm", "openai/fake-logprobs", "--api-base", server.url,
                  "--out-dir", results, cwd=tmp_path)
        asked = len(server.requests)
    text = (results / "local_probs_three_level.md").read_text()
    assert asked == 60  # every train and eval pair once
    for name in ("embed-lr", "zero-shot+probs (argmax)", "zero-shot+probs (thresholds tuned on train)",
                 "stacked (fitted on train)"):
        assert f"| {name} | 30 |" in text
    assert "constructed, not human-judged" in text
    best = json.loads((results / "best_local.json").read_text())
    assert best["measured"]["kappa"] == 0.5  # the MSRD record is kept; the 3-level summary is added beside it
    assert best["measured"]["three_level"]["n_eval_pairs"] == 30
    assert "stacked (fitted on train)" in best["measured"]["three_level"]["rows"]


def test_stacked_reads_hieras_final_judge_step_with_label_probabilities():
    """judge=hiera: the LLM feature is the distribution of HIERA's last Judge step (the decision after delegation, or
    the triage when it labels directly), never an earlier step's."""
    from hiera_dspy.knowledge import make_knowledge
    from hiera_dspy.lm.roles import ROLES, LMSpec, RoleLMs, make_lm
    from hiera_dspy.methods import BuildContext, build
    from hiera_dspy.runs.runner import judge_one
    from tests.optimize.any_signature_server import AnySignatureServer

    decision = {"Irrelevant": 0.3, "Relevant": 0.7}
    triage = {"Irrelevant": 0.6, "Relevant": 0.4}

    def probs(prompt):
        return decision if "[[ ## evidence ## ]]" in prompt else triage

    def clarity(prompt):  # pairs about spies are clear at triage (a direct label); the others are delegated
        return "clear" if "spy" in prompt.lower() else "unclear"

    answers = {f: clarity for f in ("query_interpretability", "information_completeness", "relational_transparency")}
    dataset = load_dataset("msrd")
    train = dataset.split("train")[:8]
    with AnySignatureServer(answers, label_probs=probs) as server:
        lm = make_lm(LMSpec("openai/any-signature", api_base=server.url), "judge")
        ctx = BuildContext(dataset.scheme, RoleLMs.of({r: lm for r in ROLES}), make_knowledge("none", dataset), train)
        program = build("stacked", ctx, judge="hiera", embedder="lexical")
        program.prepare(train, None)
        delegated = judge_one(program, dataset.split("dev")[0]._replace(query="a film about a dog"))
        direct = judge_one(program, dataset.split("dev")[1]._replace(query="tom cruise spy movie"))
    assert delegated["error"] is None and direct["error"] is None
    assert delegated["fields"]["llm_probs"] == decision and delegated["lm_calls"] >= 3
    assert direct["fields"]["llm_probs"] == triage and direct["lm_calls"] == 1
    assert sum(delegated["fields"]["label_probs"].values()) == pytest.approx(1.0)  # the stacked combination
    with pytest.raises(ValueError, match="hiera"):
        build("stacked", ctx, judge="dream")


@pytest.mark.slow
def test_bench_stacked_row_is_the_stacked_method_fitted_on_train(tmp_path, monkeypatch):
    """The bench's "stacked (fitted on train)" row gives the labels `optimize.compile --method stacked` then
    `eval.run --judge ART` give (its --compiled row) on the same dev pairs; after the compile, DSPy's cache (a user's:
    on disk, shared by the two commands) answers every train judgment the bench asks for; best_local.json records a
    recipe. Slow (the 300 train pairs judged twice): the default suite checks the prompts the cache needs byte for
    byte (`test_eval_run_on_train_sends_the_stacked_methods_train_prompts_byte_for_byte`) and the bench's stacked row
    fitted on train (`test_three_level_table_fits_on_train_and_records_its_summary`)."""
    monkeypatch.setenv("HIERA_REFERENCE", "none")
    art = tmp_path / "stacked.json"
    with LogprobServer(relevance_answer) as server:
        lm = ["--lm", "openai/fake-logprobs", "--api-base", server.url]
        run_module("optimize.compile", "--dataset", "msrd", "--method", "stacked", "--set", "judge=zero-shot", "--set",
                   "embedder=lexical", "--optimizer", "none", "--budget", "smoke", "--skip-before", "--out", art, *lm,
                   cwd=tmp_path)
        compiled_calls = len(server.requests)
        run_bench("local_probs", "--limit", "16", "--reasoning-limit", "0", "--compiled", art, *lm, "--out-dir",
                  tmp_path / "results", cwd=tmp_path)
        text = (tmp_path / "results" / "local_probs.md").read_text()
        bench_calls = [r for r in server.requests[compiled_calls:]  # zero-shot+probs's (not reasoning+probs's)
                       if "`reasoning`" not in r["messages"][0]["content"]]
    assert compiled_calls >= 300  # the stacked method judged every train pair
    assert len(bench_calls) <= 16  # its 300 train distributions came from the cache; at most the dev pairs are new
    lines = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in text.splitlines() if line.startswith("|")}
    stacked, compiled = lines["stacked (fitted on train)"], lines["compiled best (stacked.json)"]
    assert stacked[1:5] == compiled[1:5]  # n, kappa with CI, accuracy, McNemar vs embed-lr
    for name in ("embed-lr", "zero-shot", "zero-shot+probs (argmax)", "zero-shot+probs (thresholds tuned on train)",
                 "cascade@0.3 (stacked on routed pairs)"):
        assert name in lines
    best = json.loads((tmp_path / "results" / "best_local.json").read_text())
    assert best["method"] in {"stacked", "zero-shot+probs", "zero-shot"} and "compile" in best
    assert best["measured"]["goal_met"] is False  # 16 pairs never meet a goal set on all 300
