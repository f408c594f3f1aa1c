"""Votes over samples (methods/votes.py): N distinct requests a judgment (the cache never answers one sample for
another), the median vote with its tie rule, the vote shares as the judgment's confidence, cost counted per sample,
the run id carrying N and the temperature, `NAME@N` in grids, and a compiled judge voting."""

import itertools

import dspy
import pytest
from method_helpers import judge, make_ctx

from hiera_dspy.errors import HieraError, UnknownName
from hiera_dspy.jobs.ablating import variants
from hiera_dspy.labels import get_scheme
from hiera_dspy.lm.roles import RoleLMs
from hiera_dspy.methods import available, build
from hiera_dspy.methods.params import ConfigError
from hiera_dspy.methods.votes import DEFAULT_TEMPERATURE, median_vote, split_name
from hiera_dspy.records import Judgment, Pair
from hiera_dspy.review.confidence import confidence
from hiera_dspy.runs.spec import RunSpec


def recording(lm) -> list:
    """The generation settings (`dspy.lm15` request config) of every request `lm`'s fake engine answers."""
    seen, answer = [], lm.engine.complete

    def complete(request):
        seen.append(request.config)
        return answer(request)

    lm.engine.complete = complete
    return seen


def cycling(*labels):
    """An answer that cycles through `labels`, one per request."""
    seq = itertools.cycle(labels)
    return lambda prompt: next(seq)


@pytest.fixture
def cached():
    """DSPy's memory cache on (the suite turns it off), so a repeated request would be answered from it."""
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)
    yield
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)


@pytest.mark.parametrize("labels,expected", [
    (["Exact", "Irrelevant", "Substitute"], "Substitute"),
    (["Exact", "Exact", "Irrelevant", "Irrelevant", "Complement"], "Complement"),  # no majority: the middle grade
    (["Exact", "Exact", "Irrelevant", "Substitute"], "Exact"),  # even: of the two middle grades, the one more voted
    (["Exact", "Irrelevant", "Irrelevant", "Exact"], "Irrelevant"),  # even and tied: the less relevant
    (["Substitute"], "Substitute"),
])
def test_the_median_vote_and_its_tie_rule(labels, expected):
    assert median_vote(labels, get_scheme("esci")) == expected


def test_each_sample_is_a_distinct_request_even_with_the_cache_on(cached):
    ctx, lm = make_ctx("msrd", {"label": cycling("Relevant", "Irrelevant", "Relevant")})
    lm.cache = True
    sent = recording(lm)
    program = build("zero-shot", ctx, samples=5)
    prediction, ledger = judge(program)
    assert lm.engine.calls == 5 and ledger.calls == 5  # five requests reached the engine: none answered by another
    assert prediction.votes == ["Relevant", "Irrelevant", "Relevant", "Relevant", "Irrelevant"]
    assert prediction.label == "Relevant" and prediction.samples == 5
    # anchored: the first sample is the LM's own request (its own temperature), the others at the vote's
    assert [config.temperature for config in sent] == [None] + [DEFAULT_TEMPERATURE] * 4
    assert {config.seed for config in sent} == {None}  # a hosted model samples freely: no seed is sent
    again, ledger = judge(program)  # the same pair again: every sample from the cache, each booked at its cost
    assert lm.engine.calls == 5 and again.votes == prediction.votes
    assert sum(s.cached_calls for s in ledger.steps) == 5 and ledger.tokens > 0


def test_tokens_count_every_sample():
    one, _ = make_ctx("msrd", {"label": "Relevant"})
    five, _ = make_ctx("msrd", {"label": "Relevant"})
    tokens_one = judge(build("zero-shot", one))[1].tokens
    _, ledger = judge(build("zero-shot", five, samples=5))
    assert ledger.calls == 5 and ledger.tokens == 5 * tokens_one


def test_a_seeded_lm_gets_a_seed_per_sample():
    ctx, lm = make_ctx("msrd", {"label": "Relevant"})
    lm.fixed_seed = True  # as the embedded llama.cpp model is
    sent = recording(lm)
    judge(build("zero-shot", ctx, samples=3))
    assert [config.seed for config in sent] == [None, 1, 2]  # the first is the LM's own request


def test_the_first_sample_is_the_one_sample_answer_from_the_cache(cached):
    ctx, lm = make_ctx("msrd", {"label": cycling("Irrelevant", "Relevant", "Relevant", "Irrelevant", "Relevant")})
    lm.cache = True
    one, _ = judge(build("zero-shot", ctx))
    five, ledger = judge(build("zero-shot", ctx, samples=5))
    assert one.label == "Irrelevant" and five.votes[0] == "Irrelevant"  # the one-sample answer is the first vote
    assert lm.engine.calls == 5 and sum(s.cached_calls for s in ledger.steps) == 1  # four more requests were paid
    assert five.votes == ["Irrelevant", "Relevant", "Relevant", "Irrelevant", "Relevant"] and five.label == "Relevant"
    assert five.anchored is True


def test_the_vote_shares_are_the_confidence_the_queue_and_conclusions_read():
    ctx, _ = make_ctx("msrd", {"label": cycling("Relevant", "Irrelevant", "Relevant", "Relevant", "Irrelevant")})
    prediction, ledger = judge(build("zero-shot", ctx, samples=5))
    pair = Pair("p1", "q", "t", "x", "Relevant", "q1", "i1")
    row = Judgment.of(pair, prediction, None, ledger, 0.1).to_dict()
    found = confidence(row)
    assert found.source == "vote-share" and found.value == pytest.approx(0.6)
    assert found.distribution == {"Relevant": 0.6, "Irrelevant": 0.4}


def test_a_sample_without_a_label_abstains_and_all_abstaining_escalates():
    ctx, _ = make_ctx("msrd", {"stance": "relevant"})
    agree = judge(build("dream", ctx, samples=3))[0]
    assert agree.label == "Relevant" and agree.votes == ["Relevant"] * 3 and agree.abstained == 0
    ctx, _ = make_ctx("msrd", {"stance": cycling("relevant", "not relevant")})  # the debaters never agree
    never = judge(build("dream", ctx, samples=3, rounds=1))[0]
    assert never.label is None and never.escalated and never.abstained == 3 and never.votes == []


def test_a_failed_sample_fails_the_judgment():
    ctx, _ = make_ctx("trec", {"grade": cycling(1, 9)})  # the second sample's grade is off the scale
    with pytest.raises(ValueError, match="outside the scale"):
        judge(build("thomas", ctx, samples=3))


def test_n_and_the_temperature_name_the_run():
    ctx, _ = make_ctx("msrd", {"label": "Relevant"})
    lms = RoleLMs.of(judge=dspy.LM("openai/x"))

    def run_id(**config):
        return RunSpec.judging(build("thomas", ctx, **config), dataset="msrd", split="dev", lms=lms,
                               knowledge="none").run_id

    plain = run_id()
    assert run_id(samples=1) == plain  # one sample at the LM's own temperature is the plain method
    assert len({plain, run_id(samples=5), run_id(samples=5, temperature=1.0), run_id(samples=3),
                run_id(temperature=0.3)}) == 5
    assert build("thomas", ctx, samples=5).config == {"with_knowledge": False, "k": None, "samples": 5,
                                                      "temperature": DEFAULT_TEMPERATURE, "anchored": True}
    with pytest.raises(ConfigError, match="temperature 0"):
        build("thomas", ctx, samples=5, temperature=0)


def test_name_at_n_in_grids():
    assert split_name("thomas@5") == ("thomas", {"samples": 5}) and split_name("hiera") == ("hiera", {})
    rows = variants(["thomas", "thomas@5", "zero-shot@3"], with_knowledge=True)
    assert ("thomas@5", "thomas", {"samples": 5}) in rows
    assert ("zero-shot@3+k", "zero-shot", {"samples": 3, "with_knowledge": True}) in rows
    with pytest.raises(UnknownName):
        variants(["nothing@5"], with_knowledge=False)
    ctx, _ = make_ctx("msrd", {"label": "Relevant"})
    assert build("thomas@5", ctx).config["samples"] == 5


def test_every_text_generating_method_takes_votes_and_the_probe_does_not():
    methods = available()
    assert "samples" in methods["hiera"].options and "temperature" in methods["dream"].options
    assert "samples" not in methods["llm-probe"].options and "samples" not in methods["embed-lr"].options


def test_optimizers_see_the_wrapped_prompts_and_a_compiled_judge_votes(tmp_path):
    from hiera_dspy.artifacts.judge_file import load_judge, save_judge

    ctx, lm = make_ctx("msrd", {"label": cycling("Relevant", "Irrelevant", "Irrelevant")})
    program = build("zero-shot", ctx, samples=3)
    (name, predictor), = program.named_predictors()
    predictor.signature = predictor.signature.with_instructions("COMPILED INSTRUCTIONS")
    path = tmp_path / "judge.json"
    save_judge(program, path, scheme=ctx.scheme, lms=ctx.lms, knowledge="none", dataset="msrd")
    loaded = load_judge(path, lms=ctx.lms)
    prediction, ledger = judge(loaded)
    assert ledger.calls == 3 and prediction.label == "Irrelevant" and loaded.config["samples"] == 3
    assert "COMPILED INSTRUCTIONS" in lm.history[-1]["messages"][0]["content"]


def test_the_judge_flags_refuse_other_settings():
    from hiera_dspy.jobs.preparing import judge_votes

    assert judge_votes(("samples=5",)) == {"samples": 5, "temperature": DEFAULT_TEMPERATURE, "anchored": True}
    assert judge_votes(("samples=5", "anchored=false")) == {"samples": 5, "temperature": DEFAULT_TEMPERATURE,
                                                           "anchored": False}
    assert judge_votes(()) == {}
    with pytest.raises(HieraError, match="takes --samples, --temperature and --set anchored"):
        judge_votes(("delegation=never",))


def test_a_dry_run_prices_every_sample():
    from hiera_dspy.runs.cost import estimate

    pairs = [Pair(f"p{i}", f"query {i}", f"title {i}", "text", "Relevant", f"q{i}", f"i{i}") for i in range(6)]
    lms = RoleLMs.of(judge=dspy.LM("openai/gpt-4o-mini", timeout=30))  # client settings: the copy keeps them
    ctx = make_ctx("msrd")[0]
    ctx.lms = lms
    one = estimate(build("thomas", ctx), pairs, lms, sample=3)
    five = estimate(build("thomas", ctx, samples=5), pairs, lms, sample=3)
    assert five["calls"] == 5 * one["calls"] == 30
    assert five["input_tokens"] == pytest.approx(5 * one["input_tokens"]) and five["usd"] > 4 * one["usd"]
