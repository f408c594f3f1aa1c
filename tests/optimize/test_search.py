"""optimize.search through the fake LM: trials judged through the run store, a Pareto front, a best.json that
optimize.compile --config accepts."""

import json

from hiera_dspy.jobs.optimizers import BUDGETS
from optimize import compile as compile_cli
from optimize import search


def test_search_writes_front_and_compilable_best(patch_make_lm, tmp_path, capsys):
    patch_make_lm({"query_interpretability": "unclear"})
    out = tmp_path / "search"
    argv = ["--dataset", "msrd", "--trials", "2", "--budget", "smoke", "--seed", "42", "--out", str(out)]
    result = search.main(argv)
    trials = json.loads((out / "search.json").read_text())
    assert len(trials) == 2 and all(t["state"] == "COMPLETE" for t in trials)
    for t in trials:
        assert {"kappa", "tokens_per_judgment", "config", "knowledge_source", "run_id", "params"} <= set(t)
        assert t["params"]["demos"] in (0, 1, 2) and t["config"]["delegation"] in ("triage", "always")
    assert any(t["pareto"] for t in trials)
    assert "| trial | kappa |" in (out / "pareto.md").read_text()
    best = json.loads((out / "best.json").read_text())
    assert best["method"] == "hiera" and best["knowledge"] in ("none", "catalog")
    assert set(best["config"]) == {"relation", "specialists", "knowledge", "k", "delegation"}
    assert best == result["best"] and "Pareto front" in capsys.readouterr().out

    again = search.main(argv)  # same seed, same trials: every judgment comes from the run store
    assert [t["run_id"] for t in again["trials"]] == [t["run_id"] for t in trials]

    metrics = compile_cli.main(["--dataset", "msrd", "--config", str(out / "best.json"), "--budget", "smoke",
                                "--skip-before", "--out", str(tmp_path / "judge.json")])
    artifact = json.loads((tmp_path / "judge.json").read_text())
    assert artifact["method"] == "hiera" and artifact["knowledge"] in ("none", "catalog:msrd")
    assert {k: artifact["config"][k] for k in best["config"]} == best["config"]
    assert metrics["after"]["pairs"] == BUDGETS["smoke"].n_dev


def test_search_takes_the_shared_run_options():
    args = search.parser().parse_args(["--dataset", "msrd", "--trials", "1", "--store", "s.sqlite", "--wait",
                                       "--max-error-rate", "0.2"])
    assert (args.store, args.wait, args.max_error_rate) == ("s.sqlite", True, 0.2)
