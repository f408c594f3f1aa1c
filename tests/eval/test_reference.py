"""Numbers a newcomer can read: n, kappa with its bootstrap CI and embed-lr on the same pairs under every run."""

from __future__ import annotations

import re

import eval.run as run_cli
import optimize.compile as compile_cli


def test_eval_run_prints_kappa_ci_and_the_embed_lr_reference(patch_make_lm, tmp_path, capsys):
    patch_make_lm({"label": lambda p: "Relevant" if "action" in p.lower() else "Irrelevant"})
    run_cli.main(["--dataset", "msrd", "--split", "dev", "--method", "zero-shot", "--limit", "12", "--knowledge",
                  "none", "--lm", "fake", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    line = re.search(r"kappa (-?\d\.\d{3}|undefined)( \[95% CI [^\]]+\])? on n=12; "
                     r"Krippendorff's alpha \(ordinal\) (-?\d\.\d{3}|undefined)( \[95% CI [^\]]+\])?; "
                     r"embed-lr \(fitted on train, [\d,]+ pairs\) on the same pairs: "
                     r"(-?\d\.\d{3}|undefined).*McNemar vs embed-lr b=\d+ c=\d+ p=\d\.\d{3}", out)
    assert line, out


def test_reference_can_be_turned_off(patch_make_lm, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HIERA_REFERENCE", "none")
    patch_make_lm()
    run_cli.main(["--dataset", "msrd", "--split", "dev", "--method", "zero-shot", "--limit", "3", "--knowledge",
                  "none", "--lm", "fake", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert "on n=3" in out and "embed-lr" not in out


def test_smoke_budget_says_its_sample_is_too_small(patch_make_lm, tmp_path, capsys):
    patch_make_lm()
    compile_cli.main(["--dataset", "msrd", "--budget", "smoke", "--knowledge", "none", "--lm", "fake",
                      "--method", "zero-shot", "--out", str(tmp_path / "a.json")])
    out = capsys.readouterr().out
    assert "too few to compare methods" in out and "bench/local_probs.py" in out
    assert re.search(r"on n=4; embed-lr \(fitted on train, [\d,]+ pairs\) on the same pairs", out)
