"""One function names every run, and it names them as before: the ids below are what eval.run, eval.ablate,
optimize.compile, optimize.search, the labelling commands and bench/signals_llm.py computed before RunSpec existed,
so existing run stores resume."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

from eval import run as run_cli
from hiera_dspy.methods.learning import Learner
from hiera_dspy.runs.spec import RunSpec, run_id

LMS = {role: "openai/gpt-4o-mini" for role in ("judge", "relation", "query", "item")}


class FakeLMs:
    def describe(self, roles=None):
        return {role: model for role, model in LMS.items() if roles is None or role in roles}


def program(method, config, lm_roles=None):
    return SimpleNamespace(method=method, config=config, **({"lm_roles": lm_roles} if lm_roles is not None else {}))


class Cascade(Learner):
    """A prepared program whose learned state is a tau."""

    method, config = "hiera-cascade", {"llm_share": 0.3}

    def learned_state(self):
        return {"tau": 0.8125}


def test_eval_run_and_ablate_ids_are_unchanged():
    zero_shot = program("zero-shot", {"with_knowledge": False, "k": None})
    spec = RunSpec.judging(zero_shot, dataset="msrd", split="dev", lms=FakeLMs(), knowledge="catalog:msrd")
    assert spec.run_id == "a63d8e64ce3a"
    assert RunSpec.judging(Cascade(), dataset="msrd", split="dev", lms=FakeLMs(),
                           knowledge="catalog:msrd").run_id == "c11236b6ef7c"
    assert RunSpec.judging(zero_shot, dataset="msrd", split="dev", lms=FakeLMs(), knowledge="catalog:msrd",
                           judge="artifacts/msrd/hiera.json").run_id == "40a79a47f609"


def test_compile_search_and_bench_ids_are_unchanged():
    compile_spec = RunSpec("hiera", {"delegation": "triage"}, dataset="msrd", lms=LMS, knowledge="catalog:msrd",
                           learned={"tau": None})
    assert replace(compile_spec, qualifiers=("dev", "uncompiled")).run_id == "204df9cca350"
    assert replace(compile_spec, qualifiers=("dev", "compiled", "bootstrap", "smoke", 42,
                                             {"judge.decide": {"demos": []}})).run_id == "e0f18e7d5a36"
    search = RunSpec("hiera", {"delegation": "always"}, dataset="msrd", split="dev", lms=LMS, knowledge="none",
                     extra={"demos": 1, "n_train": 2, "seed": 42, "phase": "search"})
    assert search.run_id == "fd5284096e4a"
    bench = RunSpec("hiera+signals", {"delegation": "never"}, qualifiers=("signals-llm",),
                    extra={"bench": "signals_llm", "lm": "fake", "knowledge": "catalog:msrd", "n_train": 40,
                           "embedder": "lexical"})
    assert bench.run_id == "19004b152c59"


def test_a_method_without_lm_roles_names_no_lm():
    scorer = program("embed-lr", {"embedder": "lexical", "C": 1.0}, lm_roles=())
    spec = RunSpec.judging(scorer, dataset="msrd", split="dev", lms=FakeLMs(), knowledge="none")
    assert spec.identity()["lms"] == {} and spec.run_id == run_id(spec.identity())


def test_eval_run_records_the_identity_it_hashes(tmp_path, patch_make_lm):
    patch_make_lm({"label": "Relevant"})
    out = tmp_path / "out"
    metrics = run_cli.main(["--dataset", "msrd", "--split", "dev", "--method", "zero-shot", "--limit", "2",
                            "--knowledge", "none", "--lm", "openai/x", "--out", str(out)])
    identity = json.loads((out / "config.json").read_text())
    assert set(identity) >= {"method", "config", "judge", "dataset", "split", "limit", "lms", "knowledge"}
    from hiera_dspy.labels import get_scheme

    assert identity["scheme"]["labels"] == list(get_scheme("msrd").labels)  # its scale, kept for a later export
    kept = {k: v for k, v in identity.items() if k not in ("limit", "skipped_rows", "scheme")}  # beside the id
    assert metrics["run_id"] == run_id(kept)  # the pre-RunSpec formula over the recorded identity


def test_labelling_ids_are_unchanged():
    zero_shot = program("zero-shot", {"with_knowledge": False, "k": None})
    spec = RunSpec.judging(zero_shot, dataset="holes:/q/qrels.txt", split="holes", lms=FakeLMs(), knowledge="catalog",
                           extra={"holes": {"depth": 10, "runs": ["/r/bm25.run"]}})
    assert spec.run_id == "e60619b49ade"
