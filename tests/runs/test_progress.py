"""The progress display of judging runs (hiera_dspy/runs/progress.py): the log lines without a terminal, the tqdm bar
on one (a real pseudo-terminal), and what eval.run prints with and without --verbose."""

from __future__ import annotations

import io
import os
import pty
import select

import pytest

from hiera_dspy.records import Judgment, Step
from hiera_dspy.runs.progress import Display, Progress

GPT_MINI = {"input": 0.15e-6, "output": 0.6e-6}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def row(i: int, error: str | None = None, role: str = "judge") -> Judgment:
    step = Step(name="judge.decide", role=role, calls=1, prompt_tokens=900, completion_tokens=100)
    return Judgment(id=f"p{i}", label=None if error else "Relevant", error=error, tokens=1000, steps=[step],
                    seconds=0.5)


def log_display(clock: Clock, **kwargs) -> tuple[Display, io.StringIO]:
    out = io.StringIO()
    return Display(desc="hiera", stream=out, tty=False, clock=clock, **kwargs), out


def test_log_lines_every_5_percent_with_rate_eta_errors_tokens():
    clock = Clock()
    display, out = log_display(clock)
    report = Progress(total=40, finished=0, enabled=display)
    for i in range(40):
        clock.now += 0.5
        report(row(i, error="RuntimeError: boom" if i == 3 else None))
    report.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 20  # one per 5% (2 of 40 judgments), the last at 40/40; close() adds none
    assert lines[0] == ("hiera: 2/40 (5%) 2.00 judgments/s, ETA 0:00:19, elapsed 0:00:01, errors 0, "
                        "tokens 2,000")
    assert lines[1].startswith("hiera: 4/40 (10%)") and lines[1].endswith("errors 1, tokens 4,000")
    assert lines[-1] == ("hiera: 40/40 (100%) 2.00 judgments/s, ETA 0:00:00, elapsed 0:00:20, errors 1, "
                         "tokens 40,000")


def test_log_lines_every_10_seconds_when_5_percent_takes_longer():
    clock = Clock()
    display, out = log_display(clock)
    report = Progress(total=1000, finished=0, enabled=display)
    for i in range(5):
        clock.now += 4.0  # 5% is 50 judgments: far away; a line is due at 12 s, then at 24 s (>= 10 s later)
        report(row(i))
    report.close()  # the count the last line did not show
    assert [line.split(" (")[0] for line in out.getvalue().splitlines()] == ["hiera: 3/1000", "hiera: 5/1000"]


def test_resumed_run_counts_rate_from_new_judgments_and_cost_where_priced():
    clock = Clock()
    display, out = log_display(clock, prices={"judge": GPT_MINI})
    report = Progress(total=4, finished=2, enabled=display)  # 2 already done: no speed credit for them
    for i in range(2):
        clock.now += 2.0
        report(row(i))
    assert out.getvalue().splitlines()[-1] == ("hiera: 4/4 (100%) 0.50 judgments/s, ETA 0:00:00, elapsed 0:00:04, "
                                               "errors 0, tokens 2,000, cost $0.00")
    assert report.cost == pytest.approx(2 * (900 * 0.15e-6 + 100 * 0.6e-6))


def test_cost_is_left_out_once_a_role_has_no_price():
    display, out = log_display(Clock(), prices={"judge": GPT_MINI})
    report = Progress(total=1, finished=0, enabled=display)
    report(row(0, role="relation"))
    assert report.cost is None and "cost" not in out.getvalue()


def test_verbose_adds_one_line_per_judgment_and_silent_prints_nothing():
    display, out = log_display(Clock(), verbose=True)
    report = Progress(total=2, finished=0, enabled=display)
    report(row(0))
    report(row(1, error="ValueError: x"))
    assert out.getvalue().splitlines()[0] == "[1/2] p0: Relevant (0.5s)"
    assert "[2/2] p1: error (0.5s)" in out.getvalue()
    quiet = Progress(total=1, finished=0, enabled=False)
    quiet(row(0))
    assert quiet.finished == 1 and quiet.tokens == 1000


def read_all(fd: int) -> str:
    chunks = []
    while select.select([fd], [], [], 0.2)[0]:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode("utf-8", "replace")


def test_bar_on_a_pseudo_terminal():
    master, slave = pty.openpty()
    with os.fdopen(slave, "w", encoding="utf-8") as terminal:
        report = Progress(total=30, finished=0, enabled=Display(desc="hiera", stream=terminal, verbose=True))
        for i in range(30):
            report(row(i, error="RuntimeError: x" if i == 0 else None))
        report.close()
        terminal.flush()
        screen = read_all(master)
    os.close(master)
    screen = screen.replace("\r\n", "\n")  # the terminal's own newline translation
    assert "\r" in screen  # one line, redrawn in place
    last = [part for part in screen.split("\r") if part.strip()][-1].strip()
    assert last.startswith("hiera: 100%") and "30/30 [" in last and "judgments/s" in last
    assert "errors 1, tokens 30,000" in last
    assert "[30/30] p29: Relevant (0.5s)" in screen  # --verbose lines go above the bar (tqdm.write)


def test_eval_run_prints_log_lines_and_the_per_judgment_lines_only_with_verbose(capsys, patch_make_lm):
    from eval import run

    patch_make_lm({"label": "Relevant"})
    run.main(["--dataset", "msrd", "--split", "dev", "--method", "zero-shot", "--limit", "4", "--run-id", "quiet"])
    err = capsys.readouterr().err
    assert "zero-shot: 4/4 (100%)" in err and "errors 0, tokens " in err
    assert "[1/4]" not in err
    run.main(["--dataset", "msrd", "--split", "dev", "--method", "zero-shot", "--limit", "4", "--run-id", "loud",
              "--verbose"])
    err = capsys.readouterr().err
    assert "[1/4] msrd:" in err and "zero-shot: 4/4 (100%)" in err


def test_prices_given_as_a_function_are_looked_up_at_the_first_judgment():
    looked_up = []
    display, out = log_display(Clock(), prices=lambda: looked_up.append(1) or {"judge": GPT_MINI})
    report = Progress(total=2, finished=0, enabled=display)
    assert not looked_up and "cost" not in report.postfix()  # nothing imported before the run's first requests
    report(row(0))
    report(row(1))
    assert looked_up == [1] and report.cost == pytest.approx(2 * (900 * 0.15e-6 + 100 * 0.6e-6))
