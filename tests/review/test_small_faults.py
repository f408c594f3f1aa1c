"""Small faults a user meets: a bad --human-sample is an argparse error (exit 2), a malformed JSONL row says how to
skip such rows, and tied run scores are ranked by trec_eval's rule and said so."""

from __future__ import annotations

import json

import pytest
from labelling_helpers import ANSWERS, holes_argv, write

from eval import holes as eval_holes
from eval import label as eval_label
from hiera_dspy.errors import HieraError


@pytest.mark.parametrize("size", ["0", "101%", "-3", "0%", "ten"])
def test_a_bad_human_sample_is_an_argparse_error(bench, tmp_path, size, capsys):
    with pytest.raises(SystemExit) as info:
        eval_holes.main(holes_argv(bench, tmp_path / "out", f"--human-sample={size}"))
    assert info.value.code == 2
    assert "argument --human-sample:" in capsys.readouterr().err


def test_a_malformed_jsonl_row_names_the_skip_option(tmp_path):
    data = write(tmp_path / "pairs.jsonl", [json.dumps({"id": "a", "query": "q", "item_title": "t", "item_text": "x"}),
                                            "{broken"])
    with pytest.raises(HieraError, match=r"pairs.jsonl, line 2: not valid JSON .*--on-bad-row skip"):
        eval_label.main(["--dataset", f"jsonl:{data}", "--labels", "Bad,Good", "--method", "zero-shot", "--lm", "fake",
                         "--knowledge", "none", "--out", str(tmp_path / "out")])


def test_tied_scores_are_ranked_by_docid_descending_and_said(bench, patch_make_lm, tmp_path, capsys):
    patch_make_lm(ANSWERS)
    tied = write(tmp_path / "tied.run", ["q2 Q0 d5 1 1.0 t", "q2 Q0 d6 2 1.0 t", "q2 Q0 d7 3 1.0 t"])
    argv = holes_argv({**bench, "runs": [tied]}, tmp_path / "out")
    argv[argv.index("--depth") + 1] = "2"
    eval_holes.main(argv)
    assert "run tied: 2 documents in a top 2 share their score with a neighbour; ranked by docid, descending " \
           "(trec_eval's rule" in capsys.readouterr().err
    holes = [json.loads(line)["id"] for line in (tmp_path / "out" / "new.jsonl").read_text().splitlines()]
    assert holes == ["q2:d7", "q2:d6"]  # not the file order d5, d6
