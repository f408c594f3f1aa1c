"""A compiled judge whose grades are not the data's scheme is refused before any pair is judged, and a labelling run
that an earlier version judged that way (then crashed on its export, and again on every resume) resumes and exports
once given the judge's scheme: nothing judged is lost."""

from __future__ import annotations

import json

import pytest

from hiera_dspy.cli import main as console
from hiera_dspy.jobs import preparing
from hiera_dspy.store.run_store import RunStore

PAIRS = [{"id": f"q{q}p{i}", "query_id": f"q{q}", "query": f"red shoes {q}", "item_title": f"item {q}-{i}",
          "item_text": f"red shoes {q} leather" if i % 2 == 0 else "blue hat", "label": str(1 - i % 2)}
         for q in range(8) for i in range(4)]


@pytest.fixture
def judge(tmp_path, monkeypatch):
    """A two-grade judge (Bad < Good: embed-lr on lexical features, no model download) and the same pairs graded 0/1."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HIERA_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("HIERA_NO_PROGRESS", "1")
    monkeypatch.setenv("HIERA_REFERENCE", "off")
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    console.main(["compile", "--dataset", "jsonl:pairs.jsonl", "--labels", "Bad,Good", "--split", "all",
                  "--method", "embed-lr", "--set", "embedder=lexical", "--set", "features=base",
                  "--artifact", "judge.json", "--skip-before"])
    return tmp_path


def label(*scheme: str) -> list[str]:
    return ["label", "--dataset", "jsonl:pairs.jsonl", *scheme, "--judge", "judge.json", "--out", "out"]


def judged(folder) -> int:
    with RunStore(folder / "runs" / "store.sqlite") as store:
        return sum(store.count(run_id) for run_id in store.run_ids())


def test_a_judge_of_other_grades_is_refused_before_any_pair_is_judged(judge, capsys):
    before = judged(judge)
    with pytest.raises(SystemExit) as stop:
        console.main(label("--labels", "No,Yes"))
    assert stop.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: --judge judge.json: the judge grades Bad < Good") and "--labels 'Bad,Good'" in err
    assert judged(judge) == before  # nothing judged, nothing paid


def test_a_run_judged_under_the_wrong_scheme_resumes_in_the_judges(judge, capsys, monkeypatch):
    before = judged(judge)  # the compile's own dev runs
    with monkeypatch.context() as old:  # an earlier version: no check, every pair judged, then the export crashed
        old.setattr(preparing, "judge_scheme", lambda judge, doc, data: preparing.LabelScheme.from_dict(doc["scheme"]))
        with pytest.raises(ValueError):
            console.main(label("--labels", "No,Yes"))
    n = judged(judge) - before
    assert n == len(PAIRS)
    console.main(label("--labels", "Bad,Good"))
    err = capsys.readouterr().err
    assert "its labels are read in the scheme Bad < Good" in err and f"{n} of {n} judgments already done" in err
    assert judged(judge) == before + n  # resumed: no pair judged again
    qrels = (judge / "out" / "qrels.txt").read_text().splitlines()
    assert len(qrels) == len(PAIRS) and {line.split()[-1] for line in qrels} <= {"0", "1"}
    metrics = json.loads((judge / "out" / "metrics.json").read_text())
    assert metrics["n"] == len(PAIRS)  # gold read again in the judge's scheme
