"""A compiled judge is one self-describing JSON file: format version, method, graph config, label scheme,
role -> model names (never keys nor key variables), knowledge source, DSPy state (instructions + demos), dev metrics,
package versions.

`load_judge(path)` rebuilds the graph from the config and loads the state: no pickle, loads in any repo.

An artifact is data: it never decides where a request or a key goes. Its `lms` block records model names (endpoints
only for information); on load, endpoints and key variables come from the caller (`api_base=`, `api_key_env=`, `lms=`,
the CLIs' flags) and predictor-level LMs in the saved state are ignored. A file that is not a well-formed artifact
(bad JSON, a list, missing or mistyped fields, over MAX_BYTES, a graph that cannot take its config or state) raises
`ArtifactError` naming the path and the problem.
"""

from __future__ import annotations

import json
import re
import sys
import time
from importlib import metadata
from pathlib import Path

import dspy

from hiera_dspy.artifacts.compat import RENAMED, align_state
from hiera_dspy.artifacts.format import FORMAT, FORMAT_VERSION, ArtifactError, read_artifact  # noqa: F401
from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.lm.roles import LMSpec, RoleLMs, build_lms

SECRET_NAME = re.compile(r"(api[_-]?key|secret|password|token|authorization)$", re.I)


def _versions() -> dict[str, str]:
    """Versions of Python and the packages an artifact depends on."""
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
                raise HieraError(f"refusing to save a secret-like field {path}{key!r} in an artifact")
            refuse_secrets(value, f"{path}{key}.")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            refuse_secrets(value, f"{path}{i}.")


def save_judge(program: dspy.Module, path: str | Path, *, scheme: LabelScheme, lms: RoleLMs, knowledge: str,
               dataset: str, metrics: dict | None = None, training: dict | None = None) -> Path:
    """Write `program` (a built method, compiled or not) as an artifact at `path`, atomically; the program is left as
    it is (a compiled program's own `_compiled` flag does not hide its predictors from its own state). `training`:
    what it learned from (`hiera_dspy.runs.training`). Raises ValueError for a secret-like field. Returns the path."""
    specs = lms.specs
    if hasattr(program, "save_files"):  # weights too large for JSON (ce-blend): beside it, digests in `extra`
        program.save_files(files_folder(path))
    roles = getattr(program, "lm_roles", tuple(specs))  # its method's roles (build); else every role it was given
    doc = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "method": program.method, "config": _jsonable(program.config), "scheme": scheme.to_dict(),
        "lms": {role: spec.record() for role, spec in specs.items() if role in roles},  # only the roles it calls
        "ensemble": {name: spec.record() for name, spec in lms.ensemble.specs.items()},  # --blend-lms
        "knowledge": knowledge, "dataset": dataset,
        "state": _without_lms(program.dump_state()),
        "extra": program.dump_extra() if hasattr(program, "dump_extra") else None,
        "metrics": metrics or {}, "versions": _versions(),
    }
    if training:
        doc["training"] = training
    demos = getattr(program, "query_demos", None)  # an LLM method: its queries' known judgments a pair, as demos
    if demos is not None:
        doc["known_demos"] = demos.describe()
    refuse_secrets(doc)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str))
    tmp.replace(path)  # atomic: a crash never leaves half an artifact
    return path


def files_folder(path: str | Path) -> Path:
    """Where an artifact's large files live: beside it, `NAME.weights/` for `NAME.json` (derived from the artifact's
    own path, never read from it)."""
    return Path(path).with_suffix(".weights")


def _without_lms(state: dict) -> dict:
    """Predictor states without their `lm`: LMs are the caller's at load time, an artifact records only models."""
    return {name: {**s, "lm": None} if isinstance(s, dict) else s for name, s in state.items()}


def _jsonable(config: dict) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()}


def recorded_specs(records: dict, *, api_base: str | None = None, api_key_env: str | None = None) -> dict[str, LMSpec]:
    """LM specs from an artifact's `lms` or `ensemble` block: its model names (and output caps) only; the endpoint
    and the key variable are the caller's, never the artifact's."""
    return {name: LMSpec.from_record(spec, api_base=api_base, api_key_env=api_key_env)
            for name, spec in (records or {}).items()}


def load_judge(path: str | Path, *, lms: RoleLMs | None = None, api_base: str | None = None,
               api_key_env: str | None = None, knowledge=None, train=None, doc: dict | None = None) -> dspy.Module:
    """Rebuild a compiled judge: a plain `dspy.Module` whose forward(query, item_title, item_text) gives `.label`.

    Without `lms`, the artifact's recorded models are built at the caller's `api_base` with the key read from the
    caller's `api_key_env` (none given: each provider's default endpoint and key variable). The artifact's own
    endpoints, key variables and predictor-level LMs are ignored. Raises `ArtifactError` for a malformed file.

    Example:
        >>> judge = load_judge("artifacts/msrd/hiera.json", api_base="http://127.0.0.1:8000/v1")
        >>> judge(query="tom cruise spy movie", item_title="Mission: Impossible", item_text="...").label
    """
    doc = doc or read_artifact(path)  # `doc`: the artifact already read (and checked) by the caller
    if lms is None:
        note_ignored_endpoints(path, doc, api_base)
        lms = build_lms(recorded_specs(doc["lms"], api_base=api_base, api_key_env=api_key_env),
                        recorded_specs(doc.get("ensemble"), api_base=api_base, api_key_env=api_key_env))
    if knowledge is None:
        knowledge = _recorded_knowledge(doc)
    return restore_judge(path, doc, LabelScheme.from_dict(doc["scheme"]), lms=lms, knowledge=knowledge, train=train)


def restore_judge(path: str | Path, doc: dict, scheme: LabelScheme, *, lms: RoleLMs, knowledge,
                  train=None) -> dspy.Module:
    """The judge of the artifact `doc` (read from `path` by `read_artifact`, its `scheme` parsed) with what the caller
    resolved: its LMs, its knowledge source and train pairs. Nothing here chooses a model or a source (`load_judge`
    does, for a caller that names none). Raises `ArtifactError` when the config or state does not fit the graph."""
    from hiera_dspy.methods import BuildContext, available, build

    method, config = doc["method"], doc["config"]
    info = available().get(method)
    if info is None:
        raise ArtifactError(path, f"unknown method {method!r}; registered: {', '.join(sorted(available()))}")
    unknown = sorted(set(config) - set(info.defaults) - set(info.options))
    if unknown:
        raise ArtifactError(path, f"'config' has keys method {method} does not take: {', '.join(unknown)}")
    try:
        program = build(method, BuildContext(scheme=scheme, lms=lms, knowledge=knowledge, train=list(train or [])),
                        **config)
    except (TypeError, ValueError) as exc:
        raise ArtifactError(path, f"'config' does not build method {method}: {exc}") from None
    _load_state(path, program, doc)  # a freshly built program: not `_compiled`, so a parent module can tune it
    if hasattr(program, "load_files"):
        try:
            program.load_files(files_folder(path))
        except (ValueError, OSError) as exc:
            raise ArtifactError(path, str(exc)) from None
    program.scheme = scheme
    return program


def _load_state(path, program: dspy.Module, doc: dict) -> None:
    """Load instructions and demos, fitted to the current graph (`artifacts.compat`); a predictor-level `lm` in the
    saved state is ignored (the caller's LMs judge)."""
    built = {name: p.lm for name, p in program.named_predictors()}
    saved = doc["state"]
    known = set(built) | {old for old, new in RENAMED.items() if new in built} | {
        new for old, new in RENAMED.items() if old in built}
    if saved and not set(saved) & known:
        raise ArtifactError(path, f"'state' holds no predictor of the {doc['method']} graph (the file has "
                                  f"{', '.join(sorted(saved))}; the graph has {', '.join(sorted(built))})")
    try:
        program.load_state(_without_lms(align_state(program, saved, str(path))))
        if doc.get("extra") is not None and hasattr(program, "load_extra"):
            program.load_extra(doc["extra"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ArtifactError(path, f"'state' does not load: {type(exc).__name__}: {exc}") from None
    for name, predictor in program.named_predictors():
        predictor.lm = built[name]


def note_ignored_endpoints(path, doc: dict, api_base: str | None) -> None:
    """Say on stderr that the endpoints an artifact records are not used when the caller names none."""
    recorded = sorted({spec.get("api_base") or (spec.get("extra") or {}).get("api_base") or ""
                       for block in ("lms", "ensemble") for spec in (doc.get(block) or {}).values()} - {""})
    if recorded and not api_base:
        print(f"hiera-dspy: {path} records endpoint(s) {', '.join(map(str, recorded))}; an artifact never chooses "
              "where requests and keys go: pass --api-base (api_base=) to use one", file=sys.stderr)


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
    except Exception as exc:  # noqa: BLE001 - a judge without its catalog still judges
        print(f"hiera-dspy: knowledge source {doc.get('knowledge')!r} unavailable ({exc}); judging without it; "
              f"pass knowledge= to load_judge to supply one", file=sys.stderr)
        return NoKnowledge()
