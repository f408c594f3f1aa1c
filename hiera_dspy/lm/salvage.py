"""Parse salvage: what can be read from an answer that did not parse (cut off at the token cap, a stray format), and
the rule that keeps a failure from becoming a label: a label only from an unambiguous label token in its position.
"""

from __future__ import annotations

import re

import dspy
from dspy.adapters.utils import parse_value
from dspy.utils.exceptions import AdapterParseError

from hiera_dspy.labels import LabelScheme


def salvage(exc: AdapterParseError, scheme: LabelScheme | None, step: str = "") -> tuple[dspy.Prediction, list[str]]:
    """A usable prediction from an answer that did not parse (e.g. cut off at the token cap), and the output fields
    that had to be defaulted (consult, unclear, no look-ups, no text: see `_default`).

    The label comes only from an unambiguous label token in the label position (`recover_label`); without one, or
    when no output at all could be read, the step fails: a failure is never turned into a label or into empty
    evidence."""
    text = str(exc.lm_response or "")
    found = _partial_fields(text)
    values, defaulted = {}, []
    for name, field in exc.signature.output_fields.items():
        if name == "label":
            values[name] = recover_label(text, scheme) if scheme else None
            if values[name] is None:
                raise step_failed(exc, step, "no unambiguous label in the label position") from exc
            continue
        value = _read(found.get(name), field.annotation)
        if value is _UNREAD:
            value = _default(field.annotation)
            defaulted.append(name)
        values[name] = value
    if "label" not in values and len(defaulted) == len(values):
        raise step_failed(exc, step, "nothing in the answer could be read") from exc
    return dspy.Prediction(**values, parse_recovered=True), defaulted


def step_failed(exc: AdapterParseError, step: str, why: str) -> AdapterParseError:
    """The parse error, re-raised with the step that failed and why nothing could be salvaged."""
    return AdapterParseError(exc.adapter_name, exc.signature, exc.lm_response,
                             message=f"step {step or '?'} failed: {why}")


_UNREAD = object()


def _read(raw, annotation):
    """A salvaged field's value parsed to its type, or _UNREAD (absent, empty, or not of the field's type)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return _UNREAD
    options = getattr(annotation, "__args__", None) if str(annotation).startswith("typing.Literal") else None
    if options:
        by_case = {str(o).lower(): o for o in options}
        return by_case.get(str(raw).strip().strip("*'\"`").lower(), _UNREAD)
    if annotation is str:
        return str(raw).strip()
    try:
        return parse_value(raw, annotation)
    except Exception:  # noqa: BLE001 - any failure means the field was not readable
        return _UNREAD


def _default(annotation):
    """The cautious value of a field that could not be read: consult (True), unclear (a Literal's last option), no
    look-ups ([]), no text ("", so the caller's own fallback applies, e.g. the Judge's gaps for an empty question).
    The step is then `degraded`, and so is the judgment: counted, never a plain success."""
    if annotation is bool:
        return True
    if getattr(annotation, "__origin__", None) is list:
        return []
    if str(annotation).startswith("typing.Literal"):
        return annotation.__args__[-1]
    return "" if annotation is str else None


def _partial_fields(text: str) -> dict:
    """Fields of a possibly truncated JSON object, or of ChatAdapter's `[[ ## name ## ]]` sections."""
    if text.lstrip().startswith("{"):
        import json_repair

        try:
            parsed = json_repair.loads(text)
            if isinstance(parsed, dict):
                return parsed
        except Exception:  # noqa: BLE001 - salvage is best effort
            pass
    sections = re.split(r"\[\[ ## (\w+) ## \]\]", text)
    return {sections[i]: sections[i + 1].strip() for i in range(1, len(sections) - 1, 2)}


_LABEL_MARKER = re.compile(r"\blabel\b\s*(?:\bis\b|[:=])\s*", re.I)
_AFTER_LABEL = tuple(".,;:!)]*_\"'`-\u2013\u2014(")  # what may follow a label token: punctuation, never another word


def recover_label(text: str | None, scheme: LabelScheme) -> str | None:
    """The label of a malformed answer, only from an unambiguous label token in the label position.

    The label position is the `label` field of a JSON object or of `[[ ## label ## ]]` sections, else the whole answer;
    within it, the text after its last "label:" / "label is" / "label =", else its first line. It must start with one
    label (any case; markdown emphasis and quotes ignored) followed by nothing or by punctuation: "Highly Relevant!",
    "**Substitute**, as it..." and "the label is Irrelevant" are recovered; "not relevant", "I'm sorry, but this item
    is not relevant", "not an exact match" and "partial match" are not (None: the step fails, the row is an error).
    """
    if not text:
        return None
    text = str(text)
    fields = _partial_fields(text)
    if fields and "label" not in fields:
        return None  # a structured answer without its label: the label position is empty
    position = str(fields["label"]) if fields else text
    markers = list(_LABEL_MARKER.finditer(position))
    return _leading_label(position[markers[-1].end():] if markers else position, scheme)


def _leading_label(value: str, scheme: LabelScheme) -> str | None:
    value = value.strip().lstrip("*_\"'`").lstrip()
    for label in sorted(scheme.labels, key=len, reverse=True):  # longest first: "Partially relevant" before others
        if value[:len(label)].lower() != label.lower():
            continue
        rest = value[len(label):].split("\n", 1)[0].strip()
        return label if not rest or rest.startswith(_AFTER_LABEL) else None
    return None
