"""The feedback stage on late-lr: learned at compile on simulated known judgments (recorded in the artifact with its
policies and k), read back from the artifact, reading a set's known judgments (`ReadsKnown`), and judging exactly as
before where a query has none, where no judgment is known, for an artifact without the stage and with
`feedback=false`. Word vectors stand in for MiniLM here (tests/methods/test_late_lr.py's fixture)."""

from __future__ import annotations

import numpy as np
import pytest

from hiera_dspy.artifacts.format import read_artifact
from hiera_dspy.artifacts.judge_file import load_judge, save_judge
from hiera_dspy.data.known import Known, KnownJudgment, ReadsKnown
from hiera_dspy.data.trec_folder import load
from hiera_dspy.labels import get_scheme
from hiera_dspy.lm.roles import RoleLMs
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.methods.feedback import POLICIES
from hiera_dspy.testing import write_trec_folder
from tests.methods.test_late_lr import word_late  # noqa: F401 - the fixture

SCHEME = get_scheme("trec")


def _pairs(tmp_path, name, queries, seed):
    return load(str(write_trec_folder(tmp_path / name, queries=queries, passages=8, seed=seed)), SCHEME).split("all")


def _known(pairs, per_query=3):
    """The first `per_query` pairs of each query as known judgments (their text given)."""
    seen: dict[str, int] = {}
    out = []
    for p in pairs:
        if seen.get(p.query_id, 0) < per_query:
            seen[p.query_id] = seen.get(p.query_id, 0) + 1
            out.append(KnownJudgment(p.query_id, p.item_id, SCHEME.labels.index(p.label), p.item_title, p.item_text,
                                     p.query, f"qrels.txt:{len(out) + 1}"))
    return Known.of(SCHEME, out)


def _labels(program, pairs):
    program.prefetch(pairs)
    return [program(query=p.query, item_title=p.item_title, item_text=p.item_text).label for p in pairs]


@pytest.fixture
def compiled(word_late, tmp_path):  # noqa: F811
    train = _pairs(tmp_path, "dl", 20, 0)
    return build("late-lr", BuildContext(SCHEME, train=train)).prepare(train)


def test_compile_learns_the_stage_and_the_artifact_records_its_policies(compiled, tmp_path):
    assert isinstance(compiled, ReadsKnown)
    learned = compiled.feedback.learned
    assert learned["policies"] == [f"{name} {k}" for name, k in POLICIES]
    assert learned["ks"] == sorted({k for _, k in POLICIES}) and learned["rows"] > 0
    assert set(learned["by_policy"]) <= set(learned["policies"])
    art = tmp_path / "late.json"
    save_judge(compiled, art, scheme=SCHEME, lms=RoleLMs(), knowledge="none", dataset="trec")
    saved = read_artifact(art)["extra"]["feedback"]
    assert saved["learned"]["policies"] == learned["policies"] and saved["learned"]["rows"] == learned["rows"]
    assert len(saved["thresholds"]) == 3
    assert any(line.startswith("feedback stage:") for line in compiled.learned_from())


def test_a_reloaded_judge_reads_known_judgments_and_gives_the_same_labels(compiled, tmp_path):
    art = tmp_path / "late.json"
    save_judge(compiled, art, scheme=SCHEME, lms=RoleLMs(), knowledge="none", dataset="trec")
    loaded = load_judge(art)
    other = _pairs(tmp_path, "other", 8, 1)
    known = _known(other)
    counts = compiled.read_known(known)
    assert counts == loaded.read_known(known) == {q: 3 for q in {p.query_id for p in other}}
    holes = [p for p in other if (p.query_id, p.item_id) not in known.keys()]
    a, b = _labels(compiled, holes), _labels(loaded, holes)
    assert a == b
    one = compiled(query=holes[0].query, item_title=holes[0].item_title, item_text=holes[0].item_text)
    assert one.known_read == 3 and "base_label" in one and sum(one.scores.values()) == pytest.approx(1.0)


def test_without_known_judgments_the_judge_is_unchanged(compiled, tmp_path):
    other = _pairs(tmp_path, "other", 8, 1)
    before = _labels(compiled, other)
    assert compiled.read_known(Known.of(SCHEME, [])) == {}
    assert _labels(compiled, other) == before
    first = sorted({p.query_id for p in other})[0]  # known judgments of one query: the others are judged as before
    compiled.read_known(Known.of(SCHEME, [j for j in _known(other) if j.query_id == first]))
    after = _labels(compiled, other)
    assert [x for x, p in zip(after, other) if p.query_id != first] == [
        x for x, p in zip(before, other) if p.query_id != first]
    scores = [compiled(query=p.query, item_title=p.item_title, item_text=p.item_text) for p in other[:3]]
    assert all("known_read" not in s or s.known_read >= 1 for s in scores)


def test_a_pair_whose_only_known_judgment_is_its_own_is_judged_as_before(compiled, tmp_path):
    other = _pairs(tmp_path, "other", 8, 1)
    before = _labels(compiled, other)
    compiled.read_known(_known(other, per_query=1))
    firsts = {p.query_id: i for i, p in reversed(list(enumerate(other)))}
    after = _labels(compiled, other)
    assert all(after[i] == before[i] for i in firsts.values())
    p = other[firsts[other[0].query_id]]
    assert "known_read" not in compiled(query=p.query, item_title=p.item_title, item_text=p.item_text)


def test_an_artifact_without_the_stage_loads_and_judges_as_before(compiled, tmp_path):
    import json

    art = tmp_path / "late.json"
    save_judge(compiled, art, scheme=SCHEME, lms=RoleLMs(), knowledge="none", dataset="trec")
    doc = json.loads(art.read_text())
    del doc["extra"]["feedback"]  # what an artifact compiled before the stage holds
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    judge = load_judge(old)
    assert judge.feedback is None
    other = _pairs(tmp_path, "other", 8, 1)
    before = _labels(judge, other)
    assert judge.read_known(_known(other)) == {}
    assert _labels(judge, other) == before
    compiled.feedback = None
    assert _labels(compiled, other) == before


def test_feedback_false_leaves_the_stage_out(word_late, tmp_path):  # noqa: F811
    train = _pairs(tmp_path, "dl", 10, 0)
    program = build("late-lr", BuildContext(SCHEME, train=train), feedback=False).prepare(train)
    assert program.feedback is None and "feedback" not in program.dump_extra()
    assert program.config["feedback"] is False


def test_known_judgments_on_another_scale_are_not_read(compiled, tmp_path):
    other = _pairs(tmp_path, "other", 8, 1)
    binary = Known.of(get_scheme("msrd"), [KnownJudgment(p.query_id, p.item_id, 1, "", p.item_text, p.query)
                                           for p in other[:4]])
    assert compiled.read_known(binary) == {}
    no_text = Known.of(SCHEME, [KnownJudgment(p.query_id, p.item_id, 1, "", None, p.query) for p in other[:4]])
    assert compiled.read_known(no_text) == {}


def test_known_judgments_move_the_labels_towards_the_truth(compiled, tmp_path):
    other = _pairs(tmp_path, "other", 8, 1)
    known = _known(other, per_query=4)
    holes = [p for p in other if (p.query_id, p.item_id) not in known.keys()]
    gold = np.array([SCHEME.labels.index(p.label) for p in holes])
    compiled.read_known(Known.of(SCHEME, []))
    base = np.array([SCHEME.labels.index(x) for x in _labels(compiled, holes)])
    compiled.read_known(known)
    fed = np.array([SCHEME.labels.index(x) for x in _labels(compiled, holes)])
    assert np.abs(fed - gold).mean() <= np.abs(base - gold).mean() + 0.25


def test_the_issues_commands_with_a_compiled_feedback_judge(word_late, tmp_path, capsys):  # noqa: F811
    """The issue's commands with the real late-lr and its feedback stage (word vectors for MiniLM): compile learns
    the stage, `holes` hands the benchmark's qrels to it and each hole is judged with its query's judged passages,
    `label --known` reads a judgment list of the same queries; the reports count what it read."""
    import json

    from hiera_dspy.cli import main as console
    from hiera_dspy.testing import write_trec_run

    train = write_trec_folder(tmp_path / "dl20", queries=20, passages=8, seed=0)
    mine = write_trec_folder(tmp_path / "mine", queries=6, passages=8, seed=1)
    runs = ",".join(str(write_trec_run(tmp_path / f"{t}.run", mine, t, noise=n, seed=s))
                    for t, n, s in (("a", 0.3, 0), ("b", 2.0, 1)))
    art = tmp_path / "dl.json"
    assert console.main(["compile", "--dataset", f"trec:{train}", "--split", "all", "--method", "late-lr",
                         "--artifact", str(art)]) == 0
    assert read_artifact(art)["extra"]["feedback"]["learned"]["rows"] > 0
    assert console.main(["holes", "--dataset", f"trec:{mine}", "--runs", runs, "--depth", "10", "--judge", str(art),
                         "--out", str(tmp_path / "filled")]) == 0
    known = json.loads((tmp_path / "filled" / "summary.json").read_text())["known"]
    assert known["reads"] is True and known["read"] == 48 and set(known["read_per_query"].values()) == {8}
    assert known["kind"] == "pool"  # holes know their known judgments are the pool
    shares = known["shares"]  # the holes' estimated shares, beside the pool's own, and the cut made at them
    assert shares["assumed"] == "pool" and len(shares["at_least"]) == 3 and sum(shares["grades"]) == pytest.approx(1)
    assert all(lo <= est <= hi for lo, est, hi in zip(shares["low"], shares["at_least"], shares["high"]))
    report = (tmp_path / "filled" / "report.md").read_text()
    assert "## Known judgments" in report and "taken as a pool" in report and "| grade | estimated share" in report
    holes = [json.loads(line) for line in (tmp_path / "filled" / "new.jsonl").read_text().splitlines()]
    assert holes and all(h["label"] in SCHEME.labels for h in holes)

    topics = dict(line.split("\t") for line in (mine / "topics.tsv").read_text().splitlines())
    corpus = {r["id"]: r for r in map(json.loads, (mine / "corpus.jsonl").read_text().splitlines())}
    pairs = tmp_path / "new.jsonl"  # the benchmark's unjudged passages of the same queries, as pairs to label
    pairs.write_text("".join(json.dumps({"id": f"{h['query_id']}:{h['item_id']}", "query_id": h["query_id"],
                                         "query": topics[h["query_id"]], "item_id": h["item_id"], "item_title": "",
                                         "item_text": corpus[h["item_id"]]["text"]}) + "\n" for h in holes))
    capsys.readouterr()
    assert console.main(["label", "--dataset", f"jsonl:{pairs}", "--scheme", "trec", "--known", f"trec:{mine}",
                         "--known-kind", "pool", "--judge", str(art), "--out", str(tmp_path / "labelled")]) == 0
    assert "the judge read 48 as evidence, for 6 queries" in capsys.readouterr().out
    labelled = [json.loads(line) for line in (tmp_path / "labelled" / "labels.jsonl").read_text().splitlines()]
    assert [r["label"] for r in labelled] == [h["label"] for h in holes]  # the same evidence, the same judgments


def test_training_holes_take_the_runs_top_pairs_first_and_never_a_known_one():
    from hiera_dspy.methods.feedback import MAX_HOLES, RUN_DEPTH, training_holes

    members = list(range(100, 100 + 4 * MAX_HOLES))
    scores = np.zeros(100 + 4 * MAX_HOLES)
    scores[members] = np.arange(len(members))[::-1]  # the run ranks the members in order
    runs = {"one": scores, "two": -scores}  # and a second run in the reverse order
    tops = set(members[:RUN_DEPTH]) | set(members[-RUN_DEPTH:])
    chosen = members[:3]
    holes = training_holes(members, chosen, runs, np.random.default_rng(0))
    assert len(holes) == MAX_HOLES == len(set(holes)) and not set(holes) & set(chosen)
    assert tops - set(chosen) <= set(holes)  # every top hole is drawn, the rest filled from the others
    assert holes == training_holes(members, chosen, runs, np.random.default_rng(0))  # seeded
    few = members[:RUN_DEPTH + 5]
    assert training_holes(few, few[:2], {"one": scores}, np.random.default_rng(0)) == few[2:]


def test_ablate_hands_known_judgments_to_the_judges_that_read_them(word_late, tmp_path, capsys):  # noqa: F811
    """`eval.ablate --known`: late-lr (fitted on the train split, its stage with it) reads the known judgments once,
    its run id carries their digest, and the report says which methods read them."""
    import json

    from eval import ablate

    folder = write_trec_folder(tmp_path / "dl", queries=40, passages=8, seed=0)  # 8 train queries: 5 folds
    argv = ["--dataset", f"trec:{folder}", "--split", "eval", "--limit", "48", "--methods", "late-lr",
            "--reference", "late-lr", "--knowledge", "none", "--store", str(tmp_path / "store")]
    alone = ablate.main([*argv, "--out", str(tmp_path / "alone")])
    fed = ablate.main([*argv, "--out", str(tmp_path / "fed"), "--known", f"qrels:{folder / 'qrels.txt'}",
                       "--on-known-overlap", "skip"])
    known = fed[0]["known"]
    assert known["reads"] is True and known["overlap_skipped"] == 48 and known["read"] > 0
    assert "known" not in alone[0] and fed[0]["run_id"] != alone[0]["run_id"]  # another run: it read known judgments
    assert "Known judgments qrels:" in (tmp_path / "fed" / "report.md").read_text()
    assert "read by late-lr" in (tmp_path / "fed" / "report.md").read_text()
    assert json.loads((tmp_path / "fed" / "summary.json").read_text())  # the report was written


def test_a_sample_and_a_pool_are_cut_at_their_estimated_shares(compiled, tmp_path):
    other = _pairs(tmp_path, "other", 8, 1)
    known = _known(other, per_query=4)
    holes = [p for p in other if (p.query_id, p.item_id) not in known.keys()]
    known_queries = {j.query for j in known}
    judged = [i for i, p in enumerate(holes) if p.query in known_queries]
    compiled.read_known(known, targets=holes, kind="pool")
    pool = compiled.known_shares()
    assert pool["assumed"] == "pool" and pool["cut"] is True
    assert pool["low"][1] <= pool["at_least"][1] <= pool["high"][1]
    assert "covariate shift" in pool["method"]  # the judge recalibrated on the pool, not label shift's EM
    assert set(pool["other_estimates"]) == {"judge_mean", "label_shift"}
    assert pool["cut_at_least"] == pytest.approx(pool["at_least"])  # a pool's cut falls at the estimate: no lean
    grades = np.array([SCHEME.labels.index(x) for x in _labels(compiled, holes)])
    for k in (1, 2, 3):
        assert np.mean(grades[judged] >= k) == pytest.approx(pool["cut_at_least"][k - 1], abs=1.5 / len(judged))
    compiled.read_known(known, targets=holes, kind="sample")
    sample = compiled.known_shares()
    assert sample["assumed"] == "sample" and sample["cut"] is True and "prediction-powered" in sample["method"]
    grades = np.array([SCHEME.labels.index(x) for x in _labels(compiled, holes)])
    for k in (1, 2, 3):  # every hole is in the sample here: the cut gives the shares it was set at
        assert np.mean(grades[judged] >= k) == pytest.approx(sample["cut_at_least"][k - 1], abs=1.5 / len(judged))
