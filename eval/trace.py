"""Show one judgment's whole path from the run store: every agent step in order, with its outputs and its cost.

    python -m eval.trace --run 3e21cc4c3621 --pair msrd:qid:14175:348
    python -m eval.trace --run 3e21cc4c3621 --pair msrd:qid:14175:348 --json      # the raw row

Triage (dimensions, guidance, provisional label), the Relation Analyzer's plan (whom to consult, what to ask, look-ups),
specialist analyses (reused ones marked) and answers to R's questions (with their own look-ups), knowledge passages
(title, source), the argument and the decision (with the triage it read, and its reasoning). Each step shows what it
was handed beyond the pair (`<` lines), what it wrote, the model profile of its prompt, its tokens, LM calls and
seconds; then the totals. Run ids are printed by eval.run / eval.ablate.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from hiera_dspy.cli.options import add_renamed, cli_main, open_store, runs_dir
from hiera_dspy.errors import RequestError
from hiera_dspy.lm.profiles import describe as describe_profile
from hiera_dspy.records import Judgment, Step, as_judgment, step_from_dict
from hiera_dspy.store.run_settings import read_settings
from hiera_dspy.store.run_store import RunStore

STEP_TITLES = {"judge.triage": "Judge triage", "relation.plan": "Relation Analyzer plan",
               "query.analyze": "Query Analyzer analysis", "item.analyze": "Item Analyzer analysis",
               "query.answer": "Query Analyzer answer", "item.answer": "Item Analyzer answer",
               "query.search": "Query Analyzer look-up", "item.search": "Item Analyzer look-up",
               "knowledge.search": "Knowledge look-up", "relation.synthesize": "Relation Analyzer argument",
               "judge.decide": "Judge decision"}
SHOW = 3  # how many available ids an error message lists


def parser() -> argparse.ArgumentParser:
    """The command-line options of eval.trace."""
    p = argparse.ArgumentParser(prog="python -m eval.trace", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, help="run id (printed by eval.run and eval.ablate)")
    p.add_argument("--pair", required=True, help="pair id within the run")
    p.add_argument("--store", help="run store SQLite file (default: runs/store.sqlite)")
    p.add_argument("--json", action="store_true", help="print the stored row as JSON")
    p.add_argument("--chars", type=int, default=300, help="truncate each text output to this many characters")
    add_renamed(p, "--chars", "--width")  # the old spelling, one release
    return p


def _few(ids: list[str]) -> str:
    return ", ".join(ids[:SHOW]) + (f", ... ({len(ids)} in all)" if len(ids) > SHOW else "") if ids else "none"


def find_row(store: RunStore, run_id: str, pair_id: str) -> tuple[Mapping, Judgment]:
    """The run's config and the pair's row; SystemExit naming a few available ids when either is missing."""
    settings = read_settings(store, run_id)
    if settings is None:
        runs = [f"{r} ({getattr(read_settings(store, r), 'method', '?')})" for r in reversed(store.run_ids())]
        raise RequestError(f"no run {run_id!r} in {store.path}; latest runs: {_few(runs)}")
    rows = store.rows(run_id)
    row = next((r for r in rows if r.id == pair_id), None)
    if row is None:
        raise RequestError(f"run {run_id} has no judgment for pair {pair_id!r}; "
                         f"judged pairs: {_few([r.id for r in rows])}")
    return settings.identity, row


def _short(value, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def format_step(i: int, step: Step | dict, width: int = 300) -> list[str]:
    """One agent step: its title, role, profile, marks and cost, then what it was handed and what it wrote."""
    step = step if isinstance(step, Step) else step_from_dict(step)
    outputs = dict(step.outputs)
    reused = outputs.pop("reused", False)
    title = STEP_TITLES.get(step.name, step.name)
    profile = f", profile {step.profile}" if step.profile else ""
    marks = "".join(f"  [{m}]" for m, on in (("reused", reused), ("salvaged", step.parse_recovered),
                                             (f"degraded: {', '.join(step.degraded)}", step.degraded)) if on)
    cached = f" ({step.cached_calls} from the cache)" if step.cached_calls else ""
    lines = [f"[{i}] {title} ({step.name}, role {step.role}{profile}){marks}: "
             f"{step.calls} LM calls{cached}, {step.prompt_tokens + step.completion_tokens} tokens "
             f"({step.prompt_tokens} in / {step.completion_tokens} out), {step.seconds:.2f}s"]
    for key, value in step.inputs.items():
        lines.append(f"  < {key}: {_short(value, width)}")
    passages = outputs.pop("passages", None)
    for key, value in outputs.items():
        lines.append(f"    {key}: {_short(value, width)}")
    if passages is not None:
        lines.append(f"    passages: {len(passages)}")
        lines += [f"      - {p.get('title', '?')} [{p.get('source', '?')}]" for p in passages]
    return lines


def format_trace(config: Mapping, row: Judgment | dict, width: int = 300) -> str:
    """The whole path of one judgment: run and pair, outcome, profiles, every step, then the totals."""
    row = as_judgment(row)
    outcome = row.error or ("escalated" if row.escalated else row.label)
    lines = [f"run {row.run_id}: {config.get('method', '?')} on {config.get('dataset', '?')} "
             f"[{config.get('split', '?')}], knowledge {config.get('knowledge', '?')}",
             f"pair {row.id}: gold {row.gold!r} -> {outcome!r}"
             + (f" (human label {row.human_label!r})" if row.human_label else "")
             + ("" if row.delegated is None else f", delegated: {'yes' if row.delegated else 'no'}")]
    used = sorted({s.profile for s in row.steps if s.profile})
    lines += [f"profile: {describe_profile(name)}" for name in used] + [""]
    for i, step in enumerate(row.steps, 1):
        lines += format_step(i, step, width)
    if not row.steps:
        lines.append("(no steps recorded)")
    if row.fields.get("reasoning") and not any(s.name == "judge.decide" for s in row.steps):
        lines.append(f"    reasoning: {_short(row.fields['reasoning'], width)}")
    roles = ", ".join(f"{r} {t}" for r, t in sorted(row.tokens_by_role.items())) or "-"
    lines += ["", f"total: {len(row.steps)} steps, {row.lm_calls} LM calls, {row.tokens} tokens "
                  f"(by role: {roles}), {row.seconds or 0.0:.2f}s"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    """Print one stored judgment's steps (or its row and run config as JSON); return the printed text."""
    args = parser().parse_args(argv)
    path = Path(args.store or runs_dir() / "store.sqlite")
    if not path.exists():
        raise RequestError(f"no run store at {path} (pass --store FILE, or set HIERA_RUNS_DIR)")
    store = open_store(args)
    try:
        config, row = find_row(store, args.run, args.pair)
    finally:
        store.close()
    text = json.dumps({"config": dict(config), "row": row.to_dict()}, indent=1, default=str) if args.json else \
        format_trace(config, row, args.chars)
    sys.stdout.write(text + "\n")
    return text


if __name__ == "__main__":
    cli_main(main)
