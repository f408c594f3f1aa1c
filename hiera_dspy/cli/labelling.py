"""The labelling CLIs' shared flags (eval.label, eval.holes): what judges and how, and the human sample's; the judging
itself is the library's (`hiera_dspy.jobs.labelling.label_pairs`)."""

from __future__ import annotations

import argparse

from hiera_dspy.benchmark.draws import DEFAULT_STRATA, DRAW_REGISTRY
from hiera_dspy.benchmark.sample import parse_size
from hiera_dspy.cli.options import add_judging_arguments
from hiera_dspy.conclude.holes import MACHINE_VALUES
from hiera_dspy.errors import HieraError
from hiera_dspy.jobs.requests import HumanSample


def add_labelling_arguments(p: argparse.ArgumentParser) -> None:
    """eval.run's options for what judges and how (`hiera_dspy.cli.options.add_judging_arguments`)."""
    add_judging_arguments(p)


def add_sample_arguments(p: argparse.ArgumentParser) -> None:
    """--human-sample, --sample-seed, --sample, --strata, --ci and --machine-values."""
    g = p.add_argument_group("conclusions (prediction-powered inference; docs/conclusions.md)")
    g.add_argument("--human-sample", metavar="N|P%", type=sample_size,
                   help="draw a sample of N queries (or P%% of them; see --sample) whose every hole a person "
                        "labels; drawn once and kept in the run")
    g.add_argument("--sample-seed", type=int, default=0, help="seed of the human sample (default 0; recorded)")
    g.add_argument("--sample", default=None, choices=[*DRAW_REGISTRY, "weighted"],
                   help=f"how the sample is drawn ({DRAW_REGISTRY.help()}; over --strata strata); with --sample-unit "
                        "pair: random | weighted (by each hole's weight in the metrics) | active (weight times the "
                        "judge's uncertainty); recorded")
    g.add_argument("--sample-unit", default="query", choices=["query", "pair"],
                   help="what the person's sample is made of: whole queries (default; --human-sample counts "
                        "queries) or single holes (pair; --human-sample counts judgments, drawn across queries)")
    g.add_argument("--strata", type=int, default=None,
                   help=f"number of strata of --sample stratified (default {DEFAULT_STRATA}; recorded)")
    g.add_argument("--ci", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    g.add_argument("--machine-values", default="expected", choices=list(MACHINE_VALUES),
                   help="the machine's per-query metric: expected under the judge's label probabilities (default; "
                        "a hole without them counts its label) or from its hard labels")


def sample_size(text: str) -> str:
    """argparse type of --human-sample: the text itself when `parse_size` takes it (N >= 1 queries, or P% in
    (0, 100]); else an argparse error (exit status 2)."""
    try:
        parse_size(text)
    except HieraError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--human-sample {text!r}: ")) from None
    return text


def human_sample(args: argparse.Namespace) -> HumanSample:
    """--human-sample, --sample-seed, --sample, --strata, --ci and --machine-values as a request's part."""
    return HumanSample(args.human_sample, args.sample_seed, args.sample, args.strata, args.ci, args.machine_values,
                       getattr(args, "sample_unit", "query"))
