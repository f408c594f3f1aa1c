"""Flags -> requests: the parts of a job's request (`hiera_dspy.jobs.requests`) that the commands' shared flags give."""

from __future__ import annotations

import argparse

from hiera_dspy.cli.engines import options_from_args
from hiera_dspy.cli.lms import lm_choice
from hiera_dspy.jobs.requests import DataSource, DryRun, Judging, KnownList, RunOptions


def data_source(args: argparse.Namespace) -> DataSource:
    """--dataset, --scheme, --labels, --guidelines and --on-bad-row."""
    return DataSource(args.dataset, scheme=args.scheme, labels=args.labels, on_bad_row=args.on_bad_row,
                      guidelines=getattr(args, "guidelines", None))


def known_list(args: argparse.Namespace) -> KnownList:
    """--known, --on-known-overlap and --known-kind."""
    return KnownList(getattr(args, "known", None), getattr(args, "on_known_overlap", "error"),
                     getattr(args, "known_kind", "auto"))


def run_options(args: argparse.Namespace) -> RunOptions:
    """--run-id, --store, --wait, --verbose and --retry-errors."""
    return RunOptions(run_id=getattr(args, "run_id", None), store=getattr(args, "store", None),
                      wait=getattr(args, "wait", False), verbose=getattr(args, "verbose", False),
                      retry_errors=getattr(args, "retry_errors", False))


def dry_run_of(args: argparse.Namespace) -> DryRun | None:
    """--dry-run with --dry-run-sample, --assume-delegation and --assume-output-tokens; None without --dry-run."""
    if not args.dry_run:
        return None
    return DryRun(args.dry_run_sample, args.assume_delegation, args.assume_output_tokens)


def vote_settings(args: argparse.Namespace) -> tuple[str, ...]:
    """--samples and --temperature as KEY=VALUE settings of the method's config (`add_vote_arguments`)."""
    values = {"samples": getattr(args, "samples", None), "temperature": getattr(args, "temperature", None)}
    return tuple(f"{key}={value}" for key, value in values.items() if value is not None)


def judging(args: argparse.Namespace) -> Judging:
    """What judges and how (`hiera_dspy.cli.options.add_judging_arguments`)."""
    return Judging(method=args.method, judge=args.judge, settings=tuple(args.settings or ()) + vote_settings(args),
                   knowledge=args.knowledge, lms=lm_choice(args), limit=args.limit, engine=args.engine,
                   engine_options=options_from_args(args), run=run_options(args), dry_run=dry_run_of(args))
