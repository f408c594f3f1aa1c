"""Error analysis of a run (the paper's App. E): where the judgments disagree with gold, and the path each one took.

    python -m eval.mistakes --run 3e21cc4c3621                        # groups by (gold, predicted), paths shown
    python -m eval.mistakes --run 3e21cc4c3621 --tag --lm openai/gpt-4o-mini   # + each wrong label sorted by an LM
                                                                    # into the paper's failure patterns

Disagreements are grouped by (gold, predicted), largest first; a judgment without a label is predicted "(no label)"
with its cause. For each pair: the query and item title (from the run's dataset, when it loads), whether the Judge
delegated, which specialists answered, the knowledge look-ups and the argument. `--tag` asks the judge-role LM to
name the failure pattern of each wrong label: cultural over-interpretation, specificity over-enforcement (App. E.2)
or other. Run ids are printed by eval.run / eval.ablate.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import dspy

from hiera_dspy.cli.lms import add_lm_arguments, lms_from_args
from hiera_dspy.cli.options import add_renamed, cli_main, runs_dir
from hiera_dspy.data import DataError, load_dataset
from hiera_dspy.errors import RequestError
from hiera_dspy.metrics.agreement import NO_LABEL
from hiera_dspy.metrics.disagreements import cause, disagreement_groups, format_path, judgment_path, short
from hiera_dspy.store.run_settings import read_settings
from hiera_dspy.store.run_store import RunStore
from hiera_dspy.untrusted.blocks import item_block
from signatures.mistakes import FAILURE_PATTERNS, FailurePattern


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m eval.mistakes`."""
    p = argparse.ArgumentParser(prog="python -m eval.mistakes", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, help="run id (printed by eval.run and eval.ablate)")
    p.add_argument("--store", help="run store SQLite file (default: runs/store.sqlite)")
    p.add_argument("--show", type=int, default=10, help="pairs shown per group (default 10)")
    p.add_argument("--chars", type=int, default=160, help="truncate each argument to this many characters")
    p.add_argument("--tag", action="store_true",
                   help="ask the judge-role LM for each wrong label's failure pattern (paper App. E.2)")
    add_lm_arguments(p)
    add_renamed(p, "--chars", "--width")  # the old spelling, one release
    return p


def pair_texts(config: Mapping) -> dict:
    """Pair id -> Pair from the run's dataset; {} (said on stderr) when it does not load here."""
    try:
        dataset = load_dataset(str(config.get("dataset")))
    except (DataError, ValueError, OSError) as exc:
        print(f"note: the run's dataset {config.get('dataset')!r} does not load here ({exc}); showing pair ids only",
              file=sys.stderr)
        return {}
    return {pair.id: pair for pairs in dataset.splits.values() for pair in pairs}


def tag(row: dict, pair, lm: dspy.BaseLM) -> tuple[str, str]:
    """(pattern, explanation) for one wrong label; a tagger that fails says so (never a pattern)."""
    patterns = "\n".join(f"- {name}: {text}" for name, text in FAILURE_PATTERNS.items())
    path = judgment_path(row)
    described = format_path(path, 600) + (f'; reasoning: "{short(path["reasoning"], 600)}"' if path["reasoning"]
                                          else "")
    try:
        with dspy.context(lm=lm):
            out = dspy.Predict(FailurePattern)(
                patterns=patterns, query=pair.query if pair else "(unknown)",
                item=item_block(pair.item_title, pair.item_text) if pair else "(unknown)",
                human_label=row["gold"], predicted_label=row.get("human_label") or row["label"], path=described)
        return out.pattern, out.explanation
    except Exception as exc:  # noqa: BLE001 - one failed tagging must not stop the analysis
        return "(tagging failed)", f"{type(exc).__name__}: {short(str(exc), 200)}"


def analyse(rows: list[dict], texts: dict, show: int, width: int, lm: dspy.BaseLM | None = None) -> list[str]:
    """The report's lines: each (gold, predicted) group with its pairs' paths (and failure patterns with `lm`)."""
    groups = disagreement_groups(rows)
    unlabelled = sum(len(rs) for _, p, rs in groups if p == NO_LABEL)
    total = sum(len(rs) for *_, rs in groups)
    lines = [f"{len(rows)} judgments, {total} disagreements with gold ({total - unlabelled} wrong labels, "
             f"{unlabelled} without a label)"]
    patterns: Counter = Counter()
    for gold, predicted, group in groups:
        lines += ["", f"== gold {gold} -> {predicted}: {len(group)} pair{'s' * (len(group) != 1)}"]
        for row in group[:show]:
            pair = texts.get(row["id"])
            lines.append(f"- {row['id']}" + (f'  "{short(pair.query, 60)}" / "{short(pair.item_title, 60)}"'
                                             if pair else ""))
            if cause(row):
                lines.append(f"    cause: {short(cause(row), width)}")
            lines.append(f"    path: {format_path(judgment_path(row), width)}")
            if lm is not None and predicted != NO_LABEL:
                pattern, why = tag(row, pair, lm)
                patterns[pattern] += 1
                lines.append(f"    pattern: {pattern} ({short(why, width)})")
        if len(group) > show:
            lines.append(f"  ... and {len(group) - show} more (--show N)")
    if lm is not None:
        lines += ["", "failure patterns (paper App. E.2) of the wrong labels shown: "
                  + (", ".join(f"{name} {n}" for name, n in patterns.most_common()) or "none")]
    return lines


def main(argv: list[str] | None = None) -> str:
    """Print a run's wrong labels grouped by gold and predicted label (tagged by failure pattern with --tag)."""
    args = parser().parse_args(argv)
    path = Path(args.store or runs_dir() / "store.sqlite")
    if not path.exists():
        raise RequestError(f"no run store at {path} (pass --store FILE, or set HIERA_RUNS_DIR)")
    store = RunStore(path)
    try:
        settings = read_settings(store, args.run)
        if settings is None:
            latest = ", ".join(reversed(store.run_ids()[-3:])) or "none"
            raise RequestError(f"no run {args.run!r} in {store.path}; latest runs: {latest}")
        rows = store.rows(args.run)
    finally:
        store.close()
    lm = lms_from_args(args).for_role("judge") if args.tag else None
    head = (f"run {args.run}: {settings.method} on {settings.dataset or '?'} [{settings.split or '?'}]"
            f", knowledge {settings.identity.get('knowledge', '?')}")
    text = "\n".join([head, *analyse(rows, pair_texts(settings.identity), args.show, args.chars, lm)])
    sys.stdout.write(text + "\n")
    return text


if __name__ == "__main__":
    cli_main(main)
