"""A flag means one thing in every command: the flags that meant two were renamed (--least-sure N, --decisions FILE,
--chars N, compile's --artifact FILE), and the old spelling still works for one release, with a line on stderr."""

from __future__ import annotations

import pytest

from eval import escalations, review, trace
from eval import mistakes as eval_errors
from optimize import compile as compile_cli


@pytest.mark.parametrize("parser,base,old,new,dest,value", [
    (review.parser, ["--run", "r"], "--budget", "--least-sure", "least_sure", "7"),
    (escalations.parser, ["--run", "r"], "--budget", "--least-sure", "least_sure", "7"),
    (escalations.parser, ["--run", "r"], "--labels", "--decisions", "decisions", "h.jsonl"),
    (trace.parser, ["--run", "r", "--pair", "p"], "--width", "--chars", "chars", "7"),
    (eval_errors.parser, ["--run", "r"], "--width", "--chars", "chars", "7"),
    (compile_cli.parser, ["--dataset", "msrd"], "--out", "--artifact", "artifact", "a.json"),
])
def test_the_new_spelling_and_the_old_one_for_a_release(parser, base, old, new, dest, value, capsys):
    expected = int(value) if value.isdigit() else value
    assert getattr(parser().parse_args([*base, new, value]), dest) == expected
    assert "renamed" not in capsys.readouterr().err
    assert getattr(parser().parse_args([*base, old, value]), dest) == expected
    assert f"{old} is renamed {new}" in capsys.readouterr().err
    assert old not in parser().format_help().replace(new, "")  # hidden from --help
