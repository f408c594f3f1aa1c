"""A team's guideline file (hiera_dspy/data/guidelines.py): TOML and YAML read into the same LabelScheme (grades in
order, definitions, cut, examples, instructions, the file's digest); a bad file's error names the key and its line."""

from pathlib import Path

import pytest

from hiera_dspy.data import DataError
from hiera_dspy.data.guidelines import GuidelinesError, read_guidelines
from hiera_dspy.labels import LabelScheme

FIXTURE = Path(__file__).resolve().parents[1] / "docs_fixtures" / "guidelines.toml"

GOOD = '''name = "shop"
instructions = "Judge for a shopper."
binary_cut = "Partial"

[[grades]]
name = "Irrelevant"
definition = "Not what they want."

[[grades]]
name = "Partial"
definition = "Close, one detail off."

[[grades]]
name = "Exact"
definition = "Exactly what they asked for."

[[examples]]
query = "red shoe"
item = "A red running shoe"
grade = "Exact"
'''

YAML = '''name: shop
instructions: Judge for a shopper.
binary_cut: Partial
grades:
  - name: Irrelevant
    definition: Not what they want.
  - name: Partial
    definition: Close, one detail off.
  - name: Exact
    definition: Exactly what they asked for.
examples:
  - query: red shoe
    item: A red running shoe
    grade: Exact
'''


def write(tmp_path, text, name="guidelines.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_docs_file_reads_into_a_four_grade_scheme():
    scheme = read_guidelines(FIXTURE)
    assert scheme.labels == ("Off-topic", "Related", "Good match", "Exact match")
    assert scheme.threshold == "Good match" and scheme.binary_from == 2
    assert scheme.definitions["Related"].startswith("The movie touches the query")
    assert [e["grade"] for e in scheme.examples] == ["Exact match", "Related"]
    assert scheme.from_raw("3") == "Exact match" and scheme.from_raw("related") == "Related"
    assert scheme.guidelines is not None and len(scheme.guidelines) == 12


def test_toml_and_yaml_give_the_same_scheme_and_the_prompt_text_holds_it_verbatim(tmp_path):
    toml = read_guidelines(write(tmp_path, GOOD))
    yaml = read_guidelines(write(tmp_path, YAML, "guidelines.yaml"))
    for key in ("labels", "definitions", "relevant_from", "instructions", "examples"):
        assert getattr(toml, key) == getattr(yaml, key), key
    text = toml.describe()
    assert "- Partial: Close, one detail off." in text and "Instructions: Judge for a shopper." in text
    assert "query: red shoe | item: A red running shoe -> Exact" in text


def test_the_digest_is_the_files_and_the_scheme_round_trips(tmp_path):
    first = read_guidelines(write(tmp_path, GOOD))
    changed = read_guidelines(write(tmp_path, GOOD.replace("one detail off", "one detail wrong")))
    assert first.guidelines != changed.guidelines
    again = LabelScheme.from_dict(first.to_dict())
    assert again == first and again.examples == first.examples and again.instructions == first.instructions
    assert again.describe() == first.describe()


@pytest.mark.parametrize("edit,where,message", [
    (lambda t: t.replace('name = "Partial"', 'name = "Irrelevant"'), "line 10: grades[1].name",
     "defined twice (first at line 6)"),
    (lambda t: t.replace('binary_cut = "Partial"', 'binary_cut = "Great"'), "line 3: binary_cut",
     "not one of the grades"),
    (lambda t: t.replace('binary_cut = "Partial"', 'binary_cut = "Irrelevant"'), "line 3: binary_cut",
     "the lowest grade"),
    (lambda t: t.replace('grade = "Exact"', 'grade = "Perfect"'), "line 20: examples[0].grade",
     "'Perfect' is not one of the grades"),
    (lambda t: t.replace('definition = "Close, one detail off."\n', ''), "line 9: grades[1]",
     "missing key 'definition'"),
    (lambda t: t.replace('binary_cut = "Partial"\n', ''), "line 1: the file", "missing key 'binary_cut'"),
    (lambda t: t.replace('instructions =', 'instruction ='), "line 2: instruction", "unknown key 'instruction'"),
    (lambda t: t.replace('definition = "Not what they want."', 'definition = 3'), "line 7: grades[0].definition",
     "expected non-empty text"),
    (lambda t: t + "oops = ]\n", "not valid TOML", "line 21"),
])
def test_a_bad_file_names_the_key_and_its_line(tmp_path, edit, where, message):
    path = write(tmp_path, edit(GOOD))
    with pytest.raises(GuidelinesError) as caught:
        read_guidelines(path)
    text = str(caught.value)
    assert str(path) in text and where in text and message in text, text


def test_a_bad_yaml_file_names_the_key_and_its_line(tmp_path):
    path = write(tmp_path, YAML.replace("grade: Exact", "grade: Perfect"), "g.yml")
    with pytest.raises(GuidelinesError, match=r"line 14: examples\[0\]\.grade: 'Perfect' is not one of the grades"):
        read_guidelines(path)
    with pytest.raises(GuidelinesError, match="not valid YAML at line"):
        read_guidelines(write(tmp_path, "grades: [a, b\n", "bad.yaml"))
    with pytest.raises(DataError, match="file not found"):
        read_guidelines(tmp_path / "missing.toml")
