"""Learned relevance signals with an LLM judge on the bundled MSRD dev split: does the scorer help HIERA, and how much
LLM work does a cascade save?

    python bench/signals_llm.py --lm local --limit 100             # embedded local model (slow: hours on 2 cores)
    python bench/signals_llm.py --fake --limit 20                  # plumbing check with a fake LM (seconds)

Configurations, all judged on the same first N dev pairs: embed-lr (the scorer alone), zero-shot (judge-only when
zero-shot is not registered), hiera, hiera+signals, hiera-cascade at each --shares LLM share. The scorer is fitted on
the train split; each cascade's tau is picked on the whole dev split by the share rule (scorer probabilities only, no
labels, no LM call), so the share of the judged pairs that reach the LLM is close to, not exactly, the target.

Prints (and writes to --out, except with --fake) a markdown table: Cohen's kappa, accuracy, seconds and LM calls per
pair, the share of pairs that reached the LLM. Judgments go through the resumable run store (runs/store.sqlite; a
temporary one with --fake), one thread by default so seconds per pair are comparable. DSPy's response cache is off.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import dspy  # noqa: E402

import hiera_dspy.lms as lms_module  # noqa: E402
from hiera_dspy.cli import metrics_from_rows, run_id_for, runs_dir  # noqa: E402
from hiera_dspy.data import load_dataset  # noqa: E402
from hiera_dspy.knowledge import make_knowledge  # noqa: E402
from hiera_dspy.methods import BuildContext, available, build  # noqa: E402
from hiera_dspy.runner import run_pairs  # noqa: E402
from hiera_dspy.store import RunStore  # noqa: E402


def use_fake_lm(labels: list[str]) -> None:
    """Every LM a fake one (hiera_dspy.testing): labels and triage that depend only on the prompt, default text else."""
    from hiera_dspy.testing import fake_lm

    def pick(options):
        return lambda prompt: options[hashlib.sha256(prompt.encode()).digest()[0] % len(options)]

    answers = {"label": pick(labels), "relational_transparency": pick(["clear", "unclear"])}  # half delegate
    lms_module.make_lm = lambda spec, role="judge": fake_lm(answers)


def configurations(shares: list[float], embedder: str) -> list[tuple[str, str, dict]]:
    """(row name, method, config) in table order."""
    flat = "zero-shot" if "zero-shot" in available() else "judge-only"
    signals = {"embedder": embedder}
    rows = [("embed-lr", "embed-lr", signals), (flat, flat, {}), ("hiera", "hiera", {}),
            ("hiera+signals", "hiera+signals", signals)]
    rows += [(f"hiera-cascade (LLM share {s:g})", "hiera-cascade", {**signals, "llm_share": s}) for s in shares]
    return rows


def measure(name, method, config, ctx, train, dev, pairs, store, identity, threads, labels) -> dict:
    program = build(method, ctx, **config)
    prepare_s = tau = None
    if hasattr(program, "prepare"):
        started = time.perf_counter()
        program.prepare(train, dev)  # fits the scorer; the cascade also picks tau on dev
        prepare_s, tau = time.perf_counter() - started, program.signals.tau
    run_id = run_id_for({**identity, "method": method, "config": program.config, "tau": tau}, "signals-llm")
    store.start_run(run_id, {**identity, "method": method, "config": program.config, "tau": tau})
    rows = run_pairs(program, pairs, store, run_id, threads=threads, progress=False)
    m = metrics_from_rows(rows, labels)
    judged = [r for r in rows if not r.get("error")]
    m.update(name=name, tau=tau, prepare_s=prepare_s,
             llm_share=sum(r["lm_calls"] > 0 for r in judged) / len(judged) if judged else None)
    print(f"{name}: kappa {m['kappa']}, accuracy {m['accuracy']}, errors {m['errors']}", file=sys.stderr)
    return m


def table(results: list[dict]) -> str:
    def f(x, spec=".3f"):
        return "-" if x is None else format(x, spec)

    lines = ["| configuration | n | kappa | accuracy | s/pair | LM calls/pair | reached LLM | tau | errors | "
             "scorer fit s |", "|" + "---|" * 10]
    for m in results:
        lines.append(f"| {m['name']} | {m['n']} | {f(m['kappa'])} | {f(m['accuracy'])} | "
                     f"{f(m['seconds_per_judgment'], '.2f')} | {f(m['lm_calls_per_judgment'], '.1f')} | "
                     f"{f(m['llm_share'], '.2f')} | {f(m['tau'])} | {m['errors']} | {f(m['prepare_s'], '.1f')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lm", default="local", help="model for every role (default: the embedded local model)")
    p.add_argument("--fake", action="store_true", help="fake LMs instead of --lm (checks the plumbing, no model)")
    p.add_argument("--limit", type=int, default=100, help="judge the first N dev pairs")
    p.add_argument("--train-limit", type=int, help="fit the scorer on the first N train pairs (default: all)")
    p.add_argument("--shares", default="0.3,0.5", help="cascade LLM shares, comma-separated")
    p.add_argument("--embedder", default="auto", help="scorer features: auto (MiniLM if installed) | lexical")
    p.add_argument("--knowledge", default="catalog")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default="bench/results/signals_llm.md")
    args = p.parse_args(argv)

    dataset = load_dataset("msrd")
    labels = list(dataset.scheme.labels)
    if args.fake:
        use_fake_lm(labels)
        os.environ["HIERA_RUNS_DIR"] = tempfile.mkdtemp(prefix="signals-llm-")
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    train, dev = dataset.split("train", args.train_limit), dataset.split("dev")
    pairs = dev[:args.limit]
    lms = lms_module.build_lms({role: lms_module.LMSpec(model=args.lm) for role in lms_module.ROLES})
    dspy.configure(lm=lms.for_role("judge"))
    knowledge = make_knowledge(args.knowledge, dataset)
    ctx = BuildContext(dataset.scheme, lms, knowledge, train)
    store = RunStore(runs_dir() / "store.sqlite")
    identity = {"bench": "signals_llm", "lm": "fake" if args.fake else args.lm, "knowledge": knowledge.name,
                "n": len(pairs), "n_train": len(train)}
    shares = [float(s) for s in args.shares.split(",") if s.strip()]
    results = [measure(name, method, config, ctx, train, dev, pairs, store, identity, args.threads, labels)
               for name, method, config in configurations(shares, args.embedder)]
    lm_name = "fake LM" if args.fake else args.lm
    text = (f"# Learned signals with an LLM judge: MSRD dev (first {len(pairs)} pairs), LM {lm_name}, "
            f"scorer on {len(train)} train pairs ({args.embedder})\n\n{table(results)}\n")
    print(text)
    if not args.fake:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    return text


if __name__ == "__main__":
    main()
