"""What a judge artifact file is: format name and version, a size cap, the type of every field; `read_artifact` reads
one and checks it, raising `ArtifactError` (a `ValueError`) that names the path and the problem on one line."""

from __future__ import annotations

import json
from pathlib import Path

from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme

FORMAT = "hiera-dspy/judge"
FORMAT_VERSION = 1
MAX_BYTES = 50 * 2**20  # a judge is instructions and a few demos: far below this


class ArtifactError(HieraError):
    """A file that is not a usable judge artifact; the message names the path and the problem, on one line."""

    def __init__(self, path, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path, self.problem = Path(path), problem

    def __reduce__(self):  # picklable across processes and threads despite the two-argument constructor
        return type(self), (self.path, self.problem)


# top-level field -> (JSON type(s), required); optional fields may be null
FIELDS = {"format": (str, True), "format_version": (int, True), "method": (str, True), "config": (dict, True),
          "scheme": (dict, True), "lms": (dict, True), "ensemble": (dict, False), "knowledge": (str, False),
          "dataset": (str, False), "state": (dict, True), "metrics": (dict, False), "known_demos": (dict, False)}
LEGACY_KEYS = {"blend_lms": "ensemble"}  # top-level keys earlier versions wrote -> the key they are read as
LM_FIELDS = {"model": (str, True), "api_base": (str, False), "api_key_env": (str, False),
             "max_tokens": (int, False), "temperature": ((float, int), False), "extra": (dict, False)}
PREDICTOR_FIELDS = {"signature": (dict, True), "demos": (list, False)}
KINDS = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer", float: "a number",
         type(None): "null"}


def _kind(value) -> str:
    return KINDS.get(type(value), type(value).__name__)


def _check(path, obj: dict, fields: dict, where: str = "") -> None:
    for name, (types, required) in fields.items():
        if name not in obj or obj[name] is None:
            if required:
                raise ArtifactError(path, f"missing {where + name!r}; re-compile with python -m optimize.compile")
            continue
        value, types = obj[name], types if isinstance(types, tuple) else (types,)
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            raise ArtifactError(path, f"{where + name!r}: expected {KINDS[types[0]]}, got {_kind(value)}")


def read_artifact(path: str | Path) -> dict:
    """The artifact's JSON, checked: format and version, every field's type, each LM record, the label scheme."""
    path = Path(path)
    if path.is_dir():
        raise ArtifactError(path, "a folder, not an artifact file")
    if not path.is_file():
        raise ArtifactError(path, "no such file; make one with python -m optimize.compile --dataset ...")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ArtifactError(path, f"{size / 2**20:.1f} MB, larger than the {MAX_BYTES // 2**20} MB an artifact may be")
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise ArtifactError(path, "not UTF-8 text (a judge artifact is JSON)") from None
    except json.JSONDecodeError as exc:
        raise ArtifactError(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(doc, dict):
        raise ArtifactError(path, f"expected a JSON object at the top level, got {_kind(doc)}")
    version = doc.get("format_version", 0)
    if doc.get("format") != FORMAT or (isinstance(version, int) and version > FORMAT_VERSION):
        raise ArtifactError(path, f"not a {FORMAT} v{FORMAT_VERSION} artifact (format={doc.get('format')!r}, "
                                  f"version={version!r}); upgrade hiera-dspy or re-compile")
    for old, new in LEGACY_KEYS.items():  # read as their new names: one name in the code that reads them
        if old in doc and new not in doc:
            doc[new] = doc.pop(old)
    _check(path, doc, FIELDS)
    for block in ("lms", "ensemble"):
        for name, spec in (doc.get(block) or {}).items():
            if not isinstance(spec, dict):
                raise ArtifactError(path, f"'{block}.{name}': expected an object, got {_kind(spec)}")
            _check(path, spec, LM_FIELDS, f"{block}.{name}.")
    for name, state in doc["state"].items():
        if not isinstance(state, dict):
            raise ArtifactError(path, f"'state.{name}': expected an object, got {_kind(state)}")
        _check(path, state, PREDICTOR_FIELDS, f"state.{name}.")
        for i, demo in enumerate(state.get("demos") or []):
            if not isinstance(demo, dict):
                raise ArtifactError(path, f"'state.{name}.demos.{i}': expected an object, got {_kind(demo)}")
    try:
        LabelScheme.from_dict(doc["scheme"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ArtifactError(path, f"'scheme': not a label scheme ({type(exc).__name__}: {exc})") from None
    return doc
