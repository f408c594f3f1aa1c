"""Fill the holes of a retrieval benchmark: judge the unjudged documents in the runs' top k, and see what changes.

    python -m eval.holes --topics topics.tsv --corpus corpus.jsonl --qrels qrels.txt --runs bm25.run,dense.run \\
        --depth 10 --method dream --scheme msrd --out runs/filled
    python -m eval.holes --dataset trec:DL20 --runs a.run,b.run --judge artifacts/dl.json --out runs/filled
    python -m eval.holes --dataset irds:msmarco-passage/trec-dl-2020/judged --runs a.run,b.run --judge ... --out ...

`--dataset trec:FOLDER` (topics, corpus, qrels in one folder) or `irds:ID` (ir_datasets; documents looked up only for
the judged and retrieved ids) takes the place of the three files; its scheme defaults to `trec` (0-3).

A hole is a (qid, docid) in the top `--depth` of any run that the qrels never judged; each is judged once. The corpus
is the judges' catalog (knowledge), the existing judgments are the train pairs of learned methods (embed-lr) and the
known judgments a judge that reads them reads as evidence (summary.json `known`, report.md: how many per query; never
the human sample's decisions). Takes
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
With --sample-unit pair the sample is single holes across queries and --human-sample N counts judgments (--sample
random | weighted | active: uniformly, by each hole's weight in the metrics, or by that times the judge's
uncertainty); OUT/sample.jsonl lists them in the order a person decides them.
Every export (this command rerun, or each decision) recomputes the conclusions: per system and measure the
machine-only value, the PPI estimate with its --ci interval and the human-only one, every pairwise difference with
its Holm-adjusted p-value (summary.json "estimates", "differences", "human_sample"; report.md in words). The machine's
per-query values are expected under the judge's label probabilities (--machine-values expected, the default) or
from its hard labels (labels). See docs/conclusions.md.
"""

from __future__ import annotations

import argparse

from hiera_dspy.api import HolesRequest, fill_holes
from hiera_dspy.cli.labelling import add_labelling_arguments, add_sample_arguments, human_sample
from hiera_dspy.cli.options import add_input_options, cli_main, exit_on_error_rate, raise_if_stopped
from hiera_dspy.cli.requests import judging
from hiera_dspy.runs.cost import format_forecast


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


def main(argv: list[str] | None = None) -> dict:
    """Judge the unjudged documents in each run's top DEPTH and compare the runs before and after; returns the
    summary."""
    args = parser().parse_args(argv)
    filled = fill_holes(HolesRequest(args.topics, args.corpus, args.qrels, tuple(args.runs.split(",")), args.out,
                                     judging(args), depth=args.depth, scheme=args.scheme, labels=args.labels,
                                     on_bad_row=args.on_bad_row, sample=human_sample(args),
                                     dataset=args.dataset, judge_pool=args.judge_pool,
                                     guidelines=args.guidelines))
    if filled.estimate is not None:  # --dry-run: nothing was sent
        print(format_forecast(filled.estimate))
        return {}
    print(filled.report)
    print(f"wrote {', '.join(str(p) for p in filled.written)} (run id {filled.run_id}); "
          f"review: python -m eval.review --run {filled.run_id}")
    raise_if_stopped(filled.rows)
    exit_on_error_rate({filled.run_id: {"errors": filled.summary["errors"], "pairs": filled.summary["holes"]}},
                       args.max_error_rate, "rerun with --retry-errors to retry only those")
    return filled.summary


if __name__ == "__main__":
    cli_main(main)
