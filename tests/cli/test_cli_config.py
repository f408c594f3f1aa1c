"""--set KEY=VALUE: method config from the command line, checked against the method's registered keys."""

from __future__ import annotations

import argparse
import json

import pytest

from eval import methods as eval_methods
from eval import run as eval_run
from hiera_dspy.cli.options import add_config_argument, config_from_args
from hiera_dspy.errors import HieraError


def parse(*settings):
    p = argparse.ArgumentParser()
    add_config_argument(p)
    return p.parse_args([a for s in settings for a in ("--set", s)])


def test_values_are_json_when_they_parse_else_text():
    config = config_from_args(parse("delegation=never", "k=5", "specialists=[\"query\"]", "knowledge=false"), "hiera")
    assert config == {"delegation": "never", "k": 5, "specialists": ["query"], "knowledge": False}
    assert config_from_args(parse("k=2"), "hiera", {"k": 7, "relation": False}) == {"k": 2, "relation": False}
    assert config_from_args(parse("llm_share=0.5", "tau=0.8"), "hiera-cascade") == {"llm_share": 0.5, "tau": 0.8}


@pytest.mark.parametrize("setting, message", [
    ("delegaton=never", "hiera has no config key 'delegaton'; its keys: C, anchored, consultation, coordination, delegation"),
    ("delegation=nevr", r"delegation='nevr' is not allowed; expected triage \| always \| never"),
    ("k=0", r"k=0 is not allowed; expected int >= 1, or null"),
    ("specialists=[\"query\",\"itme\"]", r"expected list of query \| item"),
    ("relation=yes", r"relation='yes' is not allowed; expected true \| false"),
    ("profile=hosted", r"expected auto \| paper \| local"),
    ("delegation", "expected KEY=VALUE"),
    ("=3", "expected KEY=VALUE"),
])
def test_bad_settings_say_what_to_do(setting, message):
    with pytest.raises(HieraError, match=message):
        config_from_args(parse(setting), "hiera")


def test_eval_run_applies_settings(h, patch_make_lm):
    patch_make_lm({"relational_transparency": "unclear", "label": "Relevant"})
    argv = ["--dataset", "msrd", "--split", "dev", "--method", "hiera", "--knowledge", "none", "--lm", "fake",
            "--limit", "3"]
    delegated = eval_run.main(argv)
    never = eval_run.main(argv + ["--set", "delegation=never"])
    assert delegated["delegation_rate"] == 1.0 and never["delegation_rate"] == 0.0
    assert never["lm_calls_per_judgment"] == 1.0 and delegated["run_id"] != never["run_id"]


def test_eval_run_refuses_settings_for_a_compiled_judge(tmp_path):
    with pytest.raises(HieraError, match="compiled --judge keeps its config"):
        eval_run.main(["--dataset", "msrd", "--judge", str(tmp_path / "j.json"), "--set", "k=1"])


def test_methods_lists_config(capsys):
    eval_methods.main(["--config", "hiera-cascade", "--json"])
    config = json.loads(capsys.readouterr().out)
    assert config["llm_share"] == 0.3 and config["tau_rule"] == "share" and config["delegation"] == "triage"
    with pytest.raises(HieraError, match="unknown method"):
        eval_methods.main(["--config", "nope"])


def test_signals_option_turns_any_graph_into_its_evidence_variant():
    from hiera_dspy.labels import get_scheme
    from hiera_dspy.methods import BuildContext, build
    from hiera_dspy.methods.learned_scorer import HieraSignalsProgram

    config = config_from_args(parse("signals=true", "embedder=lexical"), "judge+relation")
    program = build("judge+relation", BuildContext(get_scheme("msrd")), **config)
    assert isinstance(program, HieraSignalsProgram) and program.config["signals"] is True
    assert "signals" not in build("judge+relation", BuildContext(get_scheme("msrd"))).config  # unset: not in config
    with pytest.raises(ValueError, match="used only with signals=true"):
        build("hiera", BuildContext(get_scheme("msrd")), embedder="lexical")


def test_methods_prints_the_typed_table(capsys):
    eval_methods.main(["--config", "hiera"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ["key", "type", "default", "allowed", "meaning"]
    row = next(line for line in lines if line.startswith("delegation "))
    assert row.split()[:6] == ["delegation", "str", '"triage"', "triage", "|", "always"]
    assert "when the Judge delegates" in row


def test_every_config_key_is_typed_and_its_default_fits():
    from hiera_dspy.methods import available
    from hiera_dspy.methods.params import PARAMS, check

    for name, info in available().items():
        for key, default in {**info.defaults, **dict.fromkeys(info.options)}.items():
            assert key in PARAMS, f"{name}: {key} has no Param"
            assert PARAMS[key].doc and "\n" not in PARAMS[key].doc
            if key in info.defaults:
                check(name, key, default)


def test_build_refuses_a_bad_value_from_any_caller():
    from hiera_dspy.labels import get_scheme
    from hiera_dspy.methods import BuildContext, build

    with pytest.raises(ValueError, match="expected triage"):
        build("hiera", BuildContext(get_scheme("msrd")), delegation="nevr")
    assert build("hiera-cascade", BuildContext(get_scheme("msrd")), llm_share=1).config["llm_share"] == 1.0
