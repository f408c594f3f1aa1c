"""Known judgments reach the judge (issue 54's plumbing): the issue's three commands on a synthetic TREC benchmark,

    hiera-dspy compile --dataset trec:DL20 --split all --method METHOD --artifact dl.json
    hiera-dspy holes --dataset trec:MY_BENCH --runs a.run,b.run --depth 10 --judge dl.json --out runs/filled
    hiera-dspy label --dataset jsonl:new_pairs.jsonl --known qrels.txt --judge dl.json --out runs/mine

and `run --known`, with a stand-in judge that reads known judgments (`known_judge.KnownMajority`: a pair gets the
majority grade of its query's known judgments), so what reached the judge shows in every label. To run them with a
real compiled feedback judge, set JUDGE to its compile arguments and replace `expected` by the measure it must reach.
"""

from __future__ import annotations

import json
import pickle

import pytest
from known_judge import NAME, READ, KnownMajority, registered

from hiera_dspy import api
from hiera_dspy.cli import main as console
from hiera_dspy.data import DataError
from hiera_dspy.jobs.preparing import Replica, SourceLoader
from hiera_dspy.labels import get_scheme
from hiera_dspy.testing import write_trec_folder, write_trec_run

JUDGE = ["--method", NAME, "--knowledge", "none", "--skip-before"]  # what compile builds; a real judge: its method
TREC = get_scheme("trec").labels


def majority(q: int) -> int:
    """The majority grade of query q{q}'s known judgments in `bench` (three of its four)."""
    return q % 4


@pytest.fixture
def bench(tmp_path):
    """A training folder, a benchmark whose query q{i} has three judgments of grade i % 4 and one other, two runs
    over it (two unjudged passages a query in both top 10s), and unlabelled new pairs of the same queries."""
    train = write_trec_folder(tmp_path / "dl20", queries=6, passages=4)
    mine = write_trec_folder(tmp_path / "mine", queries=4, passages=4, seed=1)
    (mine / "qrels.txt").write_text("".join(f"q{q} 0 p{q}-{p} {majority(q) if p < 3 else (q + 1) % 4}\n"
                                            for q in range(4) for p in range(4)))
    runs = [write_trec_run(tmp_path / "a.run", mine, "a", noise=0.3),
            write_trec_run(tmp_path / "b.run", mine, "b", noise=3.0, seed=1)]
    topics = dict(line.split("\t") for line in (mine / "topics.tsv").read_text().splitlines())
    new = tmp_path / "new_pairs.jsonl"
    new.write_text("".join(json.dumps({"id": f"n{q}-{i}", "query_id": f"q{q}", "query": topics[f"q{q}"],
                                       "item_id": f"new{q}-{i}", "item_title": "", "item_text": f"a new passage {i}"})
                           + "\n" for q in range(4) for i in range(2)))
    corpus = {r["id"]: r["text"] for r in map(json.loads, (mine / "corpus.jsonl").read_text().splitlines())}
    known = tmp_path / "known.jsonl"  # the benchmark's judgments as labelled JSONL, texts and all
    known.write_text("".join(json.dumps({"id": f"{q}:{d}", "query_id": q, "query": topics[q], "item_id": d,
                                         "item_title": "", "item_text": corpus[d], "label": g}) + "\n"
                             for q, _, d, g in (line.split() for line in (mine / "qrels.txt").read_text().splitlines())))
    with registered():
        yield {"train": train, "mine": mine, "runs": ",".join(map(str, runs)), "new": new, "known": known,
               "tmp": tmp_path}


def hiera(*argv) -> None:
    assert console.main([str(a) for a in argv]) == 0


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_issues_three_commands(bench, capsys):
    art, filled, labelled = bench["tmp"] / "dl.json", bench["tmp"] / "filled", bench["tmp"] / "labelled"
    hiera("compile", "--dataset", f"trec:{bench['train']}", "--split", "all", *JUDGE, "--artifact", art)

    hiera("holes", "--dataset", f"trec:{bench['mine']}", "--runs", bench["runs"], "--depth", 10, "--judge", art,
          "--out", filled)
    holes = records(filled / "new.jsonl")
    assert len(holes) == 8 and all(h["label"] == TREC[majority(int(h["query_id"][1:]))] for h in holes)
    summary = json.loads((filled / "summary.json").read_text())
    known = summary["known"]
    assert known["reads"] is True and known["judgments"] == known["read"] == 16
    assert known["known_per_query"] == known["read_per_query"] == {"q0": 4, "q1": 4, "q2": 4, "q3": 4}
    assert known["source"] == str(bench["mine"] / "qrels.txt") and known["outside"] == 0
    assert READ[-1].for_query("q1")[0].source == f"{bench['mine'] / 'qrels.txt'}:5"  # file:line reached the judge
    report = (filled / "report.md").read_text()
    assert "## Known judgments" in report and "the judge read 16 as evidence, for 4 queries" in report
    assert "| q2 | 4 | 4 |" in report

    capsys.readouterr()
    hiera("label", "--dataset", f"jsonl:{bench['new']}", "--scheme", "trec", "--known", bench["known"], "--judge", art,
          "--out", labelled)
    assert "the judge read 16 as evidence, for 4 queries" in capsys.readouterr().out
    labels = records(labelled / "labels.jsonl")
    assert [r["label"] for r in labels] == [TREC[majority(q)] for q in range(4) for _ in range(2)]

    # the same judgments as qrels name ids only: the new pairs' file holds none of those passages, so no text is
    # found, the judge can read none of them, and the report counts them
    hiera("label", "--dataset", f"jsonl:{bench['new']}", "--scheme", "trec", "--known", bench["mine"] / "qrels.txt",
          "--judge", art, "--out", bench["tmp"] / "from-qrels")
    printed = capsys.readouterr().out
    assert "16 given, 16 of them for 4 of the 4 queries judged; the judge read 0" in printed
    assert "16 judgments whose item text was not found" in printed
    assert READ[-1].for_query("q0")[0].item_text is None
    # the benchmark's folder gives them their texts: the judgments of known.jsonl exactly (the same digest, so the
    # same run id when not named)
    assert READ[-1].digest() != READ[-2].digest()
    hiera("label", "--dataset", f"jsonl:{bench['new']}", "--scheme", "trec", "--known", f"trec:{bench['mine']}",
          "--judge", art, "--out", bench["tmp"] / "from-folder", "--run-id", "from-folder")
    assert READ[-1].digest() == READ[-3].digest()
    assert "the judge read 16 as evidence, for 4 queries" in capsys.readouterr().out
    assert [r["label"] for r in records(bench["tmp"] / "from-folder" / "labels.jsonl")] == [r["label"] for r in labels]


def test_label_texts_come_from_the_dataset_and_what_the_judge_cannot_read_is_counted(bench):
    """Texts a qrels list lacks come from the pairs' own file when an item is there too; the judge reads only the
    judgments it can use (those with texts), and the report says so per query."""
    known = bench["tmp"] / "known.jsonl"
    known.write_text("".join(json.dumps({"id": f"k{q}", "query_id": f"q{q}", "query": "x", "item_id": f"k{q}",
                                         "item_title": "", "item_text": "a judged passage", "label": TREC[q]}) + "\n"
                             for q in range(3)))
    done = api.label(api.LabelRequest(api.DataSource(f"jsonl:{bench['new']}", scheme="trec"),
                                      api.Judging(method=NAME, knowledge="none"), out=str(bench["tmp"] / "out"),
                                      known=api.KnownList(f"jsonl:{known}")))
    use = done.summary["known"]
    assert use["known_per_query"] == {"q0": 1, "q1": 1, "q2": 1, "q3": 0}
    assert use["queries_with_known"] == 3 and use["queries"] == 4 and use["without_text"] == 0


def test_run_reads_a_known_list_and_a_different_list_is_a_different_run(bench, tmp_path):
    gold = tmp_path / "gold.jsonl"  # the new pairs with gold: the majority grade of their query
    gold.write_text("".join(json.dumps(r | {"label": TREC[majority(int(r["query_id"][1:]))]}) + "\n"
                            for r in records(bench["new"])))

    def run(path):
        return api.judge(api.JudgeRequest(api.DataSource(f"jsonl:{gold}", scheme="trec"),
                                          api.Judging(method=NAME, knowledge="none"), split="all",
                                          out=str(tmp_path / "r" / path.name), known=api.KnownList(str(path))))

    first = run(bench["known"])
    assert first.metrics["known"]["read"] == 16 and first.metrics["accuracy"] == 1.0
    config = json.loads((tmp_path / "r" / "known.jsonl" / "config.json").read_text())
    assert config["known"] == READ[-1].digest()
    same = tmp_path / "same.jsonl"  # the same judgments in another order of keys and another file: the same run
    same.write_text("".join(json.dumps(dict(reversed(r.items()))) + "\n" for r in records(bench["known"])))
    other = tmp_path / "other.jsonl"  # one grade changed: another run
    other.write_text(bench["known"].read_text().replace('"label": "0"', '"label": "1"', 1))
    assert run(same).run_id == first.run_id != run(other).run_id


def test_holes_never_read_the_human_samples_decisions(bench, tmp_path):
    argv = ["--dataset", f"trec:{bench['mine']}", "--runs", bench["runs"], "--depth", 10, "--method", NAME,
            "--knowledge", "none", "--out", tmp_path / "filled", "--human-sample", 2]
    hiera("holes", *argv)
    qrels = {(q, d) for q, d in (line.split()[::2] for line in (bench["mine"] / "qrels.txt").read_text().splitlines())}
    assert READ[-1].keys() == qrels
    summary = json.loads((tmp_path / "filled" / "summary.json").read_text())
    sampled = summary["human_sample"]["sample_queries"]
    hole = next(r for r in records(tmp_path / "filled" / "new.jsonl") if r["query_id"] in sampled)
    decisions = tmp_path / "human.jsonl"
    decisions.write_text(json.dumps({"id": hole["id"], "label": TREC[0]}) + "\n")
    hiera("escalations", "--run", summary["run_id"], "--labels", decisions, "--who", "ana")
    assert json.loads((tmp_path / "filled" / "summary.json").read_text())["human"] == 1
    READ.clear()
    hiera("holes", *argv)  # resumed: the decision is in the run, and still not among what the judge reads
    assert READ[-1].keys() == qrels and (hole["query_id"], hole["item_id"]) not in READ[-1].keys()


def test_a_judge_that_reads_no_known_judgments_judges_as_before_and_the_report_says_so(bench, tmp_path):
    from hiera_dspy import methods

    methods.register("ignores-known", "the least relevant label (a test's judge)", family="baseline",
                     lm_roles=())(lambda ctx: IgnoresKnown(ctx.scheme))
    try:
        hiera("holes", "--dataset", f"trec:{bench['mine']}", "--runs", bench["runs"], "--method", "ignores-known",
              "--knowledge", "none", "--out", tmp_path / "filled")
    finally:
        methods.METHODS.pop("ignores-known", None)
    known = json.loads((tmp_path / "filled" / "summary.json").read_text())["known"]
    assert known["reads"] is False and known["read"] == 0 and known["judgments"] == 16
    assert "the judge does not read known judgments: every pair was judged alone, none was used" in (
        tmp_path / "filled" / "report.md").read_text()


def test_an_ir_datasets_benchmark_gives_its_qrels_too(bench, tmp_path):
    pytest.importorskip("ir_datasets")
    from hiera_dspy.testing import register_irds

    spec = register_irds(f"hiera-test/known-{tmp_path.name}", bench["mine"])
    hiera("holes", "--dataset", spec, "--runs", bench["runs"], "--method", NAME, "--knowledge", "none",
          "--out", tmp_path / "filled")
    known = json.loads((tmp_path / "filled" / "summary.json").read_text())["known"]
    assert known["source"] == spec and known["read"] == 16 and READ[-1].for_query("q0")[0].source == spec
    assert all(h["label"] == TREC[majority(int(h["query_id"][1:]))] for h in records(tmp_path / "filled" / "new.jsonl"))


def test_judge_pool_judges_with_nothing_known(bench, tmp_path):
    hiera("holes", "--dataset", f"trec:{bench['mine']}", "--runs", bench["runs"], "--method", NAME,
          "--knowledge", "none", "--out", tmp_path / "pool", "--judge-pool")
    assert READ == [] and "known" not in json.loads((tmp_path / "pool" / "summary.json").read_text())


def label_with(bench, known_path, on_overlap="error"):
    return api.label(api.LabelRequest(api.DataSource(f"jsonl:{bench['new']}", scheme="trec"),
                                      api.Judging(method=NAME, knowledge="none"), out=str(bench["tmp"] / "out"),
                                      known=api.KnownList(str(known_path), on_overlap)))


def test_bad_known_lists_are_refused_with_file_and_line(bench, tmp_path):
    scale = tmp_path / "scale.txt"
    scale.write_text("q0 0 p0-0 1\nq0 0 p0-1 5\n")
    with pytest.raises(DataError, match=r"scale.txt, line 2: column 4 \(grade\): 5 is outside the scheme 'trec'"):
        label_with(bench, scale)
    twice = tmp_path / "twice.txt"
    twice.write_text("q0 0 p0-0 1\nq0 0 p0-1 2\nq0 0 p0-0 1\nq0 0 p0-0 3\n")
    with pytest.raises(DataError, match=r"twice.txt, line 4, grade: .* on .*twice.txt, line 1"):
        label_with(bench, twice)
    assert READ == []  # nothing was judged


def test_known_pairs_that_are_to_be_judged_stop_or_are_dropped_and_counted(bench, tmp_path):
    overlap = tmp_path / "overlap.txt"
    overlap.write_text("q0 0 p0-0 1\nq1 0 new1-0 3\nq1 0 new1-1 3\nq9 0 p9-0 2\nq9 0 p9-1 2\n")
    with pytest.raises(DataError, match=r"overlap.txt, line 2: query 'q1' item 'new1-0' is a known judgment and a "
                                        r"pair to judge \(2 such pairs\).* --on-known-overlap skip"):
        label_with(bench, overlap)
    use = label_with(bench, overlap, "skip").summary["known"]
    assert use["overlap_skipped"] == 2 and use["judgments"] == 3
    assert use["outside"] == 2 and use["outside_queries"] == 1  # q9 is not among the pairs: counted, judging went on
    assert (READ[-1].keys() & {("q1", "new1-0"), ("q1", "new1-1")}) == set()


def test_a_ray_replica_reads_what_the_jobs_judge_read(bench):
    """--engine ray rebuilds each replica's program from a picklable recipe: the known judgments travel in it."""
    from hiera_dspy.data.judgment_lists import read_known

    known = read_known(f"qrels:{bench['mine'] / 'qrels.txt'}", get_scheme("trec"))
    recipe = pickle.loads(pickle.dumps(Replica(api.Judging(method=NAME, knowledge="none"),
                                               SourceLoader(api.DataSource(f"trec:{bench['mine']}")), "all", known)))
    program = recipe(None)
    assert isinstance(program, KnownMajority) and READ[-1] == known


class IgnoresKnown(KnownMajority):
    """A judge without `read_known` (the least relevant label everywhere)."""

    read_known = None  # type: ignore[assignment]


@pytest.mark.slow
def test_ray_actors_judge_with_the_known_judgments_the_job_read(bench, monkeypatch):
    """--engine ray: each actor rebuilds its judge from the job's recipe (this judge's module travels by value, the
    loader registers it in the actor's process), and the known judgments travel in the recipe: the actors' labels are
    the majority grades, which a judge without them could not give."""
    ray = pytest.importorskip("ray")
    import known_judge

    from hiera_dspy.jobs import labelling as jobs_labelling

    ray.cloudpickle.register_pickle_by_value(known_judge)
    monkeypatch.setattr(jobs_labelling, "SourceLoader", lambda source: known_judge.Registering(SourceLoader(source)))
    try:
        hiera("label", "--dataset", f"jsonl:{bench['new']}", "--scheme", "trec", "--known", bench["known"],
              "--method", NAME, "--knowledge", "none", "--engine", "ray", "--ray-actors", 2,
              "--out", bench["tmp"] / "ray")
    finally:
        ray.shutdown()
        ray.cloudpickle.unregister_pickle_by_value(known_judge)
    labels = [r["label"] for r in records(bench["tmp"] / "ray" / "labels.jsonl")]
    assert labels == [TREC[majority(q)] for q in range(4) for _ in range(2)]
