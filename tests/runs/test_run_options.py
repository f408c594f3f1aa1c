"""The run options and input checks of the CLIs (in-process, fake LM): unsafe run ids, a run id reused with another
config, --limit 0, an --out or --store or --config that is the wrong kind of path give one-line errors before any LM
call; --on-bad-row skip is counted on stderr, in metrics.json and config.json; eval.ablate and optimize.compile exit
with status 3 above --max-error-rate, after writing everything."""

from __future__ import annotations

import json

import pytest

from eval import ablate
from eval import run as eval_run
from hiera_dspy.cli.options import EXIT_ERROR_RATE, cli_main
from optimize import compile as compile_cli


@pytest.fixture
def calls():
    """Every CLI-built LM is a fake one (label "Maybe", an error, when the prompt holds a word of `broken`)."""
    from hiera_dspy.lm.roles import lm_factory
    from hiera_dspy.testing import fake_lm

    engines, broken = [], []

    def make(spec, role="judge"):
        lm = fake_lm({"label": lambda p: "Maybe" if any(b in p for b in broken) else "Relevant",
                      "query_interpretability": "clear", "relational_transparency": "clear"})
        engines.append(lm.engine)
        return lm

    counter = lambda: sum(e.calls for e in engines)  # noqa: E731
    counter.broken = broken
    with lm_factory(make):
        yield counter


def run_argv(tmp_path, *extra):
    return ["--dataset", "msrd", "--split", "dev", "--method", "zero-shot", "--knowledge", "none", "--lm", "fake",
            "--limit", "3", *extra]


def one_line_exit(capsys, call) -> str:
    """The command as its console script runs it (`cli_main`: a library error is one line and an exit status)."""
    with pytest.raises(SystemExit) as err:
        cli_main(call)
    message = err.value.code if isinstance(err.value.code, str) else capsys.readouterr().err.strip().splitlines()[-1]
    assert "Traceback" not in message and "\n" not in message.strip()
    return message


@pytest.mark.parametrize("run_id", ["..", "../../etc", "/tmp/abs", "a/b"])
def test_unsafe_run_id_is_refused_and_nothing_is_written(tmp_path, calls, capsys, run_id):
    runs = tmp_path / "runs"
    message = one_line_exit(capsys, lambda: eval_run.main(run_argv(tmp_path, "--run-id", run_id)))
    assert "argument --run-id: invalid run id" in message
    assert calls() == 0 and not (tmp_path / "metrics.json").exists() and not runs.exists()


def test_a_run_id_reused_with_another_method_is_refused(tmp_path, calls, capsys):
    eval_run.main(run_argv(tmp_path, "--run-id", "mine"))
    before = calls()
    argv = run_argv(tmp_path, "--run-id", "mine")
    argv[argv.index("zero-shot")] = "dna"
    message = one_line_exit(capsys, lambda: eval_run.main(argv))
    assert message.startswith("error: run 'mine' in ") and 'method: "zero-shot" -> "dna"' in message
    assert "start a new run with another --run-id" in message
    assert calls() == before
    eval_run.main(run_argv(tmp_path, "--run-id", "mine", "--limit", "5"))  # a larger --limit resumes the same run
    assert calls() == before + 2


@pytest.mark.parametrize("flag, value, expected", [
    ("--limit", "0", "argument --limit: must be >= 1, got 0"),
    ("--limit", "-3", "argument --limit: must be >= 1, got -3"),
    ("--threads", "0", "argument --threads: must be >= 1, got 0"),
    ("--max-error-rate", "2", "argument --max-error-rate: must be from 0 to 1, got 2.0"),
])
def test_bad_numbers_are_refused(tmp_path, calls, capsys, flag, value, expected):
    assert expected in one_line_exit(capsys, lambda: eval_run.main(run_argv(tmp_path, flag, value)))


def test_out_naming_a_file_fails_before_judging(tmp_path, calls, capsys):
    (tmp_path / "taken").write_text("a file")
    message = one_line_exit(capsys, lambda: eval_run.main(run_argv(tmp_path, "--out", str(tmp_path / "taken"))))
    assert message == f"error: --out {tmp_path / 'taken'}: {tmp_path / 'taken'} is a file; --out names a folder " \
                      f"for the outputs"
    message = one_line_exit(capsys, lambda: eval_run.main(run_argv(tmp_path, "--out", str(tmp_path / "taken/sub"))))
    assert "is a file" in message
    assert calls() == 0


@pytest.mark.parametrize("kind", ["text", "folder"])
def test_store_that_is_not_a_run_store(tmp_path, calls, capsys, kind):
    store = tmp_path / "store.sqlite"
    store.mkdir() if kind == "folder" else store.write_text("not sqlite\n" * 20)
    message = one_line_exit(capsys, lambda: eval_run.main(run_argv(tmp_path, "--store", str(store))))
    expected = "is a folder" if kind == "folder" else "not a run store (file is not a database)"
    assert message.startswith(f"error: --store {store}: ") and expected in message
    assert calls() == 0


def test_skipped_rows_are_counted_everywhere(tmp_path, calls, capsys):
    good = [{"id": f"r{i}", "query": f"q{i}", "item_title": f"t{i}", "item_text": "x", "label": i % 2}
            for i in range(4)]
    lines = [json.dumps(r) for r in good] + ['{"id": "bad1", "query": ["a", "list"], "item_title": "t", '
                                             '"item_text": "x", "label": 1}', "{not json"]
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    metrics = eval_run.main(["--dataset", f"jsonl:{path}", "--scheme", "msrd", "--method", "zero-shot",
                             "--knowledge", "none", "--lm", "fake", "--on-bad-row", "skip", "--out", str(out)])
    err = capsys.readouterr().err
    assert (f'skipped 2 bad row(s) of jsonl:{path} (--on-bad-row skip); the first: {path}, line 5: field "query": '
            f"expected text or a number, got an array") in err
    assert metrics["skipped_rows"] == 2 and metrics["pairs"] == 4
    assert json.loads((out / "metrics.json").read_text())["skipped_rows"] == 2
    assert json.loads((out / "config.json").read_text())["skipped_rows"] == 2


def test_a_folder_given_for_a_file(tmp_path, calls, capsys):
    message = one_line_exit(capsys, lambda: eval_run.main(
        ["--dataset", f"jsonl:{tmp_path}", "--scheme", "msrd", "--method", "zero-shot", "--lm", "fake"]))
    assert message.startswith(f"error: {tmp_path}: is a folder, not a file; expected one JSON object a line")
    (tmp_path / "best.json").mkdir()
    message = one_line_exit(capsys, lambda: compile_cli.main(
        ["--dataset", "msrd", "--lm", "fake", "--config", str(tmp_path / "best.json")]))
    assert message == f"error: --config {tmp_path / 'best.json'}: is a folder; --config names a JSON file"


def test_ablate_exits_above_the_error_rate_after_writing_the_report(tmp_path, calls, capsys):
    from hiera_dspy.data import load_dataset

    calls.broken.append(load_dataset("msrd").split("dev", 3)[0].query)  # 1 pair in 3 fails
    out = tmp_path / "report"
    argv = ["--dataset", "msrd", "--split", "dev", "--methods", "zero-shot", "--limit", "3", "--knowledge", "none",
            "--lm", "fake", "--out", str(out), "--reference", "zero-shot"]
    with pytest.raises(SystemExit) as err:
        ablate.main(argv)
    assert err.value.code == EXIT_ERROR_RATE
    assert "above --max-error-rate 0.05 (zero-shot: 1 of 3 (33%))" in capsys.readouterr().err
    assert {"report.md", "summary.json", "predictions.jsonl"} <= {p.name for p in out.iterdir()}
    assert ablate.main(argv + ["--max-error-rate", "0.4"])[0]["errors"] == 1


def test_compile_exits_above_the_error_rate_after_writing_the_artifact(tmp_path, calls, capsys):
    calls.broken.append("")  # every label fails
    out = tmp_path / "zs.json"
    with pytest.raises(SystemExit) as err:
        compile_cli.main(["--dataset", "msrd", "--method", "zero-shot", "--budget", "smoke", "--knowledge", "none",
                          "--lm", "fake", "--out", str(out), "--skip-before"])
    assert err.value.code == EXIT_ERROR_RATE and out.exists()
    assert "above --max-error-rate 0.05 (dev after (run " in capsys.readouterr().err
