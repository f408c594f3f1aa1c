import json

import pytest

from hiera_dspy.runs.evaluation_report import pareto_frontier, sanitize, summarize_method, write_report

LABELS = ["0", "1", "2"]
GOLD = ["0", "0", "1", "1", "2", "2", "1"]


def rows_judge():
    # reference: wrong on ids 2 and 6, escalated on id 7 (label None, so wrong) -> acc 4/7, kappa 13/34
    # (tests/eval/test_metrics.py computes these by hand)
    labels = ["0", "1", "1", "1", "2", "0", None]
    return [{"id": i + 1, "gold": g, "label": p, "error": None, "escalated": p is None,
             "tokens": 100 if p else 50, "lm_calls": 1, "tokens_by_role": {"judge": 100 if p else 50},
             "seconds": float(i + 1) if p else 9.0, "delegated": None}
            for i, (g, p) in enumerate(zip(GOLD, labels))]


def rows_web():
    # all judged rows correct; id 7 errored (label None); delegated on 3 of 6 non-None flags
    deleg = [True, False, True, True, False, False, None]
    return [{"id": i + 1, "gold": g, "label": None if i == 6 else g, "error": "timeout" if i == 6 else None,
             "escalated": False, "tokens": 40 if i == 6 else 300, "lm_calls": 3,
             "tokens_by_role": {"judge": 100, "web": 200}, "seconds": 2.0, "delegated": d}
            for i, (g, d) in enumerate(zip(GOLD, deleg))]


def test_summarize_reference():
    s = summarize_method("judge", rows_judge(), LABELS)
    assert (s["n"], s["answered"], s["unlabelled"], s["errors"], s["escalations"]) == (7, 6, 1, 0, 1)
    assert s["accuracy"] == pytest.approx(4 / 7) and s["kappa"] == pytest.approx(13 / 34)
    assert s["coverage"] == pytest.approx(6 / 7)
    assert s["answered_only"]["accuracy"] == pytest.approx(4 / 6) and s["answered_only"]["kappa"] == pytest.approx(0.5)
    assert s["accuracy_ci"][0] <= s["accuracy"] <= s["accuracy_ci"][1]
    assert s["mcnemar_p"] is None and s["bonferroni_m"] is None and s["delegation_rate"] is None
    # costs/latency over the 7 rows without error, the escalated one included (its debate was paid for):
    # seconds 1..6 and 9 -> mean 30/7, p50 4, p95 at position 0.95*6 = 5.7 -> 6 + 0.7*(9-6) = 8.1
    assert s["tokens_per_judgment"] == pytest.approx(650 / 7) and s["lm_calls_per_judgment"] == 1
    assert (s["seconds_per_judgment"], s["seconds_p50"], s["seconds_p95"]) == pytest.approx((30 / 7, 4.0, 8.1))
    assert s["tokens_total"] == 650 and s["tokens_by_role"] == {"judge": pytest.approx(650 / 7)}


def test_summarize_vs_reference():
    # every pair (id 7 has no label in either: wrong in both): web right & judge wrong on ids 2, 6 -> b=2, c=0
    # exact: p = 2 * (1/2)^2 = 0.5; Bonferroni m=3 -> min(1, 1.5) = 1
    s = summarize_method("judge+web", rows_web(), LABELS, reference_rows=rows_judge())
    assert (s["mcnemar"]["b"], s["mcnemar"]["c"], s["mcnemar"]["n"], s["mcnemar_p"]) == (2, 0, 7, pytest.approx(0.5))
    assert s["bonferroni_m"] == 1
    three = summarize_method("w", rows_web(), LABELS, rows_judge(), n_comparisons=3)
    assert three["mcnemar_p"] == 1.0 and three["bonferroni_m"] == 3
    # the errored pair counts as wrong: 6/7, not the 1.0 the answered pairs alone would give
    assert s["accuracy"] == pytest.approx(6 / 7) and s["answered_only"]["accuracy"] == 1.0
    assert s["accuracy_ci"][1] == 1.0 and s["accuracy_ci"][0] < 6 / 7
    assert s["tokens_per_judgment"] == 300 and s["tokens_by_role"] == {"judge": 100, "web": 200}
    assert s["delegation_rate"] == 0.5 and (s["errors"], s["escalations"]) == (1, 0)


def test_pareto_and_sanitize():
    assert pareto_frontier([(100, 0.5), (300, 1.0), (200, 0.4), (300, 0.9), (50, 0.1)]) == [4, 0, 1]
    assert sanitize("judge+web") == "judge_web" and sanitize("a/b c") == "a_b_c" and sanitize("++") == "method"


def test_write_report(tmp_path):
    ref = summarize_method("judge", rows_judge(), LABELS)
    web = summarize_method("judge+web", rows_web(), LABELS, reference_rows=rows_judge())
    preds = {"judge": rows_judge(), "judge+web": rows_web()}
    paths = write_report(tmp_path / "out", [ref, web], preds, LABELS, "Tiny run", reference="judge")
    expected = {"report.md", "summary.json", "confusion_judge.png", "confusion_judge_web.png",
                "ablation_bars.png", "cost_quality.png"}
    assert set(paths) == expected
    for name in expected:
        assert (tmp_path / "out" / name).stat().st_size > 0
        if name.endswith(".png"):
            assert (tmp_path / "out" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "out" / "report.md").read_text()
    assert md.startswith("# Tiny run")
    assert "| judge (ref) | 0.571 [" in md and "| judge+web | 0.857 [" in md
    # coverage, p, tokens, calls, LLM share, p50, delegation, err/esc
    assert "| 0.86 | 0.5000 | 300 | 3.00 | 1.00 | 2.00 | 0.50 | 1/0 |" in md
    assert "| 0.86 | — | 93 | 1.00 | 1.00 | 4.00 | — | 0/1 |" in md  # 650/7 tokens; p50 over the rows without error
    assert "counts as wrong" in md
    assert "### Answered only" in md and "| judge+web | 0.86 | 6 | 1.000 | 1.000 | 1.000 |" in md
    assert "## judge+web" in md and "| gold \\ pred | 0 | 1 | 2 | (no label) |" in md
    assert "| 1 | 0 | 2 | 0 | 1 |" in md and "| 2 | 1 | 0 | 1 | 0 |" in md  # judge: gold 1 and 2 rows
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == [ref, web]


def test_write_report_name_collision(tmp_path):
    s = [summarize_method(m, rows_judge(), LABELS) for m in ("a+b", "a b")]
    paths = write_report(tmp_path, s, {m: rows_judge() for m in ("a+b", "a b")}, LABELS, "t")
    assert {"confusion_a_b.png", "confusion_a_b_2.png"} <= set(paths)


def test_summary_counts_human_decisions_like_eval_run():
    """An escalated judgment decided by a human counts in ablate's summary as it does in eval.run's metrics."""
    from hiera_dspy.runs.evaluation_report import summarize_method
    from hiera_dspy.runs.tally import metrics_from_rows

    rows = [{"id": "a", "gold": "Relevant", "label": "Relevant", "tokens": 10, "lm_calls": 1, "seconds": 1.0},
            {"id": "b", "gold": "Irrelevant", "label": None, "escalated": True, "human_label": "Irrelevant",
             "tokens": 30, "lm_calls": 3, "seconds": 2.0}]
    s = summarize_method("dream", rows, ["Irrelevant", "Relevant"])
    m = metrics_from_rows(rows, ["Irrelevant", "Relevant"])
    assert s["answered"] == m["answered"] == 2 and s["accuracy"] == m["accuracy"] == 1.0 and s["coverage"] == 1.0
    undecided = [rows[0], {**rows[1], "human_label": None}]
    assert summarize_method("dream", undecided, ["Irrelevant", "Relevant"])["accuracy"] == 0.5


def test_bonferroni_families():
    """m is the number of comparisons made against the reference within each family, as the paper's tables."""
    from hiera_dspy.runs.evaluation_report import comparison_families, family_note

    families = {"hiera": "hiera", **{f"abl{i}": "ablation" for i in range(7)},
                **{f"base{i}": "baseline" for i in range(11)}, "embed-lr": "signals"}
    m = comparison_families(families, "hiera")
    assert "hiera" not in m and m["abl0"] == 7 and m["base10"] == 11 and m["embed-lr"] == 1
    assert comparison_families(families, None) == {}
    assert family_note(families, "hiera") == ("Bonferroni: each p is multiplied by the number of comparisons against "
                                              "hiera in its family (ablation m=7, baseline m=11, signals m=1).")


def test_a_graded_report_gives_the_quadratic_weighted_kappa_with_its_ci(tmp_path):
    """Three grades: the summary and report.md carry the weighted kappa (a miss by one grade costs less); two labels
    keep the table they had."""
    from hiera_dspy.metrics.classification import classification_metrics

    s = summarize_method("judge", rows_judge(), LABELS)
    expected = classification_metrics(GOLD, [r["label"] for r in rows_judge()], LABELS)["weighted_kappa"]
    assert s["weighted_kappa"] == pytest.approx(expected) and s["weighted_kappa"] != s["kappa"]
    assert s["weighted_kappa_ci"][0] <= s["weighted_kappa"] <= s["weighted_kappa_ci"][1]
    write_report(tmp_path, [s], {"judge": rows_judge()}, LABELS, "graded")
    header = (tmp_path / "report.md").read_text().splitlines()[2]
    assert "κw quadratic [95% CI]" in header
    two = [{**r, "gold": "1" if r["gold"] != "0" else "0", "label": r["label"] and ("1" if r["label"] != "0" else "0")}
           for r in rows_judge()]
    assert "weighted_kappa" not in summarize_method("judge", two, ["0", "1"])
