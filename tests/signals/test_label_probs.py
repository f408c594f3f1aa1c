"""Label probabilities from token log-probabilities, stacking with the scorer, and the methods built on them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hiera_dspy.data import load_dataset
from hiera_dspy.lm.roles import ROLES, LMSpec, RoleLMs, make_lm
from hiera_dspy.local.logprobs import LogprobRecorder
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.methods.label_probs import expected_relevance, label_distribution, label_for, tune_cuts
from hiera_dspy.runs.runner import judge_one
from hiera_dspy.signals.stacking import Stacker, features, out_of_fold
from tests.signals.logprob_server import LogprobServer

LABELS = ("Irrelevant", "Relevant")


def entry(token, logprob=0.0, top=()):
    return {"token": token, "logprob": logprob, "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]}


def test_distribution_at_the_json_label_position():
    content = [entry('{"'), entry("label"), entry('":'), entry(' "'),
               entry("Re", math.log(0.6), [("Re", math.log(0.6)), ("Ir", math.log(0.3)), ("Not", math.log(0.1))]),
               entry("levant"), entry('"}')]
    dist = label_distribution({"content": content}, LABELS)
    assert dist == pytest.approx({"Irrelevant": 1 / 3, "Relevant": 2 / 3})  # 'Not' names no label: renormalised
    assert expected_relevance(dist, LABELS) == pytest.approx(2 / 3)


def test_distribution_when_the_label_token_carries_the_quote_and_in_chat_format():
    content = [entry('{"label":'), entry(' "Ir', math.log(0.8), [(' "Ir', math.log(0.8)), (' "Rel', math.log(0.2))]),
               entry('relevant"}')]
    assert label_distribution(content, LABELS) == pytest.approx({"Irrelevant": 0.8, "Relevant": 0.2})
    chat = [entry("[[ ## label ## ]]\n"), entry("Rel", -0.1, [("Rel", math.log(0.5)), ("Irrel", math.log(0.5))]),
            entry("evant")]
    assert label_distribution(chat, LABELS) == pytest.approx({"Irrelevant": 0.5, "Relevant": 0.5})


def test_no_distribution_without_a_label_position_or_with_a_shared_first_token():
    assert label_distribution(None, LABELS) is None
    assert label_distribution([entry("I am sorry")], LABELS) is None
    shared = [entry('{"label": "'), entry("Part", -0.1, [("Part", -0.1)]), entry("ial")]
    assert label_distribution(shared, ("Irrelevant", "Partial", "Partially relevant")) is None


def test_cuts_place_a_three_level_scheme_by_expected_relevance():
    labels = ("Irrelevant", "Partially relevant", "Highly relevant")
    assert [label_for(r, labels, [0.7, 1.4]) for r in (0.2, 0.7, 1.39, 1.9)] == [
        "Irrelevant", "Partially relevant", "Partially relevant", "Highly relevant"]
    relevances = [0.1, 0.3, 0.8, 0.9, 1.2, 1.3, 1.8]
    gold = ["Irrelevant", "Irrelevant", "Partially relevant", "Partially relevant", "Highly relevant",
            "Highly relevant", "Highly relevant"]
    cuts = tune_cuts(relevances, gold, labels)
    assert [label_for(r, labels, cuts) for r in relevances] == gold  # argmax-free cuts recover every grade


def test_local_recorder_gives_top_alternatives_and_the_chosen_token():
    vocab = {0: "Ir", 1: "Re", 2: "levant", 3: "x"}
    recorder = LogprobRecorder(2, lambda ids: "".join(vocab[i] for i in ids).encode())
    logits = np.array([1.0, 2.0, 0.0, -1.0], dtype=np.float32)
    assert recorder([5, 6], logits) is logits  # records, never changes
    recorder([5, 6, 0], np.array([0.0, 0.0, 5.0, 0.0], dtype=np.float32))  # the grammar chose 'Ir' (not the top)
    first, second = recorder.token_logprobs()
    logp = logits - np.log(np.exp(logits).sum())
    assert first.token == "Ir" and first.logprob == pytest.approx(logp[0], abs=1e-5)
    assert [t.token for t in first.top] == ["Re", "Ir"]
    assert second.token == "levant"  # the last step: its chosen token was never fed back, so the top one


def test_stacker_learns_from_both_distributions_and_round_trips():
    rng = np.random.default_rng(0)
    gold = ["Relevant" if rng.random() < 0.5 else "Irrelevant" for _ in range(200)]
    noisy = [{"Relevant": p, "Irrelevant": 1 - p} for p in
             (min(0.95, max(0.05, (g == "Relevant") * 0.4 + 0.3 + rng.normal(0, 0.2))) for g in gold)]
    llm = [None if i % 10 == 0 else {"Relevant": float(g == "Relevant") * 0.8 + 0.1,
                                     "Irrelevant": 0.9 - float(g == "Relevant") * 0.8} for i, g in enumerate(gold)]
    stacker = Stacker(LABELS).fit(noisy, llm, gold)
    assert len(features(noisy[0], None, LABELS)) == 3
    pred = [max(d, key=d.get) for d in (stacker.predict_proba(s, m) for s, m in zip(noisy, llm))]
    scorer_only = [max(d, key=d.get) for d in noisy]
    assert sum(p == g for p, g in zip(pred, gold)) > sum(p == g for p, g in zip(scorer_only, gold))
    again = Stacker.from_dict(stacker.to_dict())
    assert again.predict_proba(noisy[3], llm[3]) == stacker.predict_proba(noisy[3], llm[3])
    with pytest.raises(ValueError, match="shape"):
        Stacker.from_dict({**stacker.to_dict(), "coef": [[1.0]]})


def test_out_of_fold_never_predicts_a_pair_with_a_model_that_saw_it():
    items = list(range(23))
    seen = out_of_fold(lambda train, test: [set(train) for _ in test], items, folds=5)
    assert all(i not in s and len(s) >= 18 for i, s in enumerate(seen))


def relevance_answer(prompt: str):
    relevant = "spy" in prompt.lower() or "mission" in prompt.lower()
    return ("Relevant", {"Irrelevant": 0.25, "Relevant": 0.75}) if relevant else \
        ("Irrelevant", {"Irrelevant": 0.9, "Relevant": 0.1})


def served_lms(url: str) -> RoleLMs:
    lm = make_lm(LMSpec("openai/fake-logprobs", api_base=url), "judge")
    return RoleLMs.of({role: lm for role in ROLES})


def test_zero_shot_probs_reads_an_openai_compatible_server(tmp_path):
    dataset = load_dataset("msrd")
    pair = dataset.split("dev", 1)[0]._replace(query="tom cruise spy movie")
    with LogprobServer(relevance_answer) as server:
        program = build("zero-shot+probs", BuildContext(dataset.scheme, served_lms(server.url)))
        row = judge_one(program, pair)
    assert row["error"] is None and row["label"] == "Relevant"
    assert row["fields"]["label_probs"] == pytest.approx({"Irrelevant": 0.25, "Relevant": 0.75})
    assert row["fields"]["expected_relevance"] == pytest.approx(0.75)
    assert server.requests[0]["logprobs"] is True and server.requests[0]["top_logprobs"] == 20
    assert "logprobs" not in row["steps"][0]["outputs"]  # raw token logprobs never reach the run store


def test_endpoint_without_logprobs_keeps_the_sampled_label_and_no_distribution():
    dataset = load_dataset("msrd")
    pair = dataset.split("dev", 1)[0]
    with LogprobServer(relevance_answer, with_logprobs=False) as server:
        program = build("zero-shot+probs", BuildContext(dataset.scheme, served_lms(server.url)), cuts=[0.5])
        row = judge_one(program, pair)
    assert row["error"] is None and row["label"] in LABELS and "label_probs" not in row["fields"]


def test_stacked_fits_on_train_and_cascades_with_combined_probabilities():
    dataset = load_dataset("msrd")
    train, dev = dataset.split("train")[:60], dataset.split("dev")[:40]
    with LogprobServer(relevance_answer) as server:
        ctx = BuildContext(dataset.scheme, served_lms(server.url), train=train)
        program = build("stacked", ctx, embedder="lexical", llm_share=0.5)
        program.prepare(train, dev)
        fitted_calls = len(server.requests)
        rows = [judge_one(program, p) for p in dev[:12]]
        extra = program.dump_extra()
    assert fitted_calls == len(train)  # one LLM call per train pair to fit the stacker
    routed = {r["fields"]["routed"] for r in rows}
    assert routed == {"scorer", "llm"}
    for row in rows:
        if row["fields"]["routed"] == "llm":
            assert sum(row["fields"]["label_probs"].values()) == pytest.approx(1.0)
            assert row["fields"]["llm_probs"] is not None and row["lm_calls"] == 1
        else:
            assert row["lm_calls"] == 0
    clone = build("stacked", BuildContext(dataset.scheme, served_lms("http://127.0.0.1:9/v1")), embedder="lexical",
                  llm_share=0.5)
    clone.load_extra(extra)
    assert clone.stacker.to_dict() == program.stacker.to_dict() and clone.scorer_state.tau == program.scorer_state.tau


def test_best_local_recipe_rebuilds_with_optimize_compile_and_judges_with_eval_run(tmp_path, monkeypatch):
    import eval.run as run_cli
    import optimize.compile as compile_cli

    monkeypatch.setenv("HIERA_REFERENCE", "none")
    art, data = tmp_path / "stacked.json", tmp_path / "pairs.jsonl"
    msrd = load_dataset("msrd")
    with open(data, "w") as fh:  # a small labelled file: its train and dev pools keep the test fast
        for p in msrd.split("train")[:40] + msrd.split("dev")[:40]:
            fh.write(json.dumps({**p._asdict(), "label": p.label}) + "\n")
    with LogprobServer(relevance_answer) as server:
        lm = ["--lm", "openai/fake-logprobs", "--api-base", server.url]
        compile_cli.main(["--dataset", f"jsonl:{data}", "--scheme", "msrd", "--method", "stacked", "--set", "judge=zero-shot", "--set",
                          "llm_share=0.5", "--set", "embedder=lexical", "--optimizer", "none", "--budget", "smoke",
                          "--knowledge", "none", "--skip-before", "--out", str(art), *lm])
        fitted = len(server.requests)
        metrics = run_cli.main(["--dataset", f"jsonl:{data}", "--scheme", "msrd", "--split", "dev", "--judge", str(art),
                                "--limit", "6",
                                "--knowledge", "none", "--out", str(tmp_path / "run"), *lm])
    train = load_dataset(f"jsonl:{data}", msrd.scheme).splits["train"]
    assert len(train) + 4 >= fitted >= len(train) > 10  # every train pair once to fit, then <= 4 dev pairs
    doc = json.loads(art.read_text())
    assert doc["extra"]["stacker"]["labels"] == ["Irrelevant", "Relevant"] and doc["extra"]["tau"] is not None
    assert metrics["n"] == 6 and metrics["errors"] == 0
