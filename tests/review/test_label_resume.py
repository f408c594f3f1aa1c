"""eval.label at scale: a finished run started again with nothing changed stops at once (its outputs are up to date);
a changed input, a new decision or --retry-errors re-exports; a big file is labelled through the lazy split."""

from __future__ import annotations

import json
import os

from labelling_helpers import write

from eval import label as eval_label
from hiera_dspy.data import jsonl


def argv(pairs, out, *extra):
    return ["--dataset", f"jsonl:{pairs}", "--labels", "Bad,Good", "--method", "zero-shot", "--lm", "fake",
            "--knowledge", "none", "--out", str(out), *extra]


def test_finished_run_is_not_redone(tmp_path, patch_make_lm, capsys, monkeypatch):
    patch_make_lm({"label": "Good"})
    monkeypatch.setattr(jsonl, "EAGER_BYTES", 0)  # the lazy split of a large file
    rows = [{"id": f"p{i}", "query": "spy movie", "item_title": f"T{i}", "item_text": "x"} for i in range(30)]
    pairs = write(tmp_path / "pairs.jsonl", [json.dumps(r) for r in rows])
    out = tmp_path / "out"
    first = eval_label.main(argv(pairs, out))
    assert first["labelled"] == 30 and len((out / "labels.jsonl").read_text().splitlines()) == 30
    stamp = (out / "labels.jsonl").stat().st_mtime_ns
    capsys.readouterr()
    again = eval_label.main(argv(pairs, out))
    assert again == first and "is up to date" in capsys.readouterr().err
    assert (out / "labels.jsonl").stat().st_mtime_ns == stamp
    os.utime(pairs, ns=(stamp + 10**9, stamp + 10**9))  # the input changed (or may have): resume and export again
    eval_label.main(argv(pairs, out))
    assert "is up to date" not in capsys.readouterr().err
    assert (out / "labels.jsonl").stat().st_mtime_ns != stamp
