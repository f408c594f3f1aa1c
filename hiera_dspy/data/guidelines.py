"""A team's own judging guidelines (`--guidelines FILE`), read into a `LabelScheme` with definitions and examples.

The file is TOML (read with the standard library's `tomllib`; `tomli` on Python 3.10) or, for a name ending in .yaml/.yml, YAML (PyYAML).
Keys (docs/labelling.md#your-own-guidelines shows a whole file):

    name          optional: the scheme's name (default: the file's stem)
    instructions  optional: free text for the judge, shown after the grade definitions
    binary_cut    required: the lowest grade that counts as relevant (binary kappa, P@k, DREAM's question)
    [[grades]]    required, two or more, least relevant first: `name` and `definition`
    [[examples]]  optional worked examples: `query`, `item`, `grade` (one of the grades), optional `why`

Every LLM method reads the definitions, the instructions and the examples verbatim (`LabelScheme.describe`); learned
judges take the grades (a dataset's labels are read by grade name or by 0-based grade index). The scheme's
`guidelines` is the SHA-256 prefix of the file's bytes: it is part of every run id and recorded in artifacts, so one
changed word makes a new run.

A bad file gets a `GuidelinesError` naming the file, the key and its line: a grade defined twice, a cut that is not
a grade, an example whose grade is not a grade, a missing or unknown key, text where text is expected.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from hiera_dspy.data import DataError, expect_file
from hiera_dspy.labels import LabelScheme

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same reader as a package (pyproject: tomli on 3.10 only)
    import tomli as tomllib  # type: ignore[no-redef]

TOP_KEYS = {"name": False, "instructions": False, "binary_cut": True, "grades": True, "examples": False}
GRADE_KEYS = {"name": True, "definition": True}
EXAMPLE_KEYS = {"query": True, "item": True, "grade": True, "why": False}


class GuidelinesError(DataError):
    """A guideline file that cannot be used; the message names the file, the key and the line."""


def read_guidelines(path: str | Path) -> LabelScheme:
    """The `LabelScheme` a guideline file describes; `GuidelinesError` naming key and line when it is not valid."""
    path = expect_file(Path(path), "a guideline file (TOML, or YAML for .yaml/.yml)")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GuidelinesError(f"{path}: not UTF-8 text ({exc})") from None
    yaml_file = path.suffix.lower() in (".yaml", ".yml")
    data, lines = _yaml(path, text) if yaml_file else _toml(path, text)
    return _scheme(path, data, lines, hashlib.sha256(raw).hexdigest()[:12])


def _toml(path: Path, text: str) -> tuple[Any, dict]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # its message says "(at line N, column M)"
        raise GuidelinesError(f"{path}: not valid TOML: {exc}") from None
    return data, _toml_lines(text)


_HEADER = re.compile(r"^\s*\[\[\s*(\w+)\s*\]\]")
_KEY = re.compile(r"^\s*(\w+)\s*=")


def _toml_lines(text: str) -> dict[tuple, int]:
    """(key,) or (table, index, key) -> the line it is written on; (table, index) -> its [[table]] header's line.
    TOML readers keep no positions: the lines are found again in the text, which a key's own line gives."""
    lines: dict[tuple, int] = {}
    where: tuple = ()
    counts: dict[str, int] = {}
    in_string = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.count('"""') % 2 or line.count("'''") % 2:
            was_in = in_string
            in_string = not in_string
            if was_in:
                continue
        elif in_string:
            continue
        header = _HEADER.match(line)
        if header:
            table = header[1]
            where = (table, counts.get(table, 0))
            counts[table] = where[1] + 1
            lines.setdefault(where, number)
            continue
        key = _KEY.match(line)
        if key:
            lines.setdefault((*where, key[1]), number)
    return lines


def _yaml(path: Path, text: str) -> tuple[Any, dict]:
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise GuidelinesError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    lines: dict[tuple, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            lines[(key.value,)] = key.start_mark.line + 1
            if isinstance(value, yaml.SequenceNode):
                for i, item in enumerate(value.value):
                    lines[(key.value, i)] = item.start_mark.line + 1
                    if isinstance(item, yaml.MappingNode):
                        for k, _ in item.value:
                            lines[(key.value, i, k.value)] = k.start_mark.line + 1
    return data, lines


def _scheme(path: Path, data: Any, lines: dict, digest: str) -> LabelScheme:
    def fail(where: tuple, problem: str) -> GuidelinesError:
        line = next((lines[where[:n]] for n in range(len(where), 0, -1) if where[:n] in lines), None)
        name = ".".join(f"[{part}]" if isinstance(part, int) else str(part) for part in where).replace(".[", "[")
        return GuidelinesError(f"{path}, line {line or 1}: {name or 'the file'}: {problem}")

    if not isinstance(data, dict):
        raise fail((), "expected keys (binary_cut, grades, ...), see docs/labelling.md#your-own-guidelines")
    _check_keys(data, TOP_KEYS, (), fail)
    grades = data["grades"]
    if not isinstance(grades, list) or len(grades) < 2:
        raise fail(("grades",), "needs two or more [[grades]] entries, least relevant first")
    names: list[str] = []
    definitions: dict[str, str] = {}
    for i, grade in enumerate(grades):
        if not isinstance(grade, dict):
            raise fail(("grades", i), "each grade is a table with a name and a definition")
        _check_keys(grade, GRADE_KEYS, ("grades", i), fail)
        name, definition = _text(grade, "name", ("grades", i), fail), _text(grade, "definition", ("grades", i), fail)
        if name in definitions:
            first = lines.get(("grades", names.index(name), "name"), "?")
            raise fail(("grades", i, "name"), f"grade {name!r} is defined twice (first at line {first})")
        names.append(name)
        definitions[name] = definition
    cut = _text(data, "binary_cut", (), fail)
    if cut not in definitions:
        raise fail(("binary_cut",), f"{cut!r} is not one of the grades {names}")
    if cut == names[0]:
        raise fail(("binary_cut",), f"{cut!r} is the lowest grade: nothing would be 'not relevant'; name the lowest "
                                    "grade that counts as relevant")
    examples = []
    for i, example in enumerate(data.get("examples") or []):
        if not isinstance(example, dict):
            raise fail(("examples", i), "each example is a table with query, item and grade")
        _check_keys(example, EXAMPLE_KEYS, ("examples", i), fail)
        values = {key: _text(example, key, ("examples", i), fail) for key in EXAMPLE_KEYS if key in example}
        if values["grade"] not in definitions:
            raise fail(("examples", i, "grade"), f"{values['grade']!r} is not one of the grades {names}")
        examples.append(values)
    name = _text(data, "name", (), fail) if "name" in data else path.stem
    instructions = _text(data, "instructions", (), fail) if "instructions" in data else ""
    return LabelScheme(name=name, labels=tuple(names), definitions=definitions,
                       raw_map={str(i): label for i, label in enumerate(names)},
                       source=f"guidelines {path.name} (sha256 {digest})", relevant_from=cut,
                       instructions=instructions, examples=tuple(examples), guidelines=digest)


def _check_keys(table: dict, keys: dict[str, bool], where: tuple, fail) -> None:
    for key in table:
        if key not in keys:
            raise fail((*where, key), f"unknown key {key!r}; expected {', '.join(keys)}")
    for key, required in keys.items():
        if required and key not in table:
            raise fail(where, f"missing key {key!r}")


def _text(table: dict, key: str, where: tuple, fail) -> str:
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise fail((*where, key), f"expected non-empty text, got {value!r}")
    return value.strip()
