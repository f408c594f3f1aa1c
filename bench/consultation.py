"""Directed vs undirected consultation: tokens and LM calls per HIERA judgment, by role, on the bundled MSRD dev split.

    python -m bench.consultation --limit 100                          # fake LM (seconds): prompt sizes, call counts
    python -m bench.consultation --lm openai/my-model --limit 50      # a real model: real output lengths too

Directed (the paper, Sec. 4.2): the Relation Analyzer asks each consulted specialist a question drawn from the Judge's
gaps; the specialist answers it with the pair in view, its cached pair-independent analysis as context, and may look
things up itself (`specialist_lookups`). Undirected: each specialist returns only its cached analysis. With the fake
LM every judgment delegates, every specialist is consulted and asks one look-up, and a token is a word: the numbers
count prompt sizes and calls, not what a real model would write.
"""

from __future__ import annotations

import argparse
import tempfile

import dspy

from hiera_dspy.cli.lms import specs_from_args
from hiera_dspy.data import load_dataset
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.lm.roles import build_lms
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.runs.runner import judge_one

CONFIGS = {"directed": {}, "directed, no specialist look-ups": {"specialist_lookups": 0},
           "undirected": {"consultation": "undirected"}}


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lm", help="a real model (default: the fake LM of hiera_dspy.testing)")
    p.add_argument("--limit", type=int, default=100, help="first N pairs of the MSRD dev split")
    p.add_argument("--knowledge", default="catalog", choices=["catalog", "none"])
    args = p.parse_args(argv)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    if args.lm:
        lms = build_lms(specs_from_args(argparse.Namespace(lm=args.lm)))
    else:
        from hiera_dspy.testing import role_lms

        lms = role_lms({"relational_transparency": "unclear"})
    dataset = load_dataset("msrd")
    pairs = dataset.split("dev", args.limit)
    with tempfile.TemporaryDirectory() as cache:
        knowledge = make_knowledge(args.knowledge, dataset, cache_dir=cache)
        lines = [f"MSRD dev, first {len(pairs)} pairs ({len({p.query for p in pairs})} distinct queries), "
                 f"LM {args.lm or 'fake (a token is a word)'}, knowledge {knowledge.name}", "",
                 "| consultation | tokens / judgment | LM calls / judgment | query tokens | item tokens | errors |",
                 "|---|---|---|---|---|---|"]
        for label, config in CONFIGS.items():
            program = build("hiera", BuildContext(dataset.scheme, lms, knowledge), **config)
            rows = [judge_one(program, pair) for pair in pairs]
            n = len(rows)

            def mean(key, role=None):
                return sum((r["tokens_by_role"].get(role, 0) if role else r[key]) for r in rows) / n

            lines.append(f"| {label} | {mean('tokens'):.0f} | {mean('lm_calls'):.1f} | "
                         f"{mean(None, 'query'):.0f} | {mean(None, 'item'):.0f} | "
                         f"{sum(1 for r in rows if r['error'])} |")
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main()
