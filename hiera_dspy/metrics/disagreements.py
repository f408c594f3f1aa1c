"""Disagreements with gold, grouped by (gold, predicted), each with the path its judgment took (pure, no DSPy).

The path is read from the judgment's accounted steps: delegated or decided at triage, which specialists answered
(reused analyses marked), the knowledge look-ups and how many passages they returned, and the argument. A judgment
without a label is predicted "(no label)", with its cause (the error, or an escalation nobody decided).
Used by `python -m eval.mistakes` and by the ablation report's error-analysis section.
"""

from __future__ import annotations

import json
from collections import defaultdict

from hiera_dspy.metrics.agreement import NO_LABEL
from hiera_dspy.metrics.classification import final_label

SPECIALIST_ROLES = ("query", "item")


def disagreement_groups(rows: list[dict]) -> list[tuple[str, str, list[dict]]]:
    """(gold, predicted, rows) for every pair whose final label is not its gold label, largest group first; pairs
    without gold (a labelling run) have nothing to disagree with."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        if row.get("gold") is None:
            continue
        predicted = final_label(row)
        if predicted != row["gold"]:
            groups[(row["gold"], predicted or NO_LABEL)].append(row)
    return sorted(((g, p, rs) for (g, p), rs in groups.items()), key=lambda x: (-len(x[2]), x[0], x[1]))


def judgment_path(row: dict) -> dict:
    """What the judgment did: delegated (None for methods without triage), the specialists (with the Relation
    Analyzer's directed question when one was asked, or "reused"), every look-up (a specialist's own marked with its
    role), the passages found, the argument and the decision's reasoning."""
    steps = row.get("steps") or []
    plan = next(((s.get("outputs") or {}) for s in steps if s.get("name") == "relation.plan"), {})
    specialists = []
    for role in SPECIALIST_ROLES:
        own = [s for s in steps if s.get("role") == role]
        if not own:
            continue
        question = plan.get(f"question_for_{role}_analyzer")
        if any(str(s.get("name", "")).endswith(".answer") for s in own) and question:
            specialists.append(f'{role} (asked: "{short(question, 80)}")')
        else:
            specialists.append(role + (" (reused)" if all((s.get("outputs") or {}).get("reused") for s in own) else ""))
    lookups, passages = [], 0
    for s in steps:
        if s.get("role") == "knowledge":
            who = "" if s.get("name") == "knowledge.search" else str(s.get("name", "")).split(".")[0]  # query.search
            lookups += [(who, str(x)) for x in (s.get("outputs") or {}).get("lookups") or []]
            passages += len((s.get("outputs") or {}).get("passages") or [])
    fields = row.get("fields") or {}
    argument = fields.get("argument") or next(
        ((s.get("outputs") or {})["argument"] for s in reversed(steps) if (s.get("outputs") or {}).get("argument")),
        None)
    return {"delegated": row.get("delegated"), "specialists": specialists, "lookups": lookups, "passages": passages,
            "argument": argument, "reasoning": fields.get("reasoning"), "steps": [s.get("name") for s in steps]}


def cause(row: dict) -> str | None:
    """Why a judgment has no label: its error, or an undecided escalation; None when it has one."""
    if final_label(row) is not None:
        return None
    return f"error: {row['error']}" if row.get("error") else ("escalated, no human decision" if row.get("escalated")
                                                               else "no label")


def short(text, width: int) -> str:
    """Text (or JSON of a value) on one line, cut to `width` characters."""
    text = " ".join((text if isinstance(text, str) else json.dumps(text, default=str)).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def format_path(path: dict, width: int = 160) -> str:
    """One line: `delegated; specialists: query (asked: "..."), item; look-ups: "x", item "y" (3 passages);
    argument: "..."` (a specialist's own look-up is marked with its role)."""
    if path["delegated"] is None and not path["specialists"] and not path["lookups"]:
        return "steps: " + (", ".join(map(str, path["steps"])) or "none")
    parts = ["delegated" if path["delegated"] else "decided at triage" if path["delegated"] is False else "no triage"]
    parts.append("specialists: " + (", ".join(path["specialists"]) or "none"))
    looked = ", ".join(f'{who + " " if who else ""}"{short(x, 40)}"' for who, x in path["lookups"])
    parts.append(f"look-ups: {looked} ({path['passages']} passages)" if path["lookups"] else "look-ups: none")
    if path["argument"]:
        parts.append(f'argument: "{short(path["argument"], width)}"')
    return "; ".join(parts)


def summary_line(gold: str, predicted: str, rows: list[dict]) -> str:
    """`Relevant -> Irrelevant: 4 (delegated 3, with look-ups 2)` for a report."""
    paths = [judgment_path(r) for r in rows]
    delegated = sum(1 for p in paths if p["delegated"])
    looked = sum(1 for p in paths if p["lookups"])
    return f"{gold} → {predicted}: {len(rows)} (delegated {delegated}, with look-ups {looked})"


def report_section(results: dict[str, list[dict]]) -> list[str]:
    """Markdown lines for the ablation report: each method's disagreements by (gold, predicted), with their paths."""
    lines = ["## Error analysis", "",
             "Disagreements with gold by (gold → predicted) and the path those judgments took; each pair's path: "
             "`python -m eval.mistakes --run RUN` (`--tag` sorts wrong labels into the paper's failure patterns).", ""]
    for method, rows in results.items():
        groups = disagreement_groups(rows)
        text = "; ".join(summary_line(g, p, rs) for g, p, rs in groups) if groups else "none"
        run = next((r["run_id"] for r in rows if r.get("run_id")), None)
        lines += [f"- **{method}**{f' (run {run})' if run else ''}: {sum(len(rs) for *_, rs in groups)} of "
                  f"{len(rows)} disagree: {text}"]
    return lines + [""]
