"""Fill the holes of a retrieval benchmark: judge the unjudged documents in the runs' top k, and see what changes.

    python -m eval.holes --topics topics.tsv --corpus corpus.jsonl --qrels qrels.txt --runs bm25.run,dense.run \\
        --depth 10 --method dream --scheme msrd --out runs/filled
    python -m eval.holes --dataset trec:DL20 --runs a.run,b.run --judge artifacts/dl.json --out runs/filled
    python -m eval.holes --dataset irds:msmarco-passage/trec-dl-2020/judged --runs a.run,b.run --judge ... --out ...

`--dataset trec:FOLDER` (topics, corpus, qrels in one folder) or `irds:ID` (ir_datasets; documents looked up only for
the judged and retrieved ids) takes the place of the three files; its scheme defaults to `trec` (0-3).

A hole is a (qid, docid) in the top `--depth` of any run that the qrels never judged; each is judged once. The corpus
is the judges' catalog (knowledge), the existing judgments are the train pairs of learned methods (embed-lr). Takes
eval.run's run options (--run-id, --threads, --limit, --set, the LM flags) and resumes like any run. Writes
OUT/qrels.txt (every original judgment unchanged, then one line per filled hole), OUT/new.jsonl (the filled holes
with label, confidence, method, escalated), OUT/summary.json (per run: hole rate, nDCG@k and P@k before and after;
Kendall's tau and tau_ap of the ranking after against the one on the given qrels, and the run whose nDCG moved most)
and OUT/report.md. `--judge-pool` judges the pool's judged pairs too: the machine's own qrels, the ranking they give
and the machine's agreement with the given judgments (summary.json `machine_only`, OUT/machine_qrels.txt). Escalated
holes stay holes until a person decides them: python -m eval.review --run RUN_ID.

With --human-sample N|P% a seeded sample of whole queries is drawn once, after the judging, and kept in the run
(--sample random, the default: uniformly; --sample stratified: proportionally over --strata 4 strata of the judge's
uncertainty per query); OUT/sample.jsonl
lists its pairs for a person (eval.review shows them first; eval.escalations --labels loads a file of decisions).
Every export (this command rerun, or each decision) recomputes the conclusions: per system and measure the
machine-only value, the PPI estimate with its --ci interval and the human-only one, every pairwise difference with
its Holm-adjusted p-value (summary.json "estimates", "differences", "human_sample"; report.md in words). The machine's
per-query values are expected under the judge's label probabilities (--machine-values expected, the default) or
from its hard labels (labels). See docs/conclusions.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hiera_dspy.cli.labelling import add_labelling_arguments, add_sample_arguments, label_pairs
from hiera_dspy.cli.options import add_input_options, cli_main, exit_on_error_rate, output_folder, raise_if_stopped
from hiera_dspy.conclude.filled_benchmark import population
from hiera_dspy.conclude.retrieval import pool_holes
from hiera_dspy.data import DataError, Dataset, trec_folder
from hiera_dspy.labelling.benchmark_conclusions import check_sample_size, draw_sample
from hiera_dspy.labelling.benchmark_holes import TIE_RULE, read_inputs, tied_in_top
from hiera_dspy.labelling.run import export
from hiera_dspy.labels import LabelScheme, custom_scheme, get_scheme


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m eval.holes`."""
    p = argparse.ArgumentParser(prog="python -m eval.holes", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("benchmark")
    g.add_argument("--dataset", help="trec:FOLDER | irds:ID: the benchmark's topics, corpus and qrels in place of "
                                     "--topics/--corpus/--qrels (scheme: trec unless given)")
    g.add_argument("--topics", help="TSV qid<TAB>query, or JSONL {\"qid\", \"query\"}")
    g.add_argument("--corpus", help="JSONL {\"id\", \"title\", \"text\"} (extra fields join the text; .gz read too)")
    g.add_argument("--qrels", help="TREC qrels (qid 0 docid grade); grade = label index in the scheme")
    g.add_argument("--runs", required=True, help="comma-separated TREC run files (qid Q0 docid rank score tag)")
    g.add_argument("--depth", type=int, default=10, help="holes are unjudged documents in each run's top DEPTH")
    g.add_argument("--judge-pool", action="store_true",
                   help="judge every pair of the runs' top DEPTH, the judged ones too: the machine's own qrels "
                        "(OUT/machine_qrels.txt), the system ranking they give against the given qrels (Kendall's "
                        "tau, tau_ap) and the machine's agreement with the given judgments (summary.json machine_only;"
                        " in-sample for a method fitted on these qrels: judge with an artifact compiled elsewhere)")
    add_input_options(g)
    p.add_argument("--out", required=True, help="output folder")
    add_sample_arguments(p)
    add_labelling_arguments(p)
    return p


def scheme_of(args) -> LabelScheme:
    """The qrels' label scheme from --scheme or --labels (exactly one of them; with --dataset, `trec` if neither)."""
    if args.dataset and not (args.scheme or args.labels):
        return get_scheme("trec")
    if bool(args.scheme) == bool(args.labels):
        raise SystemExit("error: give the qrels' label scheme: --scheme msrd|esci|wands|homedepot|trec or "
                         "--labels 'A,B,C'")
    try:
        return custom_scheme(args.labels) if args.labels else get_scheme(args.scheme)
    except (KeyError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from None


def benchmark_sources(args) -> dict:
    """topics, corpus, qrels (absolute paths, or None for an irds: id) and dataset, from the three files or
    --dataset trec:FOLDER | irds:ID (exactly one of the two ways)."""
    files = (args.topics, args.corpus, args.qrels)
    if args.dataset:
        if any(files):
            raise SystemExit("error: give --dataset or --topics/--corpus/--qrels, not both")
        name, _, arg = args.dataset.partition(":")
        if name == "irds":
            return {"topics": None, "corpus": None, "qrels": None, "dataset": args.dataset}
        if name != "trec":
            raise SystemExit(f"error: --dataset {args.dataset!r}: holes read trec:FOLDER or irds:ID")
        try:
            found = trec_folder.files(arg)
        except DataError as exc:
            raise SystemExit(f"error: {exc}") from None
        return {role: _abs(str(path)) for role, path in found.items()} | {"dataset": args.dataset}
    if not all(files):
        raise SystemExit("error: give the benchmark: --dataset trec:FOLDER | irds:ID, or all of --topics, "
                         "--corpus and --qrels")
    return {"topics": _abs(args.topics), "corpus": _abs(args.corpus), "qrels": _abs(args.qrels), "dataset": None}


def main(argv: list[str] | None = None) -> dict:
    """Judge the unjudged documents in each run's top DEPTH and compare the runs before and after; returns the
    summary."""
    args = parser().parse_args(argv)
    output_folder(args.out)
    scheme = scheme_of(args)
    sources = benchmark_sources(args)
    if args.depth < 1:
        raise SystemExit(f"error: --depth must be at least 1, got {args.depth}")
    out = Path(args.out).resolve()
    labelling = {"kind": "holes", "out": str(out), "scheme": scheme.to_dict(), "depth": args.depth,
                 **sources,
                 "runs": [_abs(r) for r in args.runs.split(",") if r.strip()], "on_bad_row": args.on_bad_row,
                 "ci": args.ci, "machine_values": args.machine_values, "judge_pool": args.judge_pool}
    inputs = read_inputs(labelling, scheme)
    for name, run in inputs.runs.items():
        if tied := tied_in_top(run, args.depth):
            print(f"run {name}: {tied} documents in a top {args.depth} share their score with a neighbour; "
                  f"{TIE_RULE}", file=sys.stderr)
    check_sample_size(population(inputs.runs), args.human_sample, args.sample, args.strata, args.ci)
    holes = [inputs.pair(q, d) for q, d in pool_holes(inputs.runs, inputs.qrels, args.depth)]
    if args.judge_pool:  # the judged pairs of the pool too, their given grade as gold
        holes += [inputs.pair(q, d, scheme.labels[inputs.qrels[q, d]])
                  for q, d in pool_holes(inputs.runs, {}, args.depth) if (q, d) in inputs.qrels]
    if args.limit:
        holes = holes[:args.limit]
    train = inputs.judged_pairs(scheme)
    if len(train) < len(inputs.qrels):
        print(f"{len(inputs.qrels) - len(train)} existing judgments name a qid or docid missing from the topics or "
              "corpus: kept in qrels.txt, not used as train pairs", file=sys.stderr)
    dataset = Dataset(name=f"holes:{labelling['dataset'] or labelling['qrels']}", scheme=scheme, default_split="holes",
                      splits={"holes": holes, "train": train},
                      catalog=list(inputs.corpus.values()))
    print(f"{len(holes)} {'pairs of the pool' if args.judge_pool else 'holes'} at depth {args.depth} over "
          f"{len(inputs.runs)} runs ({len(inputs.qrels)} existing judgments)", file=sys.stderr)
    identity = {"holes": {k: labelling[k] for k in ("qrels", "runs", "topics", "corpus", "depth")}
                | ({"dataset": sources["dataset"]} if sources["dataset"] else {})
                | ({"judge_pool": True} if args.judge_pool else {})}
    run = label_pairs(args, dataset, holes, "holes", labelling, identity)
    if run is None:  # --dry-run: the estimate is printed, nothing was sent
        return {}
    if run.rows.stopped is None:  # a stratified draw needs every judgment: drawn when the run is complete
        draw_sample(run.store, run.run_id, population(inputs.runs), scheme, args.human_sample, args.sample_seed,
                    args.sample, args.strata)
    if run.config["labelling"].get("ci", 0.95) != args.ci:
        print(f"run {run.run_id} reports its intervals at the level it was started with "
              f"(--ci {run.config['labelling'].get('ci', 0.95)}); start a new run for another", file=sys.stderr)
    written = export(run.store, run.run_id)
    summary = json.loads((Path(run.config["labelling"]["out"]) / "summary.json").read_text())
    print((Path(run.config["labelling"]["out"]) / "report.md").read_text(encoding="utf-8"))
    print(f"wrote {', '.join(str(p) for p in written)} (run id {run.run_id}); "
          f"review: python -m eval.review --run {run.run_id}")
    raise_if_stopped(run.rows)
    exit_on_error_rate({run.run_id: {"errors": summary["errors"], "pairs": summary["holes"]}}, args.max_error_rate,
                       "rerun with --retry-errors to retry only those")
    return summary


def _abs(path: str) -> str:
    return str(Path(path.strip()).resolve())


if __name__ == "__main__":
    cli_main(main)
