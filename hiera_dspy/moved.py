"""Modules that moved, importable under their earlier names for one release (0.2 drops them).

`MOVED` maps an earlier dotted name (a module or a package, and so everything under it) to where the module lives
now. Importing an earlier name gives the module itself, not a copy: `hiera_dspy.lm.memo is hiera_dspy.agents.memo`,
so a patch made through either name is seen by both. The finder is installed by `hiera_dspy/__init__.py`, which any
import of a `hiera_dspy.*` name runs first, and loads nothing until an earlier name is imported: a light module
stays light. docs/index.md ("Architecture") lists the moves and why.

    >>> import importlib
    >>> importlib.import_module("hiera_dspy.lm.gguf_meta").__name__
    'hiera_dspy.local.gguf_meta'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType

MOVED: dict[str, str] = {
    # the embedded model left the hosted-LM plumbing for a room of its own
    "hiera_dspy.lm.model_store": "hiera_dspy.local.model_store",
    "hiera_dspy.lm.local": "hiera_dspy.local.model",
    "hiera_dspy.lm.runtimes": "hiera_dspy.local.runtimes",
    "hiera_dspy.lm.gguf_meta": "hiera_dspy.local.gguf_meta",
    "hiera_dspy.lm.local_logprobs": "hiera_dspy.local.logprobs",
    "hiera_dspy.lm.prefix_reuse": "hiera_dspy.local.prefix_reuse",
    # method maths beside its methods; the analyses reused beside the agents that reuse them
    "hiera_dspy.lm.label_probs": "hiera_dspy.methods.label_probs",
    "hiera_dspy.lm.probe_seed": "hiera_dspy.methods.probe_seed",
    "hiera_dspy.lm.memo": "hiera_dspy.agents.memo",
    # redacting secrets is every part's concern (the store, the CLIs' output, the runner), not the LM plumbing's
    "hiera_dspy.lm.secrets": "hiera_dspy.secrets",
    # one name per concept: a person's review is `review`, the LLM labelling job stays `jobs.labelling`; a benchmark's
    # holes are `holes` wherever they are read, filled or concluded; the sample-size maths is not a second `plan`;
    # the analysis of a judge's mistakes is not the exception family `errors`
    "hiera_dspy.labelling.benchmark_holes": "hiera_dspy.benchmark.filled",
    "hiera_dspy.labelling.benchmark_conclusions": "hiera_dspy.benchmark.conclusions",
    "hiera_dspy.labelling.plan": "hiera_dspy.jobs.planning",
    "hiera_dspy.labelling": "hiera_dspy.review",
    # known judgments as a job's evidence beside the known judgments themselves: read and checked below the jobs
    "hiera_dspy.review.known_evidence": "hiera_dspy.data.known_evidence",
    "hiera_dspy.conclude.filled_benchmark": "hiera_dspy.conclude.holes",
    "hiera_dspy.conclude.plan": "hiera_dspy.conclude.sample_size",
    # what the run store notes of a labelling run's exports sits beside the store (the labelling walk stays low)
    "hiera_dspy.review.freshness": "hiera_dspy.store.freshness",
    # a judgment-list format is one module with its reader and its writer (`hiera_dspy.data.FORMATS`)
    "hiera_dspy.review.list_writers": "hiera_dspy.data.judgment_lists",
    # an LM call's sample of a vote is not the paper's sampling protocol (`data.sampling`)
    "hiera_dspy.lm.sampling": "hiera_dspy.lm.vote_samples",
    # how a number is printed is not an artifact's format (`artifacts.format`)
    "hiera_dspy.metrics.format": "hiera_dspy.metrics.numbers",
    # a retrieval benchmark with holes has one home: read, pooled, sampled, concluded and filled in `benchmark/`
    "hiera_dspy.data.trec_stream": "hiera_dspy.benchmark.runs",
    "hiera_dspy.review.holes": "hiera_dspy.benchmark.filled",
    "hiera_dspy.review.list_sources": "hiera_dspy.jobs.list_sources",
    "hiera_dspy.review.draws": "hiera_dspy.benchmark.draws",
    "hiera_dspy.review.sample": "hiera_dspy.benchmark.sample",
    "hiera_dspy.review.holes_conclusions": "hiera_dspy.benchmark.conclusions",
    "hiera_dspy.review.pair_conclusions": "hiera_dspy.benchmark.pair_conclusions",
    "eval.errors": "eval.mistakes",  # `python -m eval.errors` runs too (the loader hands runpy the code)
    "signatures.errors": "signatures.mistakes",
}


def current_name(name: str) -> str | None:
    """Where the module once named `name` lives now (the longest moved prefix decides), else None."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        if (new := MOVED.get(".".join(parts[:cut]))) is not None:
            return ".".join([new, *parts[cut:]])
    return None


class _EarlierNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an earlier name and loads it as the module under its current name."""

    def find_spec(self, fullname, path, target=None):
        if (new := current_name(fullname)) is None or (found := importlib.util.find_spec(new)) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=found.submodule_search_locations is not None)

    def create_module(self, spec):
        return None  # a placeholder; exec_module puts the real module in its place

    def exec_module(self, module: ModuleType) -> None:
        new = current_name(module.__name__)
        assert new is not None  # find_spec answered only for moved names
        # the import system reads sys.modules back after this call, so the earlier name binds the module itself
        sys.modules[module.__name__] = importlib.import_module(new)


    def get_code(self, fullname: str):
        """The current module's code: what `python -m EARLIER.NAME` runs."""
        new = current_name(fullname)
        assert new is not None
        found = importlib.util.find_spec(new)
        return found.loader.get_code(new)  # type: ignore[union-attr]


def install() -> None:
    """Put the finder on `sys.meta_path` (once)."""
    if not any(isinstance(f, _EarlierNames) for f in sys.meta_path):
        sys.meta_path.insert(0, _EarlierNames())  # before the path finder: an emptied folder is no namespace package
