"""Loading a compiled state into a program whose signatures have moved on (fields added, renamed predictors).

DSPy's `Signature.load_state` pairs saved fields with current ones by position, so a field added to a signature would
receive its neighbour's prefix and description. `align_state` pairs them by prefix (DSPy derives it from the field
name), takes every field description from the program (the model profile decides them; optimizers change
instructions, demos and prefixes), and lets predictors the artifact lacks start uncompiled, naming them on stderr.
"""

from __future__ import annotations

import sys

import dspy

# predictor names that moved: judge-only's decision used to be a ChainOfThought (its Predict under `.predict`)
RENAMED = {"judge.decide": "judge.decide.predict"}


def align_state(program: dspy.Module, state: dict, source: str = "artifact") -> dict:
    """`state` (a saved `dump_state()`) fitted to `program`'s predictors and fields."""
    current = program.dump_state()
    aligned, fresh = {}, []
    for name, now in current.items():
        saved = state.get(name) or state.get(RENAMED.get(name, "")) or state.get(
            next((old for old, new in RENAMED.items() if new == name), ""))
        if saved is None:
            aligned[name], _ = now, fresh.append(name)
            continue
        aligned[name] = {**saved, "signature": _fields(saved["signature"], now["signature"])}
    if fresh:
        print(f"hiera-dspy: {source} predates {', '.join(fresh)}: they start uncompiled (re-compile to tune them)",
              file=sys.stderr)
    return aligned


def _fields(saved: dict, now: dict) -> dict:
    by_prefix = {f["prefix"]: f for f in saved.get("fields", [])}
    same_layout = len(saved.get("fields", [])) == len(now["fields"]) and all(
        f["prefix"] in by_prefix for f in now["fields"])
    fields = []
    for i, field in enumerate(now["fields"]):
        if same_layout or field["prefix"] in by_prefix:
            prefix = saved["fields"][i]["prefix"] if same_layout else field["prefix"]
            fields.append({"prefix": prefix, "description": field["description"]})
        else:
            fields.append(field)
    return {"instructions": saved.get("instructions", now["instructions"]), "fields": fields}
