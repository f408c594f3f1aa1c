"""Bad input, as a new user gives it, ends in one `error: ...` line naming the file, line, field or flag and what to do,
never in a traceback (`hiera-dspy COMMAND ...` run in-process through the console script's `main`, which runs each
command's module as `python -m` does). Every probe here fails before any model loads or any pair is judged."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from hiera_dspy.cli import main as console

PAIRS = [{"id": f"q{q}p{i}", "query_id": f"q{q}", "query": f"query {q}", "item_title": f"item {q}-{i}",
          "item_text": f"query {q} text" if i % 2 == 0 else "other text", "label": "Good" if i % 2 == 0 else "Bad"}
         for q in range(6) for i in range(4)]
BENCH = "--topics topics.tsv --corpus corpus.jsonl --qrels qrels.txt --scheme trec --method embed-lr"
UNWRITABLE = "/proc/hiera-dspy-cannot-write-here"  # Linux: no folder can be made under /proc, not even by root

# (command line, a fragment of its one error line)
PROBES = [
    ('run --dataset jsonl:pairs.jsonl --labels "Bad,Bad" --method embed-lr', "'Bad' is given twice"),
    ('label --dataset jsonl:pairs.jsonl --labels "Bad,Good,Bad" --method embed-lr --out o', "--labels"),
    ('run --dataset jsonl:pairs.jsonl --labels Bad --method embed-lr', "at least two"),
    ("run --dataset jsonl:pairs.jsonl --method embed-lr", "needs a label scheme"),
    ("run --dataset jsonl:pairs.jsonl --scheme nosuch --method embed-lr", "unknown label scheme 'nosuch'"),
    ("run --dataset jsonl:missing.jsonl --labels Bad,Good --method embed-lr", "missing.jsonl: file not found"),
    ("run --dataset jsonl:empty.jsonl --labels Bad,Good --method embed-lr", "file is empty"),
    ("run --dataset jsonl:bad.jsonl --labels Bad,Good --method embed-lr", "line 1: not valid JSON"),
    ("run --dataset jsonl:utf16.jsonl --labels Bad,Good --method embed-lr", "re-encode the file as UTF-8"),
    ("run --dataset jsonl:pairs.jsonl --labels Bad,Good --method embed-lr --split nosuch", "no split 'nosuch'"),
    ("run --dataset nosuch --method embed-lr", "unknown dataset 'nosuch'"),
    ("run --dataset msrd --split dev --method nosuch --limit 1", "unknown method 'nosuch'"),
    ("run --dataset msrd --split dev --judge missing.json --limit 1", "missing.json: no such file"),
    ("run --dataset msrd --split dev --judge broken.json --limit 1", "not valid JSON"),
    ("run --dataset msrd --split dev --judge list.json --limit 1", "expected a JSON object"),
    ("run --dataset msrd --split dev --judge . --limit 1", "a folder, not an artifact file"),
    ("run --dataset msrd --split dev --method hiera --set nosuch=1 --limit 1", "has no config key 'nosuch'"),
    ("run --dataset msrd --split dev --method hiera --set delegation --limit 1", "expected KEY=VALUE"),
    ("run --dataset msrd --split dev --method hiera --set delegation=sometimes --limit 1", "triage | always | never"),
    ("run --dataset msrd --split dev --method dream --set rounds=0 --limit 1", "rounds=0 is not allowed"),
    ("run --dataset msrd --split dev --method embed-lr --set C=abc --limit 1", "C='abc' is not allowed"),
    ("run --dataset msrd --split dev --method ce-blend --set ce_pairs=4 --limit 1", "ce_pairs=4 is not allowed"),
    ("run --dataset msrd --split dev --method zero-shot --limit 0", "--limit: must be >= 1"),
    ("run --dataset msrd --split dev --method zero-shot --limit 1 --threads 0", "--threads: must be >= 1"),
    ("run --dataset msrd --split dev --method zero-shot --limit 1 --run-id ../x", "invalid run id"),
    ("run --dataset msrd --split dev --method zero-shot --limit 1 --store topics.tsv", "not a run store"),
    ("run --dataset msrd --split dev --method zero-shot --limit 1 --max-error-rate 2", "must be from 0 to 1"),
    ("run --dataset msrd --split dev --method zero-shot --limit 1 --engine batch", "--engine batch needs"),
    (f"run --dataset msrd --split dev --method embed-lr --limit 1 --out {UNWRITABLE}", "cannot write there"),
    (f"label --dataset jsonl:pairs.jsonl --labels Bad,Good --method embed-lr --out {UNWRITABLE}", "cannot write"),
    (f"compile --dataset msrd --method embed-lr --artifact {UNWRITABLE}/x.json", "--artifact"),
    (f"ablate --dataset msrd --split dev --methods zero-shot --limit 1 --out {UNWRITABLE}", "cannot write there"),
    (f"holes-demo --out {UNWRITABLE}", "cannot write there"),
    ("label --dataset jsonl:pairs.jsonl --labels Bad,Good --method embed-lr --out topics.tsv", "is a file"),
    (f"holes {BENCH} --runs a.run,a.run --out h", "a.run is given twice"),
    (f"holes {BENCH} --runs , --out h", "give the systems' TREC run files"),
    (f"holes {BENCH} --runs nan.run --out h", "nan.run, line 1: column 5 (score): 'nan' is not a finite number"),
    (f"holes {BENCH} --runs inf.run --out h", "'inf' is not a finite number"),
    (f"holes {BENCH} --runs missing.run --out h", "missing.run: file not found"),
    (f"holes {BENCH} --runs topics.tsv --out h", "expected 6 columns"),
    (f"holes {BENCH} --runs a.run --depth 0 --out h", "--depth must be at least 1"),
    (f"holes {BENCH} --runs a.run --ci 2 --out h", "--ci 2.0"),
    (f"holes {BENCH} --runs a.run --human-sample 150% --out h", "--human-sample"),
    (f"holes {BENCH} --runs a.run --human-sample 5 --out h", "only 2 queries"),
    (f"holes {BENCH} --runs a.run --sample stratified --strata 0 --out h", "--strata 0"),
    ("holes --topics topics.tsv --corpus corpus.jsonl --qrels bad_qrels.txt --runs a.run --scheme trec "
     "--method embed-lr --out h", "column 4 (grade): 'x' is not an integer"),
    ("holes --topics corpus.jsonl --corpus corpus.jsonl --qrels qrels.txt --runs a.run --scheme trec "
     "--method embed-lr --out h", 'missing field "qid"'),
    ("holes --dataset trec:nowhere --runs a.run --method embed-lr --out h", "folder not found"),
    ("plan --run nosuchrun", "no run 'nosuchrun' in "),
    ("plan --run nosuchrun", "store.sqlite"),
    ("review --run nosuchrun", "no run 'nosuchrun'"),
    ("escalations --run nosuchrun", "no run 'nosuchrun'"),
    ("errors --run nosuchrun", "no run store at"),
    ("trace --run nosuchrun --pair x", "no run store at"),
    ("methods --config nosuch", "unknown method 'nosuch'"),
    ("search --dataset msrd --trials 0", "--trials: must be >= 1"),
    ('ablate --dataset msrd --split dev --methods "," --limit 1', "no method to compare"),
    ("ablate --dataset msrd --split dev --methods nosuch --limit 1", "unknown method(s) nosuch"),
    ("compile --dataset msrd --method embed-lr --config list.json --artifact c.json", "expected a JSON object"),
    ("compile --dataset msrd --method embed-lr --config broken.json --artifact c.json", "not valid JSON"),
    ("compile --dataset msrd --method embed-lr --artifact .", "is a folder"),
    ("compile --dataset msrd --method embed-lr --train-limit 0", "--train-limit: must be >= 1"),
    ("compile --judge missing.json --train-from nosuchrun --artifact c.json", "missing.json: no such file"),
    ("compile --dataset jsonl:pairs.jsonl --labels Bad,Good --method embed-lr --split nosuch", "no 'nosuch' split"),
]


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A working folder with the bad inputs the probes name, the runs kept in it."""
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "bad.jsonl").write_text("not json\n")
    (tmp_path / "utf16.jsonl").write_bytes('{"id": 1}\n'.encode("utf-16"))
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "topics.tsv").write_text("q1\tred shoes\nq2\tblue hat\n")
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "title": t, "text": t}) + "\n"
                                                   for d, t in (("d1", "red shoes"), ("d2", "blue hat"), ("d3", "coat"))))
    (tmp_path / "qrels.txt").write_text("q1 0 d1 2\nq2 0 d2 1\n")
    (tmp_path / "bad_qrels.txt").write_text("q1 0 d1 x\n")
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 3.0 a\nq1 Q0 d3 2 2.0 a\nq2 Q0 d2 1 1.0 a\nq2 Q0 d3 2 0.5 a\n")
    (tmp_path / "nan.run").write_text("q1 Q0 d3 1 nan b\nq1 Q0 d1 2 2.0 b\nq2 Q0 d2 1 1.0 b\n")
    (tmp_path / "inf.run").write_text("q1 Q0 d3 1 2.0 b\nq1 Q0 d1 2 inf b\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HIERA_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("HIERA_NO_PROGRESS", "1")
    return tmp_path


def error_line(argv: list[str], capsys) -> str:
    """The command's last stderr line, after checking it stopped with a non-zero status and no traceback."""
    with pytest.raises(SystemExit) as stop:
        console.main(argv)
    err = capsys.readouterr().err
    assert stop.value.code not in (0, None), err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("line, fragment", PROBES, ids=[p[0][:70] for p in PROBES])
def test_a_bad_input_ends_in_one_error_line(line, fragment, folder, capsys):
    if UNWRITABLE in line and not Path("/proc").is_dir():
        pytest.skip("needs Linux's /proc")
    last = error_line(shlex.split(line), capsys)
    assert "error:" in last and fragment in last, last


def test_a_run_file_of_a_non_finite_score_is_refused_whatever_its_line_order(tmp_path):
    """A nan score used to rank by line order (one run, two nDCG@3); now any order is refused on the nan's line."""
    from hiera_dspy.data.trec import DataError, read_run

    lines = ["q1 Q0 d1 1 nan a", "q1 Q0 d2 2 1.0 a", "q1 Q0 d3 3 0.5 a"]
    for order in (lines, lines[::-1]):
        path = tmp_path / "r.run"
        path.write_text("\n".join(order) + "\n")
        with pytest.raises(DataError, match=rf"line {order.index(lines[0]) + 1}: column 5 \(score\): 'nan'"):
            read_run(path)
    skipped: list = []
    assert [rl.docid for rl in read_run(path, on_bad_row="skip", skipped=skipped)] == ["d3", "d2"]
    assert skipped[0]["line"] == 3
