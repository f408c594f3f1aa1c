"""Artifacts: save/load round trip, no secrets, and a loaded judge embedded in (and compiled with) a parent module."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest

from hiera_dspy.artifacts.judge_file import FORMAT, ArtifactError, load_judge, read_artifact, refuse_secrets, save_judge
from hiera_dspy.jobs.optimizers import Budget, _bootstrap, examples
from hiera_dspy.labels import get_scheme
from hiera_dspy.lm.roles import ROLES, LMSpec, build_lms
from hiera_dspy.methods import BuildContext, build

MSRD = get_scheme("msrd")
JUDGE_PREDICTORS = ["judge.triage", "judge.decide.predict", "relation.plan", "relation.synthesize",
                    "relation.query_analyzer.analyze", "relation.query_analyzer.answer",
                    "relation.item_analyzer.analyze", "relation.item_analyzer.answer"]


def answers(h, pairs):
    gold = {p.query: p.label for p in pairs}
    return {"relational_transparency": "unclear", "label": lambda prompt: gold.get(h.query_of(prompt), "Relevant")}


def compiled_judge(h, msrd, lms):
    train = msrd.split("train", 3)
    program = build("hiera", BuildContext(MSRD, lms))
    compiled = _bootstrap(program, examples(train), [], Budget(3, 0, 2, "bootstrap"), 0, lms, 1)
    compiled.method, compiled.config = program.method, program.config
    compiled.judge.decide.predict.signature = compiled.judge.decide.predict.signature.with_instructions(
        "CUSTOM INSTRUCTIONS for the decision.")
    return compiled


def test_round_trip(h, msrd, tmp_path):
    pairs = msrd.split("train", 3) + msrd.split("dev", 4)
    lms = h.make_role_lms(answers(h, pairs))
    program = compiled_judge(h, msrd, lms)
    path = save_judge(program, tmp_path / "judge.json", scheme=MSRD, lms=lms, knowledge="none", dataset="msrd",
                      metrics={"accuracy": 1.0})
    assert not list(tmp_path.glob("*.tmp"))
    doc = read_artifact(path)
    assert doc["format"] == FORMAT and doc["method"] == "hiera" and doc["metrics"] == {"accuracy": 1.0}
    assert doc["config"]["specialists"] == ["query", "item"]
    assert doc["scheme"] == MSRD.to_dict()
    assert "dspy" in doc["versions"]

    loaded_lms = h.make_role_lms(answers(h, pairs))
    loaded = load_judge(path, lms=loaded_lms)
    assert loaded.dump_state() == program.dump_state()
    assert loaded.scheme == MSRD and loaded.method == "hiera" and loaded._compiled is False
    assert loaded.judge.decide.predict.signature.instructions == "CUSTOM INSTRUCTIONS for the decision."
    assert len(loaded.judge.decide.predict.demos) == 2

    for p in msrd.split("dev", 4):
        a, b = program(**p.inputs()), loaded(**p.inputs())
        assert (a.label, a.delegated, a.evidence, a.reasoning) == (b.label, b.delegated, b.evidence, b.reasoning)
        # the very same prompts (instructions and demos included) reached the LM
        assert lms["judge"].history[-1]["messages"] == loaded_lms["judge"].history[-1]["messages"]
    assert "CUSTOM INSTRUCTIONS" in json.dumps(loaded_lms["judge"].history[-1]["messages"])


def test_load_refuses_foreign_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ValueError, match="not a"):
        read_artifact(bad)
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({"format": FORMAT, "format_version": 999}))
    with pytest.raises(ValueError, match="upgrade"):
        read_artifact(newer)


def test_artifact_holds_no_api_key(monkeypatch, tmp_path):
    secret = "sk-test-0123456789-very-secret"
    monkeypatch.setenv("HIERA_TEST_KEY", secret)
    specs = {role: LMSpec(model="openai/gpt-4o-mini", api_key_env="HIERA_TEST_KEY", api_base="http://127.0.0.1:9/v1")
             for role in ROLES}
    lms = build_lms(specs)  # real dspy.LMs holding the key (no call is made)
    assert lms["judge"].kwargs["api_key"] == secret
    program = build("hiera", BuildContext(MSRD, lms))
    program.judge.triage.lm = lms["judge"]  # even a predictor-level LM does not leak its key
    path = save_judge(program, tmp_path / "j.json", scheme=MSRD, lms=lms, knowledge="none", dataset="msrd")
    text = path.read_text()
    assert secret not in text
    doc = json.loads(text)
    # model names and (for information) the endpoint; key variables are the caller's, predictor LMs are not kept
    assert doc["lms"]["judge"] == {"model": "openai/gpt-4o-mini", "api_base": "http://127.0.0.1:9/v1",
                                   "temperature": 0.0}
    assert "HIERA_TEST_KEY" not in text and all(state["lm"] is None for state in doc["state"].values())


@pytest.mark.parametrize("obj", [{"api_key": "x"}, {"lms": {"judge": {"api_key": "x"}}}, {"API-KEY": "x"},
                                 {"openai_api_key": "x"}, [{"password": "p"}], {"x": [{"token": "t"}]},
                                 {"client_secret": "s"}, {"Authorization": "Bearer x"}])
def test_refuse_secrets_raises(obj):
    with pytest.raises(ValueError, match="secret"):
        refuse_secrets(obj)


@pytest.mark.parametrize("obj", [{"api_key_env": "OPENAI_API_KEY"}, {"api_key": None}, {"api_key": ""},
                                 {"max_tokens": 100}, {"token": 3}, {"tokens": "many"}, {"a": [1, "api_key"]}])
def test_refuse_secrets_allows(obj):
    refuse_secrets(obj)


def test_save_refuses_a_secret_in_the_config(h, tmp_path):
    lms = h.make_role_lms()
    program = build("hiera", BuildContext(MSRD, lms))
    program.config = {**program.config, "api_key": "sk-oops"}
    with pytest.raises(ValueError, match="secret"):
        save_judge(program, tmp_path / "j.json", scheme=MSRD, lms=lms, knowledge="none", dataset="msrd")
    assert not (tmp_path / "j.json").exists()


# --- a loaded judge inside another program ------------------------------------------------------------------------

class Reranker(dspy.Module):
    """Judges every candidate and sorts them, most relevant first (stable)."""

    def __init__(self, judge):
        super().__init__()
        self.judge = judge
        self.order = list(judge.scheme.labels)

    def forward(self, query: str, candidates: list[dict]) -> dspy.Prediction:
        labels = [self.judge(query=query, item_title=c["title"], item_text=c["text"]).label for c in candidates]
        ranked = sorted(zip(candidates, labels), key=lambda cl: -self.order.index(cl[1]))
        return dspy.Prediction(ranking=[c["title"] for c, _ in ranked], grades=[lab for _, lab in ranked])


def reranker_answers(h):
    return {"relational_transparency": "unclear",
            "label": lambda prompt: "Relevant" if "Title: Mission" in prompt else "Irrelevant"}


CANDIDATES = [{"title": "Toy Story", "text": "Toys come alive."},
              {"title": "Mission: Impossible", "text": "An IMF agent is framed."},
              {"title": "Alien", "text": "A creature on a spaceship."}]


@pytest.fixture
def artifact(h, msrd, tmp_path):
    lms = h.make_role_lms(answers(h, msrd.split("train", 3)))
    program = compiled_judge(h, msrd, lms)
    return save_judge(program, tmp_path / "judge.json", scheme=MSRD, lms=lms, knowledge="none", dataset="msrd")


def test_embedded_judge_predictors_are_visible(h, artifact):
    parent = Reranker(load_judge(artifact, lms=h.make_role_lms(reranker_answers(h))))
    names = [n for n, _ in parent.named_predictors()]
    assert names == [f"judge.{n}" for n in JUDGE_PREDICTORS]
    out = parent(query="tom cruise spy movie", candidates=CANDIDATES)
    assert out.ranking == ["Mission: Impossible", "Toy Story", "Alien"]
    assert out.grades == ["Relevant", "Irrelevant", "Irrelevant"]


def test_parent_save_and_load(h, artifact, tmp_path):
    lms = h.make_role_lms(reranker_answers(h))
    parent = Reranker(load_judge(artifact, lms=lms))
    parent.judge.judge.triage.signature = parent.judge.judge.triage.signature.with_instructions("PARENT-TUNED")
    saved = tmp_path / "parent.json"
    parent.save(str(saved))
    state = json.loads(saved.read_text())
    assert "judge.judge.triage" in state and "judge.relation.plan" in state

    fresh = Reranker(load_judge(artifact, lms=lms))
    assert fresh.dump_state() != parent.dump_state()
    fresh.load(str(saved))
    assert fresh.dump_state() == parent.dump_state()
    assert fresh.judge.judge.triage.signature.instructions == "PARENT-TUNED"
    assert len(fresh.judge.judge.decide.predict.demos) == 2
    assert fresh(query="q", candidates=CANDIDATES).ranking[0] == "Mission: Impossible"


def test_saving_leaves_a_compiled_program_as_it_is(h, msrd, tmp_path):
    """A compiled program keeps its `_compiled` flag through save_judge, and its state is saved in full."""
    lms = h.make_role_lms(answers(h, msrd.split("train", 3)))
    program = compiled_judge(h, msrd, lms)
    assert program._compiled is True
    path = save_judge(program, tmp_path / "judge.json", scheme=MSRD, lms=lms, knowledge="none", dataset="msrd")
    assert program._compiled is True
    assert sorted(read_artifact(path)["state"]) == sorted(JUDGE_PREDICTORS)


def test_parent_can_be_compiled_further(h, artifact):
    lms = h.make_role_lms(reranker_answers(h))
    parent = Reranker(load_judge(artifact, lms=lms))
    trainset = [dspy.Example(query=q, candidates=CANDIDATES, top="Mission: Impossible").with_inputs("query",
                                                                                                    "candidates")
                for q in ("tom cruise spy movie", "ethan hunt", "impossible missions")]

    def metric(example, pred, trace=None):
        return pred.ranking[0] == example.top

    compiled = dspy.BootstrapFewShot(metric=metric, max_bootstrapped_demos=2, max_labeled_demos=0,
                                     max_rounds=1).compile(parent, trainset=trainset)
    predictors = dict(compiled.named_predictors())
    assert set(predictors) == {f"judge.{n}" for n in JUDGE_PREDICTORS}
    assert all(p.demos for p in predictors.values())
    assert {d["query"] for d in predictors["judge.judge.decide.predict"].demos} <= {e.query for e in trainset}
    assert compiled(query="x", candidates=CANDIDATES).ranking[0] == "Mission: Impossible"


def test_ensemble_pool_is_recorded_and_rebuilt(tmp_path):
    """--blend-lms models (the ensemble pool) travel in the artifact: load_judge rebuilds the same pool, and the run
    identity names it. Each of its LMs is built on first use."""
    import argparse

    from hiera_dspy.cli.lms import add_lm_arguments, lms_from_args

    parser = argparse.ArgumentParser()
    add_lm_arguments(parser)
    args = parser.parse_args(["--lm", "openai/judge-model", "--api-base", "http://127.0.0.1:9/v1",
                              "--blend-lms", "openai/a, openai/b,openai/c"])
    lms = lms_from_args(args)
    assert list(lms.ensemble) == ["openai/a", "openai/b", "openai/c"] and lms.describe()["blend"] == \
        "openai/a,openai/b,openai/c"
    assert lms.built() == []  # nothing built by naming the pool
    program = build("llm-blender", BuildContext(MSRD, lms))
    path = save_judge(program, tmp_path / "blend.json", scheme=MSRD, lms=lms, knowledge="none", dataset="msrd")
    doc = read_artifact(path)
    assert "blend_lms" not in json.loads(path.read_text())
    assert doc["ensemble"]["openai/b"] == {"model": "openai/b", "api_base": "http://127.0.0.1:9/v1",
                                          "temperature": 0.0}

    loaded = load_judge(path)  # no LMs given: the recorded models, pool included, but never the recorded endpoint
    assert list(loaded.pool) == ["openai/a", "openai/b", "openai/c"]
    assert loaded.pool["openai/c"].for_role("judge").model == "openai/c"
    assert loaded.pool["openai/c"].for_role("judge").kwargs.get("api_base") is None
    at = load_judge(path, api_base="http://127.0.0.1:8/v1")  # the caller's endpoint
    assert at.pool["openai/c"].for_role("judge").kwargs.get("api_base") == "http://127.0.0.1:8/v1"

    # eval.run --judge: the recorded pool unless --blend-lms overrides it
    rebuilt = lms_from_args(parser.parse_args(["--lm", "openai/x"]), doc["lms"], doc["ensemble"])
    assert list(rebuilt.ensemble) == ["openai/a", "openai/b", "openai/c"]
    override = lms_from_args(parser.parse_args(["--lm", "openai/x", "--blend-lms", "openai/z"]), doc["lms"],
                             doc["ensemble"])
    assert list(override.ensemble) == ["openai/z"]
    assert "blend" not in build_lms({"judge": LMSpec(model="openai/x")}).describe()


def test_an_artifact_that_recorded_the_pool_as_blend_lms_still_loads(tmp_path):
    """Artifacts written before the pool had one name recorded it under `blend_lms`: read as `ensemble`, rebuilt."""
    from hiera_dspy.lm.roles import RoleLMs

    lms = build_lms({"judge": LMSpec(model="openai/j")}, {"openai/a": LMSpec(model="openai/a"),
                                                           "openai/b": LMSpec(model="openai/b", max_tokens=64)})
    path = save_judge(build("llm-blender", BuildContext(MSRD, lms)), tmp_path / "new.json", scheme=MSRD, lms=lms,
                      knowledge="none", dataset="msrd")
    doc = json.loads(path.read_text())
    doc["blend_lms"] = doc.pop("ensemble")  # the old format, as commit ec833eb wrote it
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    assert read_artifact(old)["ensemble"] == {"openai/a": {"model": "openai/a", "temperature": 0.0},
                                              "openai/b": {"model": "openai/b", "max_tokens": 64, "temperature": 0.0}}
    loaded = load_judge(old)
    assert isinstance(loaded.lms, RoleLMs) and list(loaded.pool) == ["openai/a", "openai/b"]
    assert loaded.pool["openai/b"].for_role("judge").kwargs["max_tokens"] == 64
    doc["blend_lms"]["openai/a"] = "not an object"
    old.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match="'ensemble.openai/a': expected an object"):
        read_artifact(old)


# --- artifacts compiled before directed consultation (tests/fixtures/*-v1.json, made by commit adcbb4c) -------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("method", ["hiera", "judge-only"])
def test_artifacts_from_before_directed_consultation_still_load(h, method, capsys):
    doc = read_artifact(FIXTURES / f"{method}-v1.json")
    loaded = load_judge(FIXTURES / f"{method}-v1.json", lms=h.make_role_lms({"relational_transparency": "unclear"}))
    state = loaded.dump_state()
    old_decide = "judge.decide.predict"  # judge-only's decision was a ChainOfThought; now a Predict
    new_decide = "judge.decide.predict" if method == "hiera" else "judge.decide"
    assert state[new_decide]["demos"] == doc["state"][old_decide]["demos"]  # the learned demos survive
    assert state[new_decide]["signature"]["instructions"] == doc["state"][old_decide]["signature"]["instructions"]
    # fields are paired by name, not position: the new `triage` input gets its own prefix and description
    prefixes = [f["prefix"] for f in state["judge.triage"]["signature"]["fields"]]
    assert prefixes[-2:] == ["Reasoning:", "Label:"]
    descriptions = json.dumps(state)
    assert "at most 20 words" not in descriptions  # the paper profile's descriptions, not the saved caps
    err = capsys.readouterr().err
    if method == "hiera":
        assert "predates relation.query_analyzer.answer, relation.item_analyzer.answer" in err
        analyze = "relation.query_analyzer.analyze"
        assert state[analyze]["demos"] == doc["state"][analyze]["demos"]
    out = loaded(query="gray dresser", item_title="Mercury dresser", item_text="metallic mercury finish")
    assert out.label in MSRD.labels


# --- a broken or hostile artifact fails cleanly (issue 11, item 10) -------------------------------------------------

@pytest.fixture
def good_doc(h, tmp_path):
    lms = h.make_role_lms()
    lms.roles.specs.update({role: LMSpec(model="openai/recorded") for role in ROLES})  # as if built from specs
    path = save_judge(build("zero-shot", BuildContext(MSRD, lms)), tmp_path / "good.json", scheme=MSRD, lms=lms,
                      knowledge="none", dataset="msrd")
    return json.loads(path.read_text())


def _edited(doc: dict, edit) -> dict:
    doc = json.loads(json.dumps(doc))
    edit(doc)
    return doc


BROKEN = {
    "bad JSON": ("{not json", "not valid JSON"),
    "a list": ("[1, 2, 3]", "expected a JSON object"),
    "not UTF-8": (b"\xff\xfe\x00garbage", "not UTF-8"),
    "empty": ("", "not valid JSON"),
}
EDITS = {
    "no state": (lambda d: d.pop("state"), "missing 'state'"),
    "no method": (lambda d: d.pop("method"), "missing 'method'"),
    "lms a list": (lambda d: d.update(lms=["openai/x"]), "'lms'.*expected an object"),
    "model a number": (lambda d: d["lms"]["judge"].update(model=7), r"'lms.judge.model'.*expected a string"),
    "max_tokens text": (lambda d: d["lms"]["judge"].update(max_tokens="many"), r"'lms.judge.max_tokens'"),
    "config a string": (lambda d: d.update(config="x"), "'config'.*expected an object"),
    "version text": (lambda d: d.update(format_version="1"), "'format_version'.*expected an integer"),
    "demo not an object": (lambda d: next(iter(d["state"].values())).update(demos=["x"]), r"'state\..*\.demos\.0'"),
    "no signature": (lambda d: next(iter(d["state"].values())).pop("signature"), r"missing 'state\..*\.signature'"),
    "state entry a list": (lambda d: d["state"].update({next(iter(d["state"])): [1]}),
                           r"'state\..*'.*expected an object"),
    "scheme mistyped": (lambda d: d.update(scheme={"labels": 3}), "'scheme'"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_unreadable_artifact_raises_artifact_error(tmp_path, name):
    from hiera_dspy.artifacts.judge_file import ArtifactError

    content, problem = BROKEN[name]
    path = tmp_path / "broken.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    for call in (read_artifact, load_judge):
        with pytest.raises(ArtifactError, match=problem) as caught:
            call(path)
        assert isinstance(caught.value, ValueError) and str(path) in str(caught.value)
        assert "\n" not in str(caught.value)  # one line


@pytest.mark.parametrize("name", sorted(EDITS))
def test_malformed_artifact_names_the_field(good_doc, tmp_path, name):
    from hiera_dspy.artifacts.judge_file import ArtifactError

    edit, problem = EDITS[name]
    path = tmp_path / "malformed.json"
    path.write_text(json.dumps(_edited(good_doc, edit)))
    with pytest.raises(ArtifactError, match=problem) as caught:
        load_judge(path)
    assert str(path) in str(caught.value)


def test_artifact_over_the_size_cap_is_refused_unread(tmp_path, monkeypatch):
    from hiera_dspy.artifacts import judge_file as artifacts

    path = tmp_path / "huge.json"
    with open(path, "wb") as fh:  # sparse: 50 MB + 1 byte on disk costs nothing
        fh.truncate(50 * 2**20 + 1)
    monkeypatch.setattr(artifacts.Path, "read_text", lambda *a, **k: pytest.fail("read a file over the cap"))
    monkeypatch.setattr(artifacts.Path, "read_bytes", lambda *a, **k: pytest.fail("read a file over the cap"))
    with pytest.raises(artifacts.ArtifactError, match=rf"{path}.*50 MB"):
        read_artifact(path)


def test_missing_file_and_folder_are_artifact_errors(tmp_path):
    from hiera_dspy.artifacts.judge_file import ArtifactError

    with pytest.raises(ArtifactError, match="no such file"):
        load_judge(tmp_path / "missing.json")
    with pytest.raises(ArtifactError, match="a folder, not an artifact file"):
        read_artifact(tmp_path)


@pytest.mark.parametrize("edit, problem", [
    (lambda d: d.update(method="no-such-method"), "unknown method 'no-such-method'"),
    (lambda d: d["config"].update(bogus_option=1), "config.*bogus_option"),
    (lambda d: d.update(state={"judge.ghost": next(iter(d["state"].values()))}), "state.*judge.ghost"),
], ids=["unknown method", "unknown config key", "state for a missing predictor"])
def test_artifact_the_graph_cannot_take_is_an_artifact_error_not_systemexit(good_doc, tmp_path, edit, problem):
    from hiera_dspy.artifacts.judge_file import ArtifactError

    path = tmp_path / "foreign.json"
    path.write_text(json.dumps(_edited(good_doc, edit)))
    with pytest.raises(ArtifactError, match=problem):
        load_judge(path)


def test_library_build_raises_valueerror_for_an_unknown_method():
    with pytest.raises(ValueError, match="unknown method 'nope'") as caught:
        build("nope", BuildContext(MSRD))
    assert not isinstance(caught.value, SystemExit)


def test_eval_run_turns_an_artifact_error_into_a_one_line_exit(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    proc = subprocess.run([sys.executable, "-m", "eval.run", "--dataset", "msrd", "--judge", str(bad), "--lm",
                           "openai/x", "--knowledge", "none", "--limit", "1"], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-1500:]
    assert proc.stderr.strip().splitlines()[-1] == f"error: {bad}: expected a JSON object at the top level, got a list"
    assert "Traceback" not in proc.stderr
