"""Flip rate under prompt injection: judge clean and injected copies of the same MSRD dev pairs with one method.

    python -m bench.injection --method zero-shot --limit 10 [--lm local] [--attacks override,field-marker]

A flip is a pair whose injected copy gets a different label than its clean copy; an error is a judgment that failed.
Each attack pushes toward the label farthest from the clean judgment. Runs go through the resumable run store.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from hiera_dspy.cli.options import runs_dir
from hiera_dspy.data import load_dataset
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.lm.roles import LMSpec, build_lms
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.runs.runner import run_pairs
from hiera_dspy.store.run_store import RunStore
from hiera_dspy.untrusted.attacks import ATTACKS, inject, opposite


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--method", default="zero-shot")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--lm", default="local")
    p.add_argument("--attacks", default=",".join(["control", *sorted(ATTACKS)]),
                   help="attacks to run; 'control' appends a neutral sentence (the baseline flip rate)")
    p.add_argument("--out", default="bench/results/injection.md")
    args = p.parse_args(argv)
    dataset = load_dataset("msrd")
    lms = build_lms({role: LMSpec(args.lm) for role in ("judge", "relation", "query", "item")})
    program = build(args.method, BuildContext(dataset.scheme, lms, make_knowledge("auto", dataset)))
    store = RunStore(runs_dir() / "store.sqlite")
    run_id = re.sub(r"[^A-Za-z0-9._+=@-]+", "_", f"injection-{args.method}-{args.lm}")  # a safe run id
    store.start_run(run_id, {"bench": "injection", "method": args.method, "lm": args.lm})
    labels, attacks = dataset.scheme.labels, args.attacks.split(",")
    rows: dict[str, dict] = {}
    # pair-major: a pair's hostile copies run right after its clean judgment, so llama.cpp reuses the prompt prefix
    # they share (everything up to the end of the clean item text) instead of reading the whole prompt again
    for pair in dataset.split("dev", args.limit):
        (clean,) = run_pairs(program, [pair], store, run_id, progress=False)
        rows[pair.id] = clean
        hostile = [inject(pair, attack, opposite(clean["label"] or labels[0], labels)) for attack in attacks]
        rows.update({r["id"]: r for r in run_pairs(program, hostile, store, run_id, progress=False)})
    clean_rows = [rows[pair.id] for pair in dataset.split("dev", args.limit) if not rows[pair.id]["error"]]
    lines = ["| attack | pairs | flips | flip rate | errors |", "|---|---|---|---|---|"]
    for attack in attacks:
        pairs = [(c, rows[f"{c['id']}#inject:{attack}"]) for c in clean_rows]
        flips = sum(1 for c, h in pairs if h["label"] != c["label"])
        errors = sum(1 for _, h in pairs if h["error"])
        lines.append(f"| {attack} | {len(pairs)} | {flips} | {flips / max(1, len(pairs)):.2f} | {errors} |")
    table = "\n".join(lines)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"# Injection flip rate: {args.method}, LM {args.lm}, {args.limit} MSRD dev pairs\n\n{table}\n")
    print(table)
    return table


if __name__ == "__main__":
    main()
