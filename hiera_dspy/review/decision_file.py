"""A file of human decisions (`eval.escalations --decisions FILE`), read and checked whole before anything is stored.

One JSON object a line: {"id": PAIR_ID, "label": LABEL [, "who": NAME]}; blank lines are skipped. Every line is
checked (JSON, fields, a label of the run's scheme, a pair of the run, the same pair twice with two labels) and every
problem is reported at once, naming file and line; with any problem nothing is stored. A file that passes is applied
in one transaction (`Review.decide_many`), so a decisions file is applied all or nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from hiera_dspy.errors import HieraError

SHOWN = 10  # problems listed in the message (the count says how many more)
FORMAT = '{"id": PAIR_ID, "label": LABEL [, "who": NAME]}'


@dataclass(frozen=True)
class Decision:
    """One checked line of a decisions file."""

    pair_id: str
    label: str
    who: str
    line: int


def read_decisions(path: str | Path, labels: Iterable[str], in_run: Callable[[list[str]], set[str]], run_id: str,
                   who: str) -> list[Decision]:
    """Every decision of the file, checked whole; HieraError naming each bad line (nothing is stored) otherwise.
    `in_run(ids)` says which of the ids are judgments of run `run_id`; `who` is used where a line names nobody. A
    pair given twice with the same label counts once."""
    path, labels = Path(path), list(labels)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HieraError(f"--decisions {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HieraError(f"--decisions {path}: cannot be read ({exc})") from None
    problems: list[str] = []
    decisions: dict[str, Decision] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            decision = _parse(line, lineno, labels, who)
        except ValueError as exc:
            problems.append(f"line {lineno}: {exc}")
            continue
        first = decisions.setdefault(decision.pair_id, decision)
        if first.label != decision.label:
            problems.append(f"line {lineno}: pair {decision.pair_id!r} is decided {first.label!r} on line "
                            f"{first.line}, {decision.label!r} here; keep one")
    known = in_run(list(decisions))
    problems += [f"line {d.line}: pair {d.pair_id!r} is not in run {run_id}" for d in decisions.values()
                 if d.pair_id not in known]
    if problems:
        problems.sort(key=lambda p: int(p.split(":")[0].split()[1]))
        more = f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        raise HieraError(f"{path}: {len(problems)} bad line(s), nothing was recorded: "
                         f"{'; '.join(problems[:SHOWN])}{more}")
    if not decisions:
        raise HieraError(f"{path}: no decisions found; expected one {FORMAT} a line")
    return list(decisions.values())


def _parse(line: str, lineno: int, labels: list[str], who: str) -> Decision:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise HieraError(f"not valid JSON ({exc.msg}); expected {FORMAT}") from None
    if not isinstance(row, dict):
        raise HieraError(f"expected a JSON object {FORMAT}, got {type(row).__name__}")  # noqa: TRY004 - a bad line
    for name in ("id", "label"):
        if row.get(name) in (None, ""):
            raise HieraError(f'missing field "{name}"; expected {FORMAT}')
    label = str(row["label"])
    if label not in labels:
        raise HieraError(f'field "label": {label!r} is not a label of the run\'s scheme {labels}')
    return Decision(str(row["id"]), label, str(row.get("who") or who), lineno)
