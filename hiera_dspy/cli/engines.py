"""The engine flags of the judging CLIs (--engine and each engine's tuning options) and the `EngineOptions` they
give."""

from __future__ import annotations

import argparse

from hiera_dspy.engines import ENGINE_REGISTRY, EngineOptions


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the --engine option and each engine's tuning options to `parser`."""
    g = parser.add_argument_group("engine (how the pairs are sent; every engine writes the same run store)")
    g.add_argument("--engine", default="threads", choices=list(ENGINE_REGISTRY), help=ENGINE_REGISTRY.help())
    g.add_argument("--concurrency", type=int, default=64, help="async: judgments (= LM requests) in flight")
    g.add_argument("--rpm", type=float, help="async: at most this many LM requests per minute (evenly spaced)")
    g.add_argument("--tpm", type=float, help="async: at most this many tokens per minute (input estimate + max_tokens)")
    g.add_argument("--cooldown", type=float, default=10.0,
                   help="async: seconds every request waits after a 429 without Retry-After")
    g.add_argument("--poll-seconds", type=float, default=30.0, help="batch: seconds between status polls")
    g.add_argument("--ray-address", help="ray: join this cluster (default: start a local Ray instance)")
    g.add_argument("--ray-actors", type=int, default=2, help="ray: actors (program replicas)")


def options_from_args(args: argparse.Namespace) -> EngineOptions:
    """Build EngineOptions from parsed arguments (a comma-separated --api-base gives several bases)."""
    api_base = getattr(args, "api_base", None) or ""
    return EngineOptions(threads=getattr(args, "threads", 1) or 1, concurrency=args.concurrency, rpm=args.rpm,
                         tpm=args.tpm, cooldown=args.cooldown, poll_seconds=args.poll_seconds,
                         ray_address=args.ray_address, ray_actors=args.ray_actors,
                         api_bases=[b.strip() for b in api_base.split(",") if b.strip()])
