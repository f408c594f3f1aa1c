"""Every LLM method reads its query's known judgments as per-call demos (`methods/known_demos.py`): each demo's passage
verbatim in the prompt sent, never the pair's own (by item id, or the same passage), within the token budget, in a
stable order; the stacked judges pass them to their LLM; and with nothing known the prompts are byte for byte those of
a program without them."""

import pytest

from hiera_dspy import testing
from hiera_dspy.data.known import Known, KnownJudgment, ReadsKnown
from hiera_dspy.labels import get_scheme
from hiera_dspy.methods import BuildContext, available, build
from hiera_dspy.methods import known_demos as kd
from hiera_dspy.methods.learning import prepare
from hiera_dspy.records import Pair
from hiera_dspy.runs.runner import judge_one

TREC = get_scheme("trec")
QUERY = "where is copper mined in the tundra"
PAIR_TEXT = "The judged passage: copper in the tundra, mined since 1900."
KNOWN = [("k0", 0, "Violin makers of the harbor town and their gardens."),
         ("k1", 1, "Copper prices rose this year on the metal exchange."),
         ("k2", 2, "Tundra soils hold some copper deposits under the permafrost."),
         ("k3", 3, "Copper in the tundra is mined at three sites, the largest since 1900."),
         ("own", 3, "OWN-JUDGMENT of the very pair being judged."),  # the pair's item: never a demo
         ("same", 2, PAIR_TEXT)]  # another id, the pair's very passage: never a demo
CHOSEN = {"k0", "k1", "k2", "k3"}
# every method that generates text, with the config that reaches its labelling step on a fake LM
CONFIG = {"hiera+signals": {"embedder": "lexical"}, "hiera-cascade": {"embedder": "lexical", "tau": 1.0},
          "stacked": {"embedder": "lexical"}}
ANSWERS = {"relevance": "relevant", "stance": "relevant", "keep": True}
LLM_METHODS = sorted(name for name, info in available().items() if info.votes)


@pytest.fixture(autouse=True)
def lexical(monkeypatch):
    monkeypatch.setattr(kd, "vector_kind", lambda: "lexical")  # no MiniLM in the default suite


def known(rows=KNOWN, query_id="q1", query=QUERY) -> Known:
    return Known.of(TREC, [KnownJudgment(query_id, item, grade, item_text=text, query=query, source=f"k.jsonl:{i}")
                           for i, (item, grade, text) in enumerate(rows, 1)])


def the_pair(query_id="q1") -> Pair:
    return Pair(f"{query_id}:own", QUERY, "", PAIR_TEXT, TREC.labels[3], query_id, "own")


def built(name, **config):
    lms = testing.role_lms(ANSWERS)
    program = build(name, BuildContext(TREC, lms, train=testing.labelled_pairs(TREC, 3)), **CONFIG.get(name, {}),
                     **config)
    prepare(program, testing.labelled_pairs(TREC, 3), testing.labelled_pairs(TREC, 1))
    return program, lms.for_role("judge")


def prompts(lm, start=0) -> list[str]:
    """Each call's messages, joined (from call `start` on)."""
    return ["\n".join(m["content"] for m in h["messages"]) for h in lm.history[start:]]


def text_of(item_id: str) -> str:
    return next(text for item, _, text in KNOWN if item == item_id)


@pytest.mark.parametrize("name", LLM_METHODS)
def test_every_llm_method_shows_its_querys_known_passages_verbatim_never_the_pairs_own(name):
    program, lm = built(name)
    assert isinstance(program, ReadsKnown) and program.read_known(known()) == {"q1": len(KNOWN)}
    row = judge_one(program, the_pair())
    assert row.error is None, row.error
    assert set(row.fields["known_demos"]) == CHOSEN
    reading = [p for p in prompts(lm) if text_of("k3") in p]
    assert reading, f"{name}: no prompt read the demos"
    for prompt in reading:  # in the order recorded, before the pair (a step restricted to the relevant labels
        at = [prompt.index(text_of(i)) for i in row.fields["known_demos"] if text_of(i) in prompt]  # shows those)
        assert at == sorted(at) and at[-1] < prompt.rindex(PAIR_TEXT)
    assert any(all(text_of(i) in p for i in CHOSEN) for p in prompts(lm)) or name in ("binary-graded", "dream")
    sent = "\n".join(prompts(lm))
    assert "OWN-JUDGMENT" not in sent
    assert all(p.count(PAIR_TEXT) <= 1 for p in prompts(lm))  # the pair's passage only as its own item
    again = judge_one(program, the_pair())
    assert again.fields["known_demos"] == row.fields["known_demos"]  # a stable order


@pytest.mark.parametrize("name", LLM_METHODS)
def test_with_nothing_known_the_prompts_are_byte_identical_to_a_program_without_demos(name):
    plain, plain_lm = built(name, known_demos=0)
    reading, lm = built(name)
    reading.read_known(known(query_id="q2", query="another query entirely"))  # known, but not of this query
    assert not isinstance(plain, ReadsKnown)
    first, second = judge_one(plain, the_pair()), judge_one(reading, the_pair())
    assert "known_demos" not in second.fields and first.label == second.label
    assert [h["messages"] for h in lm.history] == [h["messages"] for h in plain_lm.history]


def test_the_relation_analyzer_and_the_judges_decision_read_them_when_hiera_delegates():
    program, lm = built("hiera", delegation="always")
    program.read_known(known())
    judge_one(program, the_pair())
    calls = [(h["messages"][0]["content"], "\n".join(m["content"] for m in h["messages"])) for h in lm.history]
    relation = [p for system, p in calls if "`findings`" in system]
    decision = [p for system, p in calls if "`evidence`" in system]
    plans = [p for system, p in calls if "`question_for_query_analyzer`" in system]
    assert relation and text_of("k3") in relation[0] and "Conclusion: Perfectly relevant." in relation[0]
    assert decision and text_of("k3") in decision[0]
    assert plans and text_of("k3") not in plans[0]  # a plan gives no relevance answer: no demos


def test_a_compiled_predictors_own_demos_stay_first_and_samples_each_read_the_demos():
    program, lm = built("zero-shot", samples=3, temperature=0.5)
    predictor = program.sampled.judge
    predictor.demos = [{"query": "COMPILED-QUERY", "item": "COMPILED-ITEM", "label_definitions": "defs",
                        "label": "Irrelevant"}]
    program.read_known(known())
    judge_one(program, the_pair())
    assert len(lm.history) == 3
    for prompt in prompts(lm):
        assert prompt.index("COMPILED-ITEM") < prompt.index(text_of("k0")) < prompt.index(PAIR_TEXT)


def test_the_stacked_judges_pass_the_querys_demos_to_their_llm():
    for name in ("stacked", "hiera-cascade"):
        program, lm = built(name)
        start = len(lm.history)  # stacked's fit judged the train pairs without demos
        program.read_known(known())
        row = judge_one(program, the_pair())
        assert row.fields.get("reached_llm") is True and set(row.fields["known_demos"]) == CHOSEN
        assert any(text_of("k3") in p for p in prompts(lm, start))


def test_a_learned_judge_or_the_probe_takes_no_demos_setting():
    for name in ("embed-lr", "late-lr", "llm-probe"):
        assert "known_demos" not in available()[name].options


# ---------------------------------------------------------------------------------------------- choosing them

def chooser(k=4, tokens=kd.DEFAULT_TOKENS, rows=KNOWN) -> kd.QueryDemos:
    demos = kd.QueryDemos(TREC, k, tokens)
    demos.read(known(rows))
    return demos


def test_the_choice_is_the_most_alike_balanced_over_grades_least_alike_first():
    rows = [("a0", 0, "copper tundra mined 1900 sites"), ("a1", 0, "copper tundra mined"), ("a2", 0, "copper"),
            ("b0", 3, "violin harbor gardens"), ("c0", 1, "copper tundra mined since 1900 in the judged passage")]
    chosen = chooser(k=3, rows=rows).select(the_pair())
    assert {d.item_id for d in chosen} == {"a0", "b0", "c0"}  # one of each grade before a second of any
    assert [d.item_id for d in chosen][-1] == "c0" and chosen[0].item_id == "b0"  # the most alike read last
    assert [d.label for d in chosen] == [TREC.labels[3], TREC.labels[0], TREC.labels[1]]
    assert kd.balanced([0, 0, 0, 2, 1]) == [0, 3, 4, 1, 2]


def test_the_token_budget_passes_over_what_does_not_fit_and_long_passages_are_cut():
    long = ("copper tundra " * 200).strip()
    demos = chooser(tokens=200, rows=[("long", 3, long), *KNOWN[:4]])
    chosen = demos.select(the_pair())
    assert "long" in {d.item_id for d in chooser(tokens=2000, rows=[("long", 3, long)]).select(the_pair())}
    assert sum(-(-(len(d.query) + len(d.item)) // kd.CHARS_PER_TOKEN) for d in chosen) <= 200
    assert "long" not in {d.item_id for d in chosen} and chosen
    cut = chooser(tokens=5000, rows=[("long", 3, long)]).select(the_pair())[0].item
    assert "…[truncated]" in cut and len(cut) < len(long)


def test_a_query_is_found_by_its_id_else_by_its_text_and_none_is_none():
    demos = chooser()
    assert demos.select(the_pair("q1"))
    by_text = Pair("x", "  Where is COPPER mined, in the tundra? ", "", PAIR_TEXT, None, "other-id", "own")
    assert {d.item_id for d in demos.select(by_text)} == CHOSEN
    assert demos.select(Pair("y", "something else", "", PAIR_TEXT, None, "q9", "z")) == []


def test_a_list_without_query_texts_shows_the_pairs_query_and_another_scheme_is_read_as_none():
    demos = kd.QueryDemos(TREC)
    demos.read(known(query=None))
    assert {d.query for d in demos.select(the_pair())} == {QUERY}
    assert kd.QueryDemos(get_scheme("msrd")).read(known()) == {}


def test_a_copy_of_the_program_shares_the_choice_and_the_artifact_says_how_many(tmp_path):
    import copy

    from hiera_dspy.artifacts.judge_file import read_artifact, save_judge

    program, _ = built("thomas", known_demos=2, known_demo_tokens=300)
    assert copy.deepcopy(program).query_demos is program.query_demos
    assert program.config["known_demos"] == 2
    path = save_judge(program, tmp_path / "t.json", scheme=TREC, lms=testing.role_lms(), knowledge="none",
                      dataset="x")
    assert read_artifact(path)["known_demos"] == {"known_demos": 2, "known_demo_tokens": 300}
    assert "known_demos" not in build("thomas", BuildContext(TREC)).config  # unset: not in a run's identity


def test_the_dry_run_price_and_the_ledger_count_the_demos_tokens():
    from hiera_dspy.runs.cost import forecast

    program, _ = built("thomas")
    lms = testing.role_lms(ANSWERS)
    alone = judge_one(program, the_pair())
    without = forecast(program, [the_pair()], lms)["input_tokens"]
    program.read_known(known())
    reading = judge_one(program, the_pair())
    demo_words = sum(len(text.split()) for item, _, text in KNOWN if item in CHOSEN)  # the fake LM counts words
    assert forecast(program, [the_pair()], lms)["input_tokens"] >= without + demo_words
    assert reading.tokens >= alone.tokens + demo_words


def test_a_compiled_judge_reads_them_and_set_known_demos_0_turns_them_off(tmp_path):
    from hiera_dspy.artifacts.judge_file import save_judge
    from hiera_dspy.data import load_dataset
    from hiera_dspy.jobs.preparing import build_program
    from hiera_dspy.jobs.requests import Judging

    program, _ = built("zero-shot", known_demos=2)
    path = save_judge(program, tmp_path / "z.json", scheme=TREC, lms=testing.role_lms(), knowledge="none",
                      dataset="x")
    dataset = load_dataset(f"trec:{testing.write_trec_folder(tmp_path / 'b', queries=2, passages=2)}")
    for settings, k in (((), 2), (("known_demos=3", "samples=2"), 3), (("known_demos=0",), None)):
        judge, _, _ = build_program(Judging(judge=str(path), settings=settings), dataset)
        assert getattr(getattr(judge, "query_demos", None), "k", None) == k
        assert isinstance(judge, ReadsKnown) is (k is not None)
