"""The program a judging command runs: a compiled judge loaded from its artifact, or a fresh method from the registry."""

from __future__ import annotations

from hiera_dspy.artifacts.judge_file import load_judge, note_ignored_endpoints, read_artifact
from hiera_dspy.cli.lms import lms_from_args
from hiera_dspy.cli.options import config_from_args
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.methods import BuildContext, build


def build_program(args, dataset):
    """The program to run: a loaded artifact (CLI LM flags override its recorded models) or a fresh method."""
    knowledge = make_knowledge(args.knowledge, dataset)
    train = dataset.splits.get("train", [])
    if args.judge:
        if args.settings:
            raise SystemExit("error: --set changes an uncompiled --method; a compiled --judge keeps its config "
                             "(compile again with optimize.compile --set ...)")
        doc = read_artifact(args.judge)
        note_ignored_endpoints(args.judge, doc, args.api_base)
        lms = lms_from_args(args, doc["lms"], doc.get("ensemble"))
        return load_judge(args.judge, lms=lms, knowledge=knowledge, train=train, doc=doc), lms, knowledge
    lms = lms_from_args(args)
    config = config_from_args(args, args.method)
    return build(args.method, BuildContext(dataset.scheme, lms, knowledge, train), **config), lms, knowledge
