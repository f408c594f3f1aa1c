"""A compiled judge is one self-describing JSON file: format version, method, graph config, label scheme,
role -> model specs (never keys), knowledge source, DSPy state (instructions + demos), dev metrics, package versions.

`load_judge(path)` rebuilds the graph from the config and loads the state: no pickle, loads in any repo.
"""

from __future__ import annotations

import json
import re
import sys
import time
from importlib import metadata
from pathlib import Path

import dspy

from hiera_dspy.compat import align_state
from hiera_dspy.labels import LabelScheme
from hiera_dspy.lms import LMSpec, RoleLMs, build_lms, with_blend

FORMAT = "hiera-dspy/judge"
FORMAT_VERSION = 1
SECRET_NAME = re.compile(r"(api[_-]?key|secret|password|token|authorization)$", re.I)


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for dist in ("hiera-dspy", "dspy", "litellm", "optuna"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def refuse_secrets(obj, path: str = "") -> None:
    """Raise if any field named like a secret holds a value (names such as api_key_env are allowed)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if SECRET_NAME.search(str(key)) and value not in (None, "", 0, [], {}) and not isinstance(value, (int, float)):
                raise ValueError(f"refusing to save a secret-like field {path}{key!r} in an artifact")
            refuse_secrets(value, f"{path}{key}.")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            refuse_secrets(value, f"{path}{i}.")


def save_judge(program: dspy.Module, path: str | Path, *, scheme: LabelScheme, lms: RoleLMs, knowledge: str,
               dataset: str, metrics: dict | None = None) -> Path:
    program._compiled = False  # keep predictors visible to a parent module (BootstrapFewShot hides them)
    specs = getattr(lms, "specs", {})
    doc = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "method": program.method, "config": _jsonable(program.config), "scheme": scheme.to_dict(),
        "lms": {role: spec.to_dict() for role, spec in specs.items()},
        "blend_lms": {name: spec.to_dict() for name, spec in (getattr(lms, "extra_specs", None) or {}).items()},
        "knowledge": knowledge, "dataset": dataset,
        "state": program.dump_state(), "extra": program.dump_extra() if hasattr(program, "dump_extra") else None,
        "metrics": metrics or {}, "versions": _versions(),
    }
    refuse_secrets(doc)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str))
    tmp.replace(path)  # atomic: a crash never leaves half an artifact
    return path


def _jsonable(config: dict) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()}


def read_artifact(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such artifact; make one with python -m optimize.compile --dataset ...")
    doc = json.loads(path.read_text())
    if doc.get("format") != FORMAT or doc.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(f"{path}: not a {FORMAT} v{FORMAT_VERSION} artifact (format={doc.get('format')!r}, "
                         f"version={doc.get('format_version')!r}); upgrade hiera-dspy or re-compile")
    return doc


def load_judge(path: str | Path, *, lms: RoleLMs | None = None, knowledge=None, train=None,
               doc: dict | None = None) -> dspy.Module:
    """Rebuild a compiled judge: a plain `dspy.Module` whose forward(query, item_title, item_text) gives `.label`.

    Example:
        >>> judge = load_judge("artifacts/msrd/hiera.json")
        >>> judge(query="tom cruise spy movie", item_title="Mission: Impossible", item_text="...").label
    """
    from hiera_dspy.methods import BuildContext, build

    doc = doc or read_artifact(path)  # `doc`: the artifact already read by the caller
    scheme = LabelScheme.from_dict(doc["scheme"])
    if lms is None:
        lms = build_lms({role: LMSpec(**spec) for role, spec in doc["lms"].items()})
        with_blend(lms, {name: LMSpec(**spec) for name, spec in (doc.get("blend_lms") or {}).items()})
    if knowledge is None:
        knowledge = _recorded_knowledge(doc)
    ctx = BuildContext(scheme=scheme, lms=lms, knowledge=knowledge, train=list(train or []))
    program = build(doc["method"], ctx, **doc["config"])
    program.load_state(align_state(program, doc["state"], str(path)))
    if doc.get("extra") is not None and hasattr(program, "load_extra"):
        program.load_extra(doc["extra"])
    program._compiled = False
    program.scheme = scheme
    return program


def _recorded_knowledge(doc: dict):
    from hiera_dspy.knowledge import NoKnowledge, make_knowledge

    kind = (doc.get("knowledge") or "none").split(":", 1)[0]
    if kind == "none":
        return NoKnowledge()
    try:
        dataset = None
        if kind == "catalog":
            from hiera_dspy.data import load_dataset

            dataset = load_dataset(doc["dataset"])
        return make_knowledge(kind, dataset)
    except (SystemExit, Exception) as exc:  # noqa: BLE001 - a judge without its catalog still judges
        print(f"hiera-dspy: knowledge source {doc.get('knowledge')!r} unavailable ({exc}); judging without it; "
              f"pass knowledge= to load_judge to supply one", file=sys.stderr)
        return NoKnowledge()
