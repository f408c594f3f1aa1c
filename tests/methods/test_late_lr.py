"""late-lr, the offline passage judge: compiled from a TREC folder, its grade thresholds chosen out of fold by query
(recorded in the artifact with their evidence), judging another folder through `hiera-dspy run`, the same labels
after a reload, two-label schemes, and a clear refusal when there are fewer train queries than folds. The late
interaction features come from a word-vector encoder here (tests/signals/test_late_interaction.py); the real MiniLM
path is in the slow test there and in bench/trecdl.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hiera_dspy.artifacts.format import read_artifact
from hiera_dspy.artifacts.judge_file import load_judge
from hiera_dspy.cli import main as console
from hiera_dspy.labels import get_scheme
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.records import Pair
from hiera_dspy.signals import feature_sets, feedback
from hiera_dspy.signals.late_interaction import LateInteraction
from hiera_dspy.testing import write_trec_folder
from tests.signals.test_late_interaction import WordEncoder

JUDGE = ["--method", "late-lr", "--knowledge", "none", "--skip-before"]


@pytest.fixture
def word_late(monkeypatch):
    """late_features and the feedback stage's passage vectors from word vectors (no model weights)."""
    late = LateInteraction(WordEncoder())
    monkeypatch.setattr(feature_sets, "_late", late.features)
    monkeypatch.setattr(feedback, "_vectors", lambda kind, docs: np.array(late.vectors(docs)))  # the stage's vectors
    return late


def hiera(*argv) -> None:
    assert console.main([str(a) for a in argv]) == 0


def test_compile_a_trec_folder_and_judge_another(word_late, tmp_path, capsys):
    train = write_trec_folder(tmp_path / "dl", queries=20, passages=8)
    other = write_trec_folder(tmp_path / "other", queries=8, passages=8, seed=1)
    art = tmp_path / "late.json"
    hiera("compile", "--dataset", f"trec:{train}", "--split", "all", *JUDGE, "--out", art)
    said = capsys.readouterr()
    assert "chosen out of fold, 5 folds by query" in said.err
    dev_in_train = read_artifact(art)["metrics"]["dev_in_train"]
    assert dev_in_train > 0 and f"in-sample: {dev_in_train:,} of the" in said.out  # --split all: dev is train
    grading = read_artifact(art)["extra"]["grading"]
    cuts = grading["thresholds"]
    assert len(cuts) == 3 and cuts == sorted(cuts)
    assert grading["pairs"] == 160 and sum(grading["label_counts"].values()) == 160
    assert grading["out_of_fold"] > 0.3
    out = tmp_path / "runs-other"
    hiera("run", "--dataset", f"trec:{other}", "--split", "all", "--judge", art, "--out", out)
    m = json.loads((out / "metrics.json").read_text())
    assert m["n"] == 64 and m["kappa"] > 0.3 and m["krippendorff_alpha"] > 0.3
    assert sum(1 for row in m["confusion"] if sum(row)) == 4
    predicted = np.array(m["confusion"]).sum(axis=0)
    assert (predicted > 0).sum() >= 3  # the thresholds spread the grades; an argmax says "0" for most pairs


def test_a_reloaded_judge_gives_the_same_labels(word_late, tmp_path):
    from hiera_dspy.data.trec_folder import load

    train = write_trec_folder(tmp_path / "dl", queries=10, passages=8)
    pairs = load(str(train), get_scheme("trec")).split("all")
    program = build("late-lr", BuildContext(get_scheme("trec"), train=pairs)).prepare(pairs)
    art = tmp_path / "late.json"
    from hiera_dspy.artifacts.judge_file import save_judge
    from hiera_dspy.lm.roles import RoleLMs

    save_judge(program, art, scheme=get_scheme("trec"), lms=RoleLMs(), knowledge="none", dataset="trec")
    loaded = load_judge(art)
    for p in pairs[:16]:
        a = program(query=p.query, item_title=p.item_title, item_text=p.item_text)
        b = loaded(query=p.query, item_title=p.item_title, item_text=p.item_text)
        assert a.label == b.label and a.scores == pytest.approx(b.scores)


def _binary_pairs(queries: int) -> list[Pair]:
    pairs = []
    for q in range(queries):
        words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"][q % 6] + f" w{q}"
        for i in range(6):
            text = f"{words} with more" if i % 3 == 0 else f"other things {i} {q}"
            pairs.append(Pair(f"{q}:{i}", words, "", text, "Relevant" if i % 3 == 0 else "Irrelevant", f"q{q}",
                              f"d{q}-{i}"))
    return pairs


def test_two_labels_get_one_cut_on_the_top_probability(word_late):
    scheme = get_scheme("msrd")
    pairs = _binary_pairs(10)
    program = build("late-lr", BuildContext(scheme, train=pairs)).prepare(pairs)
    assert len(program.grading["thresholds"]) == 1 and 0 < program.grading["thresholds"][0] < 1
    labels = [program(query=p.query, item_title="", item_text=p.item_text).label for p in pairs]
    assert labels == [p.label for p in pairs]


def test_fewer_train_queries_than_folds_is_refused_with_what_to_do(word_late):
    pairs = _binary_pairs(3)
    program = build("late-lr", BuildContext(get_scheme("msrd"), train=pairs))
    with pytest.raises(ValueError, match="threshold_folds=5 needs at least as many train queries; 3 given"):
        program.prepare(pairs)
    program = build("late-lr", BuildContext(get_scheme("msrd"), train=pairs), threshold_folds=3).prepare(pairs)
    assert program.grading["chosen_by"] == "out of fold, 3 folds by query"


def test_a_compile_on_the_train_split_scores_dev_out_of_sample(word_late, tmp_path, capsys):
    train = write_trec_folder(tmp_path / "dl", queries=30, passages=8)
    art = tmp_path / "late.json"
    hiera("compile", "--dataset", f"trec:{train}", *JUDGE, "--out", art)
    metrics = read_artifact(art)["metrics"]
    assert metrics["n_dev"] > 0 and metrics["dev_in_train"] == 0 and "in-sample" not in capsys.readouterr().out


def test_a_judge_says_once_when_this_machine_reads_another_pass_than_its_thresholds_saw(word_late, monkeypatch,
                                                                                       capsys):
    from hiera_dspy.methods import late

    pairs = _binary_pairs(10)
    program = build("late-lr", BuildContext(get_scheme("msrd"), train=pairs)).prepare(pairs)
    assert "late_pass" not in program.grading  # the test's word vectors: no encoder pass was made
    program.grading["late_pass"], program.late_pass = "int8", None  # as loaded from an int8 compile
    monkeypatch.setattr(late, "pass_in_use", lambda: "fp32")  # int8 refused on this machine
    capsys.readouterr()
    program.prefetch(pairs[:4])
    program(query=pairs[0].query, item_title="", item_text=pairs[0].item_text)
    program.prefetch(pairs[4:8])
    err = capsys.readouterr().err
    assert err.count("compiled on the int8 late-interaction pass, judging on fp32 here") == 1
