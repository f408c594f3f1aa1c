"""A team's four-grade guideline file drives thomas, hiera and dream end to end with a fake LM: each prompt holds every
definition verbatim (and the instructions and examples), the labels are the file's grades, one changed definition
is another run id, a compiled judge keeps the guidelines, prompt optimisation leaves them as written, and a learned
judge takes the grades."""

import json
from pathlib import Path

import dspy
import pytest
from method_helpers import judge

from eval import run as eval_run
from hiera_dspy import testing
from hiera_dspy.data.guidelines import read_guidelines
from hiera_dspy.errors import RequestError
from hiera_dspy.lm.roles import RoleLMs
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.testing import fake_lm, sent_texts

FILE = Path(__file__).resolve().parents[1] / "docs_fixtures" / "guidelines.toml"
ANSWERS = {"label": "Good match", "grade": 3, "stance": "relevant",
           **{d: "clear" for d in ("query_interpretability", "information_completeness", "relational_transparency")}}


def context(scheme, answers=ANSWERS):
    lm = fake_lm(answers)
    return BuildContext(scheme=scheme, lms=RoleLMs.of(judge=lm)), lm


@pytest.mark.parametrize("method,expected", [("thomas", "Exact match"), ("hiera", "Good match"),
                                             ("dream", "Good match")])
def test_each_method_judges_by_the_file_and_its_prompt_holds_every_definition(method, expected):
    scheme = read_guidelines(FILE)
    ctx, lm = context(scheme)
    prediction, _ = judge(build(method, ctx), query="tom cruise spy movie", title="Mission: Impossible",
                          text="An agent must find the real spy.")
    assert prediction.label == expected and prediction.label in scheme.labels
    prompt = "\n".join(sent_texts(lm))
    for grade, definition in scheme.definitions.items():
        assert definition in prompt, (method, grade)
    assert scheme.instructions in prompt
    assert "Tom Cruise, but no spying." in prompt  # a worked example's reason, as written


def test_a_delegated_hiera_judgment_reads_the_definitions_at_every_labelling_step():
    scheme = read_guidelines(FILE)
    ctx, lm = context(scheme, {**ANSWERS, "query_interpretability": "unclear"})
    prediction, ledger = judge(build("hiera", ctx))
    assert prediction.delegated and prediction.label == "Good match"
    labelled = [t for t in sent_texts(lm, "user") if "[[ ## label_definitions ## ]]" in t]
    assert len(labelled) >= 2 and all(scheme.definitions["Related"] in t for t in labelled)


def test_one_changed_definition_is_another_run(tmp_path):
    changed = tmp_path / "guidelines.toml"
    changed.write_text(FILE.read_text().replace("not what the searcher wants", "not what the searcher asked for"))
    lms = RoleLMs.of(judge=dspy.LM("openai/x"))
    ids = {}
    for name, path in (("docs", FILE), ("changed", changed)):
        ctx, _ = context(read_guidelines(path))
        for method in ("thomas", "hiera", "dream"):
            spec = RunSpec.judging(build(method, ctx), dataset="jsonl:pairs.jsonl", split="all", lms=lms,
                                   knowledge="none")
            ids[name, method] = spec.run_id
            assert spec.identity()["guidelines"] == read_guidelines(path).guidelines
    assert all(ids["docs", m] != ids["changed", m] for m in ("thomas", "hiera", "dream"))


def test_optimisation_tunes_instructions_around_the_guidelines_and_an_artifact_keeps_them(tmp_path):
    from hiera_dspy.artifacts.judge_file import load_judge, read_artifact, save_judge

    scheme = read_guidelines(FILE)
    ctx, lm = context(scheme)
    program = build("thomas", ctx)
    (_, predictor), = program.named_predictors()
    predictor.signature = predictor.signature.with_instructions("AN OPTIMISER'S INSTRUCTIONS")  # what MIPRO rewrites
    path = save_judge(program, tmp_path / "judge.json", scheme=scheme, lms=ctx.lms, knowledge="none", dataset="x")
    assert read_artifact(path)["scheme"]["guidelines"] == scheme.guidelines
    loaded = load_judge(path, lms=ctx.lms)
    judge(loaded)
    system, user = sent_texts(lm, "system")[-1], sent_texts(lm, "user")[-1]
    assert "AN OPTIMISER'S INSTRUCTIONS" in system
    assert all(definition in user for definition in scheme.definitions.values())  # an input: never rewritten
    assert loaded.scheme.guidelines == scheme.guidelines and loaded.scheme.examples == scheme.examples


def test_a_learned_judge_takes_the_files_grades():
    scheme = read_guidelines(FILE)
    train = testing.labelled_pairs(scheme, per_label=6)
    program = build("embed-lr", BuildContext(scheme=scheme, train=train), embedder="lexical")
    program.prepare(train)
    prediction, _ = judge(program, query=train[0].query, title=train[0].item_title, text=train[0].item_text)
    assert prediction.label in scheme.labels and set(prediction.scores) == set(scheme.labels)


def test_eval_run_with_guidelines_labels_by_the_file(tmp_path, isolated, patch_make_lm):
    patch_make_lm({"grade": 2})
    rows = [{"id": f"p{i}", "query": "tom cruise spy movie", "item_title": f"T{i}", "item_text": "x",
             "label": ["Off-topic", "Related", "Good match", "Exact match"][i % 4]} for i in range(8)]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    common = ["--dataset", f"jsonl:{pairs}", "--method", "thomas", "--lm", "fake", "--knowledge", "none"]
    metrics = eval_run.main([*common, "--guidelines", str(FILE), "--out", str(tmp_path / "a")])
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    assert metrics["n"] == 8 and metrics["accuracy"] == 0.25 and metrics["labels"] == list(read_guidelines(FILE).labels)
    assert config["guidelines"] == read_guidelines(FILE).guidelines
    with pytest.raises(RequestError, match="give one"):
        eval_run.main([*common, "--guidelines", str(FILE), "--labels", "a,b", "--out", str(tmp_path / "b")])


def test_the_review_page_shows_the_definitions_and_orders_by_the_votes(tmp_path, isolated, patch_make_lm):
    from eval import label as eval_label
    from hiera_dspy.jobs.preparing import open_store
    from hiera_dspy.review.session import Review

    answers = iter([3, 3, 3] + [3, 0, 0] + [1, 2, 3] * 4)  # pair 1 agreed, pair 2 split 1-2, pair 3 all apart
    patch_make_lm({"grade": lambda prompt: next(answers)})
    rows = [{"id": f"p{i}", "query": "tom cruise spy movie", "item_title": f"T{i}", "item_text": "x"} for i in range(3)]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    done = eval_label.main(["--dataset", f"jsonl:{pairs}", "--guidelines", str(FILE), "--method", "thomas",
                            "--samples", "3", "--lm", "fake", "--knowledge", "none", "--out", str(tmp_path / "out")])
    payload = Review(open_store(), done["run_id"], budget=3).payload()
    scheme = read_guidelines(FILE)
    assert payload["definitions"] == scheme.definitions and payload["instructions"] == scheme.instructions
    assert [e["grade"] for e in payload["examples"]] == ["Exact match", "Related"]
    items = {i["id"]: i for i in payload["items"]}
    assert items["p0"]["machine_label"] == "Exact match" and items["p0"]["confidence"] == 1.0
    assert items["p1"]["machine_label"] == "Off-topic" and items["p1"]["confidence"] == pytest.approx(2 / 3)
    assert items["p2"]["confidence_source"] == "vote-share" and items["p2"]["confidence"] == pytest.approx(1 / 3)
    assert [i["id"] for i in payload["items"]] == ["p2", "p1", "p0"]  # the least sure first
    page = (Path(__file__).resolve().parents[2] / "eval" / "review_page.html").read_text()
    assert "showGuidelines(data)" in page and 'id="definitions"' in page
