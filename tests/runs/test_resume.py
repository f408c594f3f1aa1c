"""Interrupted runs resume: eval.run with the same run id judges nothing twice and loses nothing."""

from __future__ import annotations

import threading

import pytest

import hiera_dspy.runs.runner as runner
from eval import run as eval_run

LIMIT = 12
COMPARED = ("n", "accuracy", "macro_f1", "kappa", "balanced_accuracy", "confusion", "errors", "pairs",
            "tokens_per_judgment", "lm_calls_per_judgment", "tokens_by_role", "delegation_rate", "unlabelled")


class Interrupted(BaseException):
    """Stands in for KeyboardInterrupt / SystemExit: not an Exception, so judge_one does not swallow it."""


def answers(h):
    # deterministic and pair-dependent: some pairs delegated, labels vary
    return {"relational_transparency": lambda p: "unclear" if len(h.query_of(p)) % 2 else "clear",
            "label": lambda p: "Relevant" if "a" in h.query_of(p) else "Irrelevant"}


def argv(run_id, *extra):
    return ["--dataset", "msrd", "--split", "dev", "--method", "hiera", "--knowledge", "none", "--lm", "fake",
            "--limit", str(LIMIT), "--threads", "3", "--run-id", run_id, *extra]


class CountingJudge:
    """Wraps runner.judge_one: counts real judgments per pair id; raises `Interrupted` once `budget` is spent."""

    def __init__(self, real, budget=None):
        self.real, self.budget = real, budget
        self.judged: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, program, pair, position=None):
        with self.lock:
            if self.budget is not None and len(self.judged) >= self.budget:
                raise Interrupted()
            self.judged.append(pair.id)
        return self.real(program, pair, position)


@pytest.fixture
def counting(monkeypatch):
    real = runner.judge_one

    def install(budget=None):
        wrapper = CountingJudge(real, budget)
        monkeypatch.setattr(runner, "judge_one", wrapper)
        return wrapper

    return install


def test_interrupted_run_resumes_without_repeating_or_losing(h, patch_make_lm, counting, tmp_path):
    patch_make_lm(answers(h))
    reference = eval_run.main(argv("uninterrupted", "--out", str(tmp_path / "ref")))
    assert reference["pairs"] == LIMIT and reference["errors"] == 0

    first = counting(budget=5)
    with pytest.raises(Interrupted):
        eval_run.main(argv("resumed", "--out", str(tmp_path / "resumed")))
    assert len(first.judged) == 5

    second = counting()
    metrics = eval_run.main(argv("resumed", "--out", str(tmp_path / "resumed")))
    assert not set(first.judged) & set(second.judged), "a judgment was done twice"
    assert len(first.judged) + len(second.judged) == LIMIT
    assert metrics["pairs"] == LIMIT and metrics["errors"] == 0
    for key in COMPARED:
        assert metrics[key] == reference[key], key
    rows = (tmp_path / "resumed" / "predictions.jsonl").read_text().splitlines()
    assert len(rows) == LIMIT

    third = counting()
    again = eval_run.main(argv("resumed", "--out", str(tmp_path / "resumed")))
    assert third.judged == []  # a finished run judges nothing
    assert all(again[k] == metrics[k] for k in COMPARED)


def test_larger_limit_judges_only_new_pairs(h, patch_make_lm, counting):
    patch_make_lm(answers(h))
    first = counting()
    eval_run.main(argv("grow") + ["--limit", "4"])  # the last --limit wins
    assert len(first.judged) == 4
    second = counting()
    metrics = eval_run.main(argv("grow"))
    assert len(second.judged) == LIMIT - 4 and not set(first.judged) & set(second.judged)
    assert metrics["pairs"] == LIMIT


def test_retry_errors_rejudges_only_errors(h, patch_make_lm, counting):
    broken = {"on": True}
    base = answers(h)
    patch_make_lm({**base, "label": lambda p: "Maybe" if broken["on"] and len(h.query_of(p)) % 3 == 0
                   else base["label"](p)})
    first = counting()
    m1 = eval_run.main(argv("retry", "--max-error-rate", "1"))  # the exit status: tests/reliability/test_runs.py
    assert len(first.judged) == LIMIT and 0 < m1["errors"] < LIMIT
    errors = m1["errors"]
    broken["on"] = False
    second = counting()
    eval_run.main(argv("retry", "--max-error-rate", "1"))
    assert second.judged == []  # without --retry-errors an error row counts as finished
    third = counting()
    m3 = eval_run.main(argv("retry", "--retry-errors"))
    assert len(third.judged) == errors and m3["errors"] == 0 and m3["pairs"] == LIMIT


def test_interrupt_stops_queued_judgments(h, monkeypatch):
    from hiera_dspy.lm.roles import lm_factory
    from hiera_dspy.testing import fake_lm

    real = runner.judge_one
    calls, lock = [], threading.Lock()

    def judge_once_interrupted(program, pair, position=None):
        with lock:
            calls.append(pair.id)
            n = len(calls)
        if n == 2:
            raise Interrupted()  # like Ctrl-C: the run should stop here
        return real(program, pair, position)

    monkeypatch.setattr(runner, "judge_one", judge_once_interrupted)
    with lm_factory(lambda spec, role: fake_lm(answers(h), latency=0.01)), pytest.raises(Interrupted):
        eval_run.main(argv("ctrl-c"))
    # the judgments already running on the 3 workers may finish (and a worker may just have picked one more);
    # the queued ones must not start
    assert len(calls) <= 2 + 2 * 3, f"{len(calls)} of {LIMIT} judgments started despite the interrupt"
