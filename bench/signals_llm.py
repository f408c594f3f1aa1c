"""Learned relevance signals with an LLM judge on the bundled MSRD dev split: does the scorer help the LLM, and how
much LLM work does a cascade save?

    python -m bench.signals_llm --lm local --limit 120 --hiera-limit 16 --verify 10   # local model: 82 min on 2 cores
    python -m bench.signals_llm --fake --limit 20 --hiera-limit 8        # plumbing check with a fake LM (seconds)

Two tables, both on the first pairs of the dev split:
1. the first --limit pairs, cheap configurations: embed-lr (the scorer alone), zero-shot, judge-only (HIERA's Judge
   alone), judge+signals (the same Judge reading the scorer's distribution: hiera+signals with delegation "never"),
   and the cascade over judge+signals at each --shares LLM share;
2. the first --hiera-limit of those pairs, adding hiera, hiera+signals and the cascade over hiera+signals (the
   registered `hiera-cascade`) — about a minute per HIERA judgment with the local model.

The scorer is fitted once on the train split and shared by every configuration. Each cascade's tau is picked on the
whole dev split by the share rule (scorer probabilities only: no labels, no LM call), so the share of the judged pairs
that reach the LLM is close to, not exactly, the target.

Cascade rows are composed pair by pair from the runs above: a pair whose top scorer probability is >= tau takes the
embed-lr row (its label, seconds, no LM call), any other pair the row of the configuration the cascade delegates to,
which is exactly the program the cascade runs on those pairs (same prompts, same evidence, temperature 0). This saves
re-judging; `--verify K` also runs the real `hiera-cascade` program (delegation "never") on the first K pairs and
prints how many labels agree with the composed rows.

Prints (and writes to --out, except with --fake) markdown tables: Cohen's kappa, accuracy, seconds and LM calls per
pair, the share of pairs that reached the LLM. Judgments go through the resumable run store (runs/store.sqlite; a
temporary one with --fake): a killed bench resumes, a larger --limit judges only the new pairs. One thread by default
so seconds per pair are comparable. DSPy's response cache is off.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

import dspy

from hiera_dspy.cli.options import runs_dir
from hiera_dspy.data import load_dataset
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.lm.roles import ROLES, LMSpec, RoleLMs, build_lms
from hiera_dspy.methods import BuildContext, available, build
from hiera_dspy.methods.learned_scorer import ScorerLearner, ScorerState, tau_for_share, top
from hiera_dspy.metrics.classification import final_label
from hiera_dspy.metrics.format import number
from hiera_dspy.metrics.significance import mcnemar
from hiera_dspy.runs.progress import Display
from hiera_dspy.runs.runner import run_pairs
from hiera_dspy.runs.spec import RunSpec
from hiera_dspy.runs.tally import metrics_from_rows
from hiera_dspy.store.run_store import RunStore

NEVER = {"delegation": "never"}


def fake_lms(labels: list[str]) -> RoleLMs:
    """Every role one fake LM (hiera_dspy.testing): labels and triage that depend only on the prompt, default text
    else."""
    from hiera_dspy.testing import role_lms

    def pick(options):
        return lambda prompt: options[hashlib.sha256(prompt.encode()).digest()[0] % len(options)]

    answers = {"label": pick(labels), "relational_transparency": pick(["clear", "unclear"])}  # half delegate
    return role_lms(answers)


class Bench:
    """Runs configurations on pairs through the run store, all sharing one fitted scorer."""

    def __init__(self, ctx, scorer: ScorerState, store: RunStore, identity: dict, threads: int, labels: list[str]):
        self.ctx, self.scorer, self.store, self.identity = ctx, scorer, store, identity
        self.threads, self.labels = threads, labels

    def program(self, method: str, config: dict):
        program = build(method, self.ctx, **config)
        if isinstance(program, ScorerLearner):
            program.scorer_state = self.scorer  # fitted once, shared: every row sees the same distributions
        return program

    def rows(self, method: str, config: dict, pairs) -> dict[str, dict]:
        program = self.program(method, config)
        # its identity names the bench and the shared scorer (`self.identity`); a cascade's tau is in its config
        spec = RunSpec.of(program, learned={}, extra=self.identity, qualifiers=("signals-llm",))
        key, run_id = spec.identity(), spec.run_id
        self.store.start_run(run_id, key)
        started = time.perf_counter()
        rows = run_pairs(program, pairs, self.store, run_id, threads=self.threads, progress=Display(desc=method))
        print(f"{method} {config or ''}: {len(rows)} pairs ({time.perf_counter() - started:.0f} s new work)",
              file=sys.stderr)
        return {r["id"]: r for r in rows}

    def metrics(self, name: str, rows: list[dict], tau: float | None = None, reference: dict | None = None) -> dict:
        """metrics_from_rows plus the LLM share and, against `reference` rows (embed-lr), McNemar's paired test."""
        m = metrics_from_rows(rows, self.labels)
        m.update(name=name, tau=tau)
        m["vs_reference"] = None
        if reference is not None:
            t = mcnemar([r["gold"] for r in rows], [final_label(reference[r["id"]]) for r in rows],
                        [final_label(r) for r in rows])
            m["vs_reference"] = f"{t['b']}/{t['c']}, p={t['p_value']:.2f}"
        return m


def cascade_rows(pairs, tau: float, top_prob: dict[str, float], scorer_rows: dict, llm_rows: dict) -> list[dict]:
    """The cascade's row per pair: the scorer's when its top probability is >= tau, else the LLM configuration's."""
    return [scorer_rows[p.id] if top_prob[p.id] >= tau else llm_rows[p.id] for p in pairs]


def table(title: str, results: list[dict]) -> str:
    f = number
    lines = [f"## {title}", "", "| configuration | n | kappa | accuracy | macro-F1 | s/pair | s p50 | LM calls/pair | "
             "tokens/pair | reached LLM | tau | errors | vs embed-lr: b/c, McNemar p |", "|" + "---|" * 13]
    for m in results:
        lines.append(f"| {m['name']} | {m['n']} | {f(m['kappa'])} | {f(m['accuracy'])} | {f(m['macro_f1'])} | "
                     f"{f(m['seconds_per_judgment'], '.2f')} | {f(m['seconds_p50'], '.2f')} | "
                     f"{f(m['lm_calls_per_judgment'], '.1f')} | {f(m['tokens_per_judgment'], '.0f')} | "
                     f"{f(m['llm_share'], '.2f')} | {f(m['tau'])} | {m['errors']} | {m['vs_reference'] or '-'} |")
    lines.append("\nb/c: pairs embed-lr labels right and this configuration wrong / the reverse; p: McNemar's test "
                 "(exact binomial when b+c < 25), not corrected for the number of rows.")
    return "\n".join(lines) + "\n"


def verify(bench: Bench, pairs, tau: float, share: float, composed: list[dict]) -> str:
    """Run the real hiera-cascade (delegation never) at `tau` and count labels equal to the composed rows."""
    program = bench.program("hiera-cascade", {**NEVER, "llm_share": share, "tau": tau})
    program.scorer_state.tau = tau  # the shared scorer carries the cascade's threshold
    agree = 0
    for pair, row in zip(pairs, composed):
        agree += program(**pair.inputs()).label == row["label"]
    return f"real hiera-cascade (delegation never, tau {tau:.3f}) vs composed rows: {agree}/{len(pairs)} labels agree"


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lm", default="local", help="model for every role (default: the embedded local model)")
    p.add_argument("--fake", action="store_true", help="fake LMs instead of --lm (checks the plumbing, no model)")
    p.add_argument("--limit", type=int, default=120, help="cheap configurations: the first N dev pairs")
    p.add_argument("--hiera-limit", type=int, default=16, help="HIERA configurations: the first M of those pairs")
    p.add_argument("--train-limit", type=int, help="fit the scorer on the first N train pairs (default: all)")
    p.add_argument("--shares", default="0.3,0.5", help="cascade LLM shares, comma-separated")
    p.add_argument("--embedder", default="auto", help="scorer features: auto (MiniLM if installed) | lexical")
    p.add_argument("--knowledge", default="catalog")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--verify", type=int, default=0, metavar="K", help="also run the real cascade on the first K pairs")
    p.add_argument("--out", default="bench/results/signals_llm.md")
    args = p.parse_args(argv)

    dataset = load_dataset("msrd")
    labels = list(dataset.scheme.labels)
    if args.fake:
        os.environ["HIERA_RUNS_DIR"] = tempfile.mkdtemp(prefix="signals-llm-")
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    train, dev = dataset.split("train", args.train_limit), dataset.split("dev")
    pairs = dev[:args.limit]
    few = pairs[:args.hiera_limit]
    lms = fake_lms(labels) if args.fake else build_lms({role: LMSpec(model=args.lm) for role in ROLES})
    dspy.configure(lm=lms.for_role("judge"))
    knowledge = make_knowledge(args.knowledge, dataset)
    ctx = BuildContext(dataset.scheme, lms, knowledge, train)
    scorer = ScorerState(dataset.scheme, train, args.embedder)
    started = time.perf_counter()
    scorer.scorer  # noqa: B018 - fit now, timed
    fit_s = time.perf_counter() - started
    top_prob = {q.id: top(d)[1] for q, d in zip(dev, scorer.scorer.predict_proba_many(dev))}
    identity = {"bench": "signals_llm", "lm": "fake" if args.fake else args.lm, "knowledge": knowledge.name,
                "n_train": len(train), "embedder": args.embedder}
    bench = Bench(ctx, scorer, RunStore(runs_dir() / "store.sqlite"), identity, args.threads, labels)
    shares = [float(s) for s in args.shares.split(",") if s.strip()]
    taus = {s: tau_for_share(list(top_prob.values()), s) for s in shares}
    flat = "zero-shot" if "zero-shot" in available() else "judge-only"

    scorer_rows = bench.rows("embed-lr", {}, pairs)
    judge_rows = bench.rows("hiera+signals", NEVER, pairs)  # the cascade's candidate first: the goal's row
    flat_rows = bench.rows(flat, {}, pairs)
    solo_rows = bench.rows("judge-only", {}, pairs)  # the same Judge prompt without the evidence: what it adds

    def cheap(subset):
        ids = [q.id for q in subset]
        out = [bench.metrics("embed-lr", [scorer_rows[i] for i in ids]),
               bench.metrics(flat, [flat_rows[i] for i in ids], reference=scorer_rows),
               bench.metrics("judge-only", [solo_rows[i] for i in ids], reference=scorer_rows),
               bench.metrics("judge+signals", [judge_rows[i] for i in ids], reference=scorer_rows)]
        out += [bench.metrics(f"cascade over judge+signals (LLM share {s:g})",
                              cascade_rows(subset, taus[s], top_prob, scorer_rows, judge_rows), taus[s], scorer_rows)
                for s in shares]
        return out

    results_1 = cheap(pairs)
    lm_name = "fake LM" if args.fake else args.lm
    head = (f"# Learned signals with an LLM judge: MSRD dev, LM {lm_name}, scorer on {len(train)} train pairs "
            f"({getattr(scorer.scorer.features.embedder, 'model_id', 'lexical features only')}; "
            f"fit {fit_s:.1f} s)\n\n")
    text = head + table(f"1. Cheap configurations, first {len(pairs)} dev pairs", results_1)
    print(table(f"1. first {len(pairs)} dev pairs", results_1), file=sys.stderr)

    if few:
        hiera_rows = bench.rows("hiera", {}, few)
        signal_rows = bench.rows("hiera+signals", {}, few)
        results_2 = cheap(few) + [bench.metrics("hiera", list(hiera_rows.values()), reference=scorer_rows),
                                  bench.metrics("hiera+signals", list(signal_rows.values()), reference=scorer_rows)]
        results_2 += [bench.metrics(f"hiera-cascade (LLM share {s:g})",
                                    cascade_rows(few, taus[s], top_prob, scorer_rows, signal_rows), taus[s],
                                    scorer_rows)
                      for s in shares]
        text += "\n" + table(f"2. With HIERA, first {len(few)} dev pairs", results_2)
    if args.verify and shares:
        share = shares[-1]
        subset = pairs[:args.verify]
        line = verify(bench, subset, taus[share], share,
                      cascade_rows(subset, taus[share], top_prob, scorer_rows, judge_rows))
        text += f"\n{line}\n"
    print(text)
    if not args.fake:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    return text


if __name__ == "__main__":
    main()
