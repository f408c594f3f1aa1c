"""An item text longer than the judge reads is cut, and says so: `truncated` {field: original characters} on the
judgment and its labels.jsonl record, a count in metrics and the summary; $HIERA_ITEM_CHARS sets the limit."""

from __future__ import annotations

import json

from labelling_helpers import write

from eval import label as eval_label
from hiera_dspy.lm import ledger
from hiera_dspy.untrusted.blocks import ITEM_TEXT_BUDGET, as_data, item_block

LONG = 60_000


def _pairs(tmp_path):
    words = " ".join(f"word{i}" for i in range(LONG // 8))[:LONG]
    rows = [{"id": "long", "query": "spy movie", "item_title": "A long one", "item_text": words},
            {"id": "short", "query": "cat film", "item_title": "A short one", "item_text": "a cat film"}]
    return write(tmp_path / "pairs.jsonl", [json.dumps(r) for r in rows]), len(words)


def test_a_cut_is_noted_only_for_the_judged_item():
    book = ledger.Ledger()
    with ledger.bind(book):
        text = " ".join(f"word{i}" for i in range(600))
        item_block("t", text, judged=False)  # a few-shot example's text: not this judgment's
        assert book.cuts == set()
        block = item_block(" ".join(f"t{i}" for i in range(120)), text)
    assert book.cuts == {"item_title", "item_text"} and "…[truncated]" in block
    assert len(as_data(text)) <= ITEM_TEXT_BUDGET + len(" …[truncated]") < len(text)


def test_a_long_text_is_flagged_counted_and_the_limit_is_a_setting(tmp_path, patch_make_lm, monkeypatch, capsys):
    patch_make_lm({"label": "Good"})
    data, original = _pairs(tmp_path)
    argv = ["--dataset", f"jsonl:{data}", "--labels", "Bad,Good", "--method", "zero-shot", "--lm", "fake",
            "--knowledge", "none"]
    summary = eval_label.main([*argv, "--out", str(tmp_path / "cut")])
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "cut" / "labels.jsonl").read_text().splitlines())}
    assert records["long"]["truncated"] == {"item_text": original} and "truncated" not in records["short"]
    assert records["long"]["label"] == "Good"  # cut, still judged: the flag says what the judge did not read
    assert summary["truncated"] == 1 and "1 pairs had an item text longer than the judge reads" in capsys.readouterr().out

    from hiera_dspy.cli.options import runs_dir
    from hiera_dspy.runs.tally import metrics_from_rows
    from hiera_dspy.store.run_store import RunStore

    rows = RunStore(runs_dir() / "store.sqlite").rows(summary["run_id"])
    assert metrics_from_rows(rows, ["Bad", "Good"])["truncated"] == 1

    monkeypatch.setenv("HIERA_ITEM_CHARS", str(LONG + 10))
    wide = eval_label.main([*argv, "--out", str(tmp_path / "wide"), "--run-id", "wide"])
    assert wide["truncated"] == 0
